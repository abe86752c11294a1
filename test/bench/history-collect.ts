/**
 * One side of the classification comparison of `npm run bench -- history`: the reconcile
 * benchmark's cluster collected by the write path of the tree at argv[2] (this checkout, or a
 * worktree of the commit before classification), into a database of its own (argv[3]). It collects
 * the cluster once, then for each generation read from stdin re-collects it with 1 % changed and
 * prints the seconds taken, as JSON on one line.
 */
import path from 'node:path';
import { createInterface } from 'node:readline';
import postgres from 'postgres';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { cluster, LARGE_CLUSTER, type Collection } from './cluster.js';
import { serverUrl } from './common.js';

const [root, database] = process.argv.slice(2) as [string, string];
const from = (file: string) => import(path.join(root, file));
const { migrate } = await from('src/platform/db/migrate.ts');
const { reconcile, assertSnapshot } = await from('src/inventory/write-path/reconcile.ts');
const { ensureSource } = await from('src/collection/sources/store.ts');

const admin = postgres(serverUrl('postgres'), { max: 1, onnotice: () => {} });
await admin.unsafe(`drop database if exists "${database}"`);
await admin.unsafe(`create database "${database}"`);
await admin.end();
const sql = postgres(serverUrl(database), { max: 4, onnotice: () => {} });
await migrate(sql);
const sourceId = (await ensureSource(sql, DEFAULT_TENANT_ID, 'bench-cluster', 'kubernetes')).id;

async function collect(at: Collection): Promise<{ seconds: number; updated: number }> {
  const document: unknown = { items: [...cluster(LARGE_CLUSTER, at)] };
  assertSnapshot(document);
  const records = (document as { items: unknown[] }).items;
  const started = performance.now();
  const result = await reconcile(
    sql,
    { tenantId: DEFAULT_TENANT_ID, sourceId, scopeId: 'prod', mode: 'snapshot', records },
    { lanes: true },
  );
  return { seconds: (performance.now() - started) / 1000, updated: result.updated };
}

await collect({ collection: 0, generation: 0 });
await sql`vacuum analyze configuration_items`;
console.log(JSON.stringify({ ready: true }));
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === '') continue;
  const generation = Number(line);
  console.log(JSON.stringify(await collect({ collection: 1, generation, changeEvery: 100 })));
}
await sql.end();
