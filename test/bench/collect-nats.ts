/**
 * NATS collection benchmark: a private nats-server with JetStream holding N streams (default
 * 1 000), each with a durable consumer, collected by the `nats` type into the machine's PostgreSQL
 * through the worker, as `cinv serve` runs it. Reports the time of a first and of an unchanged
 * collection and the process's peak resident memory, to show the account's /jsz page is turned
 * into batches without being held twice.
 *
 *   npm run bench -- collect-nats [streams]
 */
import { AckPolicy, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import postgres from 'postgres';
import { CollectionWorker } from '../../src/collection/collectors/runs/worker.js';
import { connectServer } from '../../src/platform/db/database.js';
import { migrate } from '../../src/platform/db/migrate.js';
import { createKey, startTestApp } from '../support/app.js';
import { startPrivateNats } from '../support/private-nats.js';
import { serverUrl, type Figure } from './common.js';

const DATABASE = 'cinv_bench_collect_nats';
/** Streams created at once: the server's JetStream API takes them one by one anyway. */
const CONCURRENT = 16;

const peakRssMb = () => Math.round(process.resourceUsage().maxRSS / 1024);

async function populate(url: string, streams: number): Promise<void> {
  const nc = await connect({ servers: url });
  try {
    const jsm = await jetstreamManager(nc);
    for (let start = 0; start < streams; start += CONCURRENT) {
      await Promise.all(
        Array.from({ length: Math.min(CONCURRENT, streams - start) }, async (_, i) => {
          const name = `S${String(start + i).padStart(5, '0')}`;
          await jsm.streams.add({ name, subjects: [`bench.${name}.>`], max_age: 86_400e9 });
          await jsm.consumers.add(name, { durable_name: 'worker', ack_policy: AckPolicy.Explicit });
        }),
      );
    }
  } finally {
    await nc.close();
  }
}

export async function benchCollectNats(streams = 1000): Promise<Figure[]> {
  const admin = postgres(serverUrl('postgres'), { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists "${DATABASE}" with (force)`);
  await admin.unsafe(`create database "${DATABASE}"`);
  await admin.end();
  const nats = await startPrivateNats({ serverName: 'bench-nats' });
  const raw = connectServer(serverUrl(DATABASE), { poolSize: 8, acquireTimeoutMs: 5000, statementTimeoutMs: 600_000 });
  await migrate(raw.sql);
  const probe = raw.connectOne();
  const app = await startTestApp({}, { raw, probe });
  try {
    const filling = performance.now();
    await populate(nats.clientUrl, streams);
    console.log(
      `${streams} streams with a consumer each created in ${((performance.now() - filling) / 1000).toFixed(1)} s`,
    );
    const key = await createKey(app.sql, 'adm');
    const added = await app.request('POST', '/api/v1/sources', {
      key,
      body: { name: 'bench-nats', collector_type: 'nats', endpoint: nats.monitorUrl },
    });
    if (added.status !== 201) throw new Error(`could not add the source: ${added.text}`);
    const figures: Figure[] = [];
    const rssBefore = peakRssMb();
    for (const label of ['first collection', 'unchanged re-collection']) {
      const triggered = await app.request('POST', `/api/v1/collectors/${added.body.collector_id}/trigger`, { key });
      const worker = new CollectionWorker(app.context, { concurrency: 1, leaseMs: 60_000, pollMs: 3_600_000 });
      const started = performance.now();
      await worker.tick();
      await worker.idle();
      const took = (performance.now() - started) / 1000;
      await worker.stop();
      const run = (await app.get(`/api/v1/collection-runs/${triggered.body.run_id}`, key)).body as {
        status: string;
        error: string | null;
        counts: { received: number; changes: number };
      };
      if (run.status !== 'succeeded') throw new Error(`the ${label} ended ${run.status}: ${run.error}`);
      console.log(
        `${label}: ${run.counts.received} objects in ${took.toFixed(2)} s, ${run.counts.changes} changes, peak RSS ${peakRssMb()} MB`,
      );
      figures.push({
        bench: 'collect-nats',
        path: `${label}, ${streams} streams (${run.counts.received} objects)`,
        value: took,
        unit: 's',
      });
    }
    figures.push(
      { bench: 'collect-nats', path: 'peak RSS before collecting', value: rssBefore, unit: 'MB' },
      { bench: 'collect-nats', path: 'peak RSS after both collections', value: peakRssMb(), unit: 'MB' },
    );
    return figures;
  } finally {
    await app.close();
    await probe.end();
    await raw.sql.end();
    await nats.destroy();
  }
}
