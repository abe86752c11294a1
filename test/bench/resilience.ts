/**
 * Resilience benchmarks against a real `cinv serve` process and a private PostgreSQL cluster:
 *
 *   npm run bench -- outage [SECONDS]    50 req/s of mixed reads and ingests; PostgreSQL is stopped
 *                                        for SECONDS (20) and started again. Reports how requests
 *                                        were answered before, during and after, and how long
 *                                        cinv took to serve again.
 *   npm run bench -- overload [RATE]     RATE req/s (300) of mixed reads, exports and ingests for
 *                                        60 s against CINV_MAX_IN_FLIGHT=64: answer times of
 *                                        admitted and shed requests, and /health meanwhile.
 */
import { issueApiKey } from '../../src/platform/auth/api-keys.js';
import { connectServer } from '../../src/platform/db/database.js';
import { migrate } from '../../src/platform/db/migrate.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { startServer, stopServer } from '../support/cli.js';
import { buildPod, ingest } from '../support/factories.js';
import { createPrivateCluster } from '../support/private-cluster.js';
import { openLoop, summarize, type Shot } from './open-loop.js';

const SECRET = 'bench-secret-bench-secret-bench-secret-01';

async function prepare(url: string): Promise<string> {
  const db = connectServer(url, { poolSize: 2, acquireTimeoutMs: 5000, statementTimeoutMs: 60_000 });
  await migrate(db.sql);
  await ingest(
    db.sql,
    Array.from({ length: 2000 }, (_, i) => buildPod({ name: `bench-${i}` })),
    { scopeId: 'c1', batchSize: 500 },
  );
  const { key } = await issueApiKey(db.sql, SECRET, { tenantId: DEFAULT_TENANT_ID, name: 'bench', tier: 'adm' });
  await db.close();
  return key;
}

const mixed = (i: number): Shot => {
  if (i % 10 === 9) {
    return {
      kind: 'ingest',
      method: 'POST',
      path: '/api/v1/sources/1/ingest',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ scope_id: 'c1', items: [buildPod({ name: `live-${i % 500}` })] }),
    };
  }
  const reads = [
    '/api/v1/configuration-items',
    '/api/v1/changes?limit=50',
    '/api/v1/configuration-items?filter=name:startswith:bench-1&limit=20',
  ];
  return { kind: 'read', method: 'GET', path: reads[i % reads.length]! };
};

export async function benchOutage(seconds: number): Promise<void> {
  const cluster = await createPrivateCluster();
  try {
    const key = await prepare(cluster.url);
    const server = await startServer({
      DATABASE_URL: cluster.url,
      CINV_SECRET: SECRET,
      LOG_LEVEL: 'info',
      CINV_SWEEP_SCHEDULE: '0 0 1 1 *',
    });
    const base = `http://127.0.0.1:${server.port}`;
    const load = openLoop(base, { rate: 50, headers: { 'x-api-key': key }, pick: mixed });
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const down = performance.now();
    await cluster.stop();
    const health: number[] = [];
    const healthTimer = setInterval(() => {
      fetch(`${base}/health`).then(
        (r) => health.push(r.status),
        () => health.push(0),
      );
    }, 1000);
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    await cluster.start();
    const up = performance.now();
    let recoveredAfter = NaN;
    for (let waited = 0; waited < 30_000; waited += 100) {
      const response = await fetch(`${base}/api/v1/configuration-items?limit=1`, { headers: { 'x-api-key': key } });
      if (response.ok) {
        recoveredAfter = performance.now() - up;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await new Promise((resolve) => setTimeout(resolve, 5000));
    clearInterval(healthTimer);
    await load.stop();
    const startedAt = load.started;
    const before = load.samples.filter((s) => s.at < 5000);
    const during = load.samples.filter((s) => s.at >= down - startedAt && s.at < up - startedAt);
    const after = load.samples.filter((s) => s.at >= up - startedAt + recoveredAfter);
    console.log(
      `outage benchmark: 50 req/s (reads and ingests) against cinv serve; PostgreSQL stopped for ${seconds} s`,
    );
    summarize('before the outage', before);
    summarize('during the outage', during);
    summarize('after recovery', after);
    console.log(`/health during the outage: ${JSON.stringify(health)}`);
    console.log(`first successful request ${recoveredAfter.toFixed(0)} ms after PostgreSQL accepted connections again`);
    const unhandled = server
      .output()
      .split('\n')
      .filter((line) => line.includes('unhandled'));
    console.log(`log lines saying "unhandled": ${unhandled.length}`);
    await stopServer(server.child);
  } finally {
    await cluster.destroy();
  }
}

export async function benchOverload(rate: number): Promise<void> {
  const cluster = await createPrivateCluster();
  try {
    const key = await prepare(cluster.url);
    const server = await startServer({
      DATABASE_URL: cluster.url,
      CINV_SECRET: SECRET,
      LOG_LEVEL: 'info',
      CINV_SWEEP_SCHEDULE: '0 0 1 1 *',
    });
    const base = `http://127.0.0.1:${server.port}`;
    const heavy = (i: number): Shot =>
      i % 25 === 0
        ? { kind: 'export', method: 'GET', path: '/api/v1/changes?limit=1000', headers: { accept: 'text/csv' } }
        : i % 7 === 0
          ? {
              kind: 'filtered',
              method: 'GET',
              path: `/api/v1/configuration-items?filter=raw_data.spec.replicas:gte:1&filter=name:ilike:${i % 10}&sort_by=name`,
            }
          : mixed(i);
    const load = openLoop(base, { rate, headers: { 'x-api-key': key }, pick: heavy });
    const health: { status: number; ms: number }[] = [];
    let peak = 0;
    const watch = setInterval(() => {
      peak = Math.max(peak, load.inFlight());
      const sent = performance.now();
      fetch(`${base}/health`).then(
        (r) => health.push({ status: r.status, ms: performance.now() - sent }),
        () => health.push({ status: 0, ms: performance.now() - sent }),
      );
    }, 500);
    await new Promise((resolve) => setTimeout(resolve, 60_000));
    clearInterval(watch);
    await load.stop();
    console.log(
      `overload benchmark: ${rate} req/s for 60 s (reads, filtered reads, CSV exports, ingests), CINV_MAX_IN_FLIGHT=64`,
    );
    summarize(
      'admitted (not 503)',
      load.samples.filter((s) => s.status !== 503),
    );
    for (const kind of ['read', 'filtered', 'export', 'ingest']) {
      summarize(
        `  ${kind}`,
        load.samples.filter((s) => s.status !== 503 && s.kind === kind),
      );
    }
    summarize(
      'shed or refused (503)',
      load.samples.filter((s) => s.status === 503),
    );
    console.log(`client-side peak of open requests: ${peak}`);
    summarize('/health meanwhile', health);
    await stopServer(server.child);
  } finally {
    await cluster.destroy();
  }
}
