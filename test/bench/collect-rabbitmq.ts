/**
 * RabbitMQ collection benchmark: a private RabbitMQ node (the machine's binaries, a node name,
 * ports and directory of its own) holding N durable queues (default 10 000), each bound to a topic
 * exchange, declared in one definitions import. The `rabbitmq` type collects it into the machine's
 * PostgreSQL through the worker, as `cinv serve` runs it, reading the queues and exchanges page by
 * page. Reports the time of a first collection and of an unchanged one, and this process's peak
 * resident memory over each (the whole answer is never held: one page of queues at a time).
 *
 *   npm run bench -- collect-rabbitmq [queues]
 */
import postgres from 'postgres';
import { CollectionWorker } from '../../src/collection/collectors/runs/worker.js';
import { connectServer } from '../../src/platform/db/database.js';
import { migrate } from '../../src/platform/db/migrate.js';
import { createKey, startTestApp } from '../support/app.js';
import { startPrivateRabbit } from '../support/private-rabbitmq.js';
import { memoryOf, resetPeakMemory, serverUrl, type Figure } from './common.js';

const DATABASE = 'cinv_bench_collect_rabbitmq';
const VHOST = 'bench';

export async function benchCollectRabbitmq(queues = 10_000): Promise<Figure[]> {
  const admin = postgres(serverUrl('postgres'), { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists "${DATABASE}" with (force)`);
  await admin.unsafe(`create database "${DATABASE}"`);
  await admin.end();
  const rabbit = await startPrivateRabbit({ adminPassword: 'bench-admin-password', clusterName: 'bench' });
  const raw = connectServer(serverUrl(DATABASE), { poolSize: 8, acquireTimeoutMs: 5000, statementTimeoutMs: 600_000 });
  await migrate(raw.sql);
  const probe = raw.connectOne();
  const app = await startTestApp({}, { raw, probe });
  try {
    const declared = performance.now();
    await rabbit.api('POST', '/api/definitions', definitions(queues), 600_000);
    console.log(`${queues} queues declared in ${((performance.now() - declared) / 1000).toFixed(1)} s`);
    const key = await createKey(app.sql, 'adm');
    const added = await app.request('POST', '/api/v1/sources', {
      key,
      body: {
        name: 'bench-rabbit',
        collector_type: 'rabbitmq',
        endpoint: rabbit.url,
        config: { server_name: 'bench' },
      },
    });
    if (added.status !== 201) throw new Error(`could not add the source: ${added.text}`);
    await app.request('PUT', `/api/v1/sources/${added.body.id}/credentials`, {
      key,
      body: { type: 'basic', ...rabbit.admin },
    });
    const figures: Figure[] = [];
    for (const label of ['first collection', 'unchanged re-collection']) {
      const triggered = await app.request('POST', `/api/v1/collectors/${added.body.collector_id}/trigger`, { key });
      const worker = new CollectionWorker(app.context, { concurrency: 1, leaseMs: 60_000, pollMs: 3_600_000 });
      resetPeakMemory(process.pid);
      const before = memoryOf(process.pid, 'VmRSS');
      const started = performance.now();
      await worker.tick();
      await worker.idle();
      const took = (performance.now() - started) / 1000;
      const peak = memoryOf(process.pid, 'VmHWM');
      await worker.stop();
      const run = (await app.get(`/api/v1/collection-runs/${triggered.body.run_id}`, key)).body as {
        status: string;
        error: string | null;
        counts: { received: number; changes: number };
      };
      if (run.status !== 'succeeded') throw new Error(`the ${label} ended ${run.status}: ${run.error}`);
      console.log(
        `${label}: ${run.counts.received} objects in ${took.toFixed(2)} s, ${run.counts.changes} changes, ` +
          `RSS ${before.toFixed(0)} MB before, peak ${peak.toFixed(0)} MB`,
      );
      figures.push(
        { bench: 'collect-rabbitmq', path: `${label}, ${queues} queues`, value: took, unit: 's' },
        { bench: 'collect-rabbitmq', path: `${label}: peak RSS`, value: peak, unit: 'MB' },
      );
    }
    return figures;
  } finally {
    await app.close();
    await probe.end();
    await raw.sql.end();
    await rabbit.server.destroy();
  }
}

/** A definitions document: one virtual host, a topic exchange and N durable queues, each bound to it. */
function definitions(queues: number) {
  const names = Array.from({ length: queues }, (_, i) => `bench.queue.${String(i).padStart(5, '0')}`);
  return {
    vhosts: [{ name: VHOST }],
    permissions: [{ user: 'cinv-admin', vhost: VHOST, configure: '.*', write: '.*', read: '.*' }],
    exchanges: [
      { name: 'bench', vhost: VHOST, type: 'topic', durable: true, auto_delete: false, internal: false, arguments: {} },
    ],
    queues: names.map((name) => ({ name, vhost: VHOST, durable: true, auto_delete: false, arguments: {} })),
    bindings: names.map((name) => ({
      source: 'bench',
      vhost: VHOST,
      destination: name,
      destination_type: 'queue',
      routing_key: `${name}.#`,
      arguments: {},
    })),
  };
}
