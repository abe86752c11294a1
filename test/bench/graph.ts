/**
 * Blast radius: the dependency graph around a CI and the change history around it, through
 * `cinv serve`, on the generated cluster with N pods (default 100 000) on 30 nodes, so that a node
 * carries thousands of pods, and with five million change records spread over the last 30 days
 * (kept in cinv_bench_graph between runs).
 *
 *   npm run bench -- graph [pods]
 *
 * Targets (p95 of sequential requests): `graph` depth 3 downstream from a node ≤ 100 ms at
 * max_nodes=500 and ≤ 1 s at 5 000; `changes?related_to=` a deployment, depth 2, over the last
 * hour ≤ 200 ms.
 */
import type { Sql } from '../../src/platform/db/database.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { benchDatabase, benchKey, serveBench, settlePartitions, type Figure, type RunningServer } from './common.js';
import { clusterShape, SERVE_ENV, seedClusters } from './list.js';

const RECORDS = 5_000_000;
const MARKER = `graph-history-v1:${RECORDS}`;
const DAY_S = 86_400;

/**
 * Five million UPDATED records of the cluster's CIs, every CI in turn, one every half second back
 * from now over 30 days. The search documents are left empty: nothing here searches, and the
 * server would otherwise spend its first minutes filling them while being measured.
 */
async function seedHistory(sql: Sql): Promise<void> {
  const [found] = await sql<
    { marker: string | null }[]
  >`select obj_description('change_records'::regclass, 'pg_class') as marker`;
  if (found?.marker === MARKER) return;
  console.log(`generating ${RECORDS} change records over 30 days (kept for later runs) ...`);
  const started = performance.now();
  await sql`create temporary table numbered as select row_number() over (order by ci_id) - 1 as k, * from configuration_items`;
  const [counted] = await sql<{ cis: string }[]>`select count(*)::text as cis from numbered`;
  const cis = counted!.cis;
  const chunk = 500_000;
  for (let from = 0; from < RECORDS; from += chunk) {
    await sql`
      insert into change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields, search_vector)
      select c.tenant_id, c.ci_id, c.source_id, c.scope_id, c.name, c.namespace, c.ci_type, 'UPDATED',
             now() - ((g.n::bigint * 30 * ${DAY_S}) / ${RECORDS}) * interval '1 second',
             jsonb_build_array(jsonb_build_object('field', 'raw_data.status.phase', 'old_value', 'Pending', 'new_value', 'Running')),
             array['raw_data.status.phase'], ''::tsvector
      from generate_series(${from}::int, ${Math.min(RECORDS, from + chunk) - 1}::int) g(n)
      join numbered c on c.k = g.n % ${Number(cis)}`;
    console.log(`  ${Math.min(RECORDS, from + chunk)} records, ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }
  await sql`drop table numbered`;
  await sql.unsafe('vacuum analyze change_records');
  await sql.unsafe(`comment on table change_records is '${MARKER}'`);
}

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;

export async function benchGraph(pods = 100_000): Promise<Figure[]> {
  const database = 'cinv_bench_graph';
  const sql = await benchDatabase(database);
  let server: RunningServer | undefined;
  const figures: Figure[] = [];
  try {
    await seedClusters(sql, { ...clusterShape(pods), nodes: 30 }, 1);
    await seedHistory(sql);
    await settlePartitions(sql);
    const id = async (externalId: string) =>
      (
        await sql<
          { ci_id: string }[]
        >`select ci_id from configuration_items where tenant_id = ${DEFAULT_TENANT_ID} and external_id = ${externalId}`
      )[0]!.ci_id;
    const node = await id('node/node-0');
    const [deployment] = await sql<
      { external_id: string }[]
    >`select external_id from configuration_items where ci_type = 'k8s.deployment' order by external_id limit 1`;
    const key = await benchKey(sql);
    server = await serveBench(database, SERVE_ENV);
    const base = server.base;
    const timed = async (label: string, path: string, runs: number, target: number, check: (body: any) => string) => {
      const ms: number[] = [];
      let said = '';
      for (let i = 0; i < runs + 2; i++) {
        const started = performance.now();
        const reply = await fetch(base + path, { headers: { 'x-api-key': key } });
        const body: any = await reply.json();
        if (reply.status !== 200) throw new Error(`${path}: ${reply.status} ${JSON.stringify(body)}`);
        // the first two warm the server's and the database's caches
        if (i >= 2) ms.push(performance.now() - started);
        said = check(body);
      }
      const p95 = percentile(ms, 95);
      console.log(
        `  ${label.padEnd(58)} p50 ${percentile(ms, 50).toFixed(0).padStart(5)} ms  p95 ${p95.toFixed(0).padStart(5)} ms  (target ${target}; ${said})`,
      );
      figures.push({ bench: 'graph', path: label, value: Math.round(p95), unit: 'ms p95', target });
    };
    const graphSaid = (body: { nodes: unknown[]; edges: unknown[]; truncated: boolean }) =>
      `${body.nodes.length} CIs, ${body.edges.length} edges, truncated ${body.truncated}`;
    await timed(
      'graph depth 3 downstream from a node, max_nodes=500',
      `/api/v1/configuration-items/${node}/graph?depth=3&direction=downstream&max_nodes=500`,
      20,
      100,
      graphSaid,
    );
    await timed(
      'graph depth 3 downstream from a node, max_nodes=5000',
      `/api/v1/configuration-items/${node}/graph?depth=3&direction=downstream&max_nodes=5000`,
      20,
      1000,
      graphSaid,
    );
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
    await timed(
      'changes related_to a deployment, depth 2, last hour',
      `/api/v1/changes?related_to=${await id(deployment!.external_id)}&depth=2&start_date=${encodeURIComponent(hourAgo)}&limit=100`,
      20,
      200,
      (body: { total: number }) => `${body.total} records`,
    );
    return figures;
  } finally {
    await server?.stop();
    await sql.end();
  }
}
