/**
 * Kubernetes collection benchmark: a fake API server (no real one runs here) holding a cluster of
 * N pods (default 10 000) with their nodes, namespaces, deployments, replica sets, services and
 * endpoint slices, collected by the `kubernetes` type into the machine's PostgreSQL through the
 * worker, as `cinv serve` runs it. Reports the full collection's time and the share of it a
 * reconcile was writing (the list's next pages are fetched, parsed and turned into records
 * meanwhile, so the rest is what fetching added), for a first collection and an unchanged one.
 *
 *   npm run bench -- collect-kubernetes [pods]
 */
import postgres from 'postgres';
import { CollectionWorker } from '../../src/collection/collectors/runs/worker.js';
import { connectServer } from '../../src/platform/db/database.js';
import { migrate } from '../../src/platform/db/migrate.js';
import { createKey, startTestApp } from '../support/app.js';
import { FakeKubeApiServer } from '../support/fake-kube-apiserver.js';
import { populateCluster } from '../support/kube-fixtures.js';
import { serverUrl, type Figure } from './common.js';

const DATABASE = 'cinv_bench_collect_kubernetes';
const TOKEN = 'bench-token';

export async function benchCollectKubernetes(pods = 10_000): Promise<Figure[]> {
  const admin = postgres(serverUrl('postgres'), { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists "${DATABASE}" with (force)`);
  await admin.unsafe(`create database "${DATABASE}"`);
  await admin.end();
  const fake = new FakeKubeApiServer(TOKEN);
  await fake.start();
  populateCluster(fake, pods);
  const raw = connectServer(serverUrl(DATABASE), { poolSize: 8, acquireTimeoutMs: 5000, statementTimeoutMs: 600_000 });
  await migrate(raw.sql);
  const probe = raw.connectOne();
  const app = await startTestApp({}, { raw, probe });
  try {
    const key = await createKey(app.sql, 'adm');
    const added = await app.request('POST', '/api/v1/sources', {
      key,
      body: {
        name: 'bench-cluster',
        collector_type: 'kubernetes',
        endpoint: fake.url,
        config: { cluster_name: 'bench' },
      },
    });
    if (added.status !== 201) throw new Error(`could not add the source: ${added.text}`);
    await app.request('PUT', `/api/v1/sources/${added.body.id}/credentials`, {
      key,
      body: { type: 'token', token: TOKEN },
    });
    const figures: Figure[] = [];
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
        counts: { received: number; reconcile_ms: number };
      };
      if (run.status !== 'succeeded') throw new Error(`the ${label} ended ${run.status}: ${run.error}`);
      const share = run.counts.reconcile_ms / 1000 / took;
      console.log(
        `${label}: ${run.counts.received} objects in ${took.toFixed(2)} s, reconcile ${(share * 100).toFixed(0)} %`,
      );
      figures.push(
        {
          bench: 'collect-kubernetes',
          path: `${label}, ${pods} pods (${run.counts.received} objects)`,
          value: took,
          unit: 's',
        },
        { bench: 'collect-kubernetes', path: `${label}: reconcile share of it`, value: share, unit: 'ratio' },
      );
    }
    return figures;
  } finally {
    await app.close();
    await probe.end();
    await raw.sql.end();
    await fake.stop();
  }
}
