/**
 * Reconcile benchmark: first load of N pod-like objects, an unchanged re-collection, and a
 * re-collection with 1 % of the objects changed.
 *
 *   CINV_BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/cinv_bench npm run bench -- reconcile [N]
 *
 * Without CINV_BENCH_DATABASE_URL it runs on an in-memory embedded database.
 */
import path from 'node:path';
import { tmpdir } from 'node:os';
import { mkdtempSync } from 'node:fs';
import { hostEmbedded } from '../../src/db/embedded.js';
import { connectServer, type RawDatabase } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import type { UniversalRecord } from '../../src/inventory/records.js';
import { reconcile } from '../../src/inventory/reconcile.js';
import { ensureSource } from '../../src/sources/store.js';
import { DEFAULT_TENANT_ID } from '../../src/tenants.js';

function pod(i: number, version: number, replicas: number): UniversalRecord {
  const name = `web-${i}`;
  const namespace = `ns-${i % 50}`;
  return {
    external_id: `pod/${namespace}/${name}`,
    ci_type: 'k8s.pod',
    name,
    namespace,
    raw_data: {
      metadata: {
        name,
        namespace,
        uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        resourceVersion: String(version),
        labels: { app: 'web', tier: 'frontend', 'pod-template-hash': '7d9f8b6c5' },
        annotations: { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9090' },
      },
      spec: {
        nodeName: `node-${i % 200}`,
        replicas,
        containers: [
          { name: 'app', image: 'registry.example/web:1.25.3', ports: [{ containerPort: 8080 }], resources: { requests: { cpu: '100m', memory: '128Mi' } } },
          { name: 'sidecar', image: 'registry.example/proxy:2.1', ports: [{ containerPort: 15001 }] },
        ],
      },
      status: {
        phase: 'Running',
        podIP: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
        conditions: [
          { type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-01-01T00:00:00Z' },
          { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-01-01T00:00:00Z' },
        ],
      },
    },
    type_data: { phase: 'Running', node: `node-${i % 200}`, restarts: 0 },
  };
}

async function open(): Promise<RawDatabase> {
  const url = process.env.CINV_BENCH_DATABASE_URL;
  if (url) return connectServer(url, { poolSize: 4, acquireTimeoutMs: 10_000, statementTimeoutMs: 600_000 });
  const dir = mkdtempSync(path.join(tmpdir(), 'cinv-bench-'));
  return hostEmbedded({ pgDataDir: undefined, socketPath: path.join(dir, '.s.PGSQL.5432') });
}

async function timed<T>(label: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await work();
  console.log(`${label.padEnd(34)} ${((performance.now() - started) / 1000).toFixed(2)} s  ${JSON.stringify(result)}`);
  return result;
}

export async function benchReconcile(count: number): Promise<void> {
  const db = await open();
  try {
    await migrate(db.sql);
    await db.sql.unsafe('truncate outbox, relationships, change_records, ci_last_seen, configuration_items restart identity cascade');
    const source = await ensureSource(db.sql, DEFAULT_TENANT_ID, 'bench', 'kubernetes');
    const input = (records: UniversalRecord[]) => ({ tenantId: DEFAULT_TENANT_ID, sourceId: source.id, scopeId: 'bench', mode: 'snapshot' as const, records });
    const batchSize = Number(process.env.CINV_RECONCILE_BATCH_SIZE ?? 1000);
    console.log(`reconcile benchmark: ${count} objects on ${db.kind}, batches of ${batchSize}`);
    const first = Array.from({ length: count }, (_, i) => pod(i, 1, 1));
    await timed('first load', () => reconcile(db.sql, input(first), { batchSize }));
    const same = Array.from({ length: count }, (_, i) => pod(i, 2, 1));
    await timed('unchanged re-collection', () => reconcile(db.sql, input(same), { batchSize }));
    const onePercent = Array.from({ length: count }, (_, i) => pod(i, 3, i % 100 === 0 ? 2 : 1));
    await timed('re-collection, 1 % changed', () => reconcile(db.sql, input(onePercent), { batchSize }));
  } finally {
    await db.close();
  }
}
