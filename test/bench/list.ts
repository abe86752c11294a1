/**
 * List benchmark: the configuration-item list and detail routes of `cinv serve` under load, beside
 * a bare node:http + postgres.js server (bare-server.ts) answering the same pages with the least SQL.
 * The inventory is seven generated clusters (7 × 143 834 = 1 006 838 CIs by default), one source
 * each, kept in cinv_bench_list between runs. autocannon drives each path with 16 connections.
 *
 *   npm run bench -- list [pods per cluster]
 *
 * Targets: cinv at least 0.6 of the bare server's throughput on every path (what authentication,
 * validation, admission control, totals and presentation may cost), and a p99 of 60 ms on the
 * pages (default and filtered; 150 ms on a raw_data filter) at 16 connections.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import autocannon from 'autocannon';
import type { Sql } from '../../src/platform/db/database.js';
import { foldCiCounts } from '../../src/inventory/configuration-items/counts.js';
import { reconcile } from '../../src/inventory/write-path/reconcile.js';
import { refreshStatsAggregate } from '../../src/history/records/stats-store.js';
import { ensureSource } from '../../src/collection/sources/store.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { ROOT } from '../support/cli.js';
import { cluster, LARGE_CLUSTER, type ClusterShape } from './cluster.js';
import {
  benchDatabase,
  benchKey,
  serveBench,
  serverUrl,
  settlePartitions,
  type Figure,
  type RunningServer,
} from './common.js';

const GENERATOR = 'clusters-v1';
/**
 * `cinv serve` is known to be up by its "cinv listening" line, which is logged at info; it logs no
 * line per request at that level.
 */
/**
 * The server as the throughput benchmarks run it: they measure how fast answers come, so the load
 * shedding that protects latency under overload (measured by `soak` and `overload`) is off; on a
 * busy machine it would answer part of a closed loop 503.
 */
export const SERVE_ENV = { LOG_LEVEL: 'info', CINV_SHED_EVENT_LOOP_DELAY: 'off', CINV_SHED_DB_WAIT: 'off' };

/** The generated cluster scaled to `pods`, as the reconcile benchmark scales it. */
export function clusterShape(pods: number): ClusterShape {
  return {
    ...LARGE_CLUSTER,
    pods,
    deployments: Math.max(1, Math.round((LARGE_CLUSTER.deployments * pods) / LARGE_CLUSTER.pods)),
  };
}

/** The marker a seeded inventory carries, so that a later run finds it and does not seed again. */
async function markerOf(sql: Sql): Promise<string | null> {
  const [row] = await sql<
    { marker: string | null }[]
  >`select obj_description('configuration_items'::regclass, 'pg_class') as marker`;
  return row?.marker ?? null;
}

/**
 * `clusters` copies of the generated cluster, each the first collection of its own source (the
 * same external ids in each), as a collector's snapshots would arrive; then the statistics and
 * counts brought up to date and the tables analysed, so that the server starts on a settled
 * database. Skipped when the database already holds exactly this.
 */
export async function seedClusters(
  sql: Sql,
  shape: ClusterShape,
  clusters: number,
  options: { batchSize?: number } = {},
): Promise<void> {
  const marker = `${GENERATOR}:${clusters}x${shape.pods}x${shape.nodes}`;
  const found = await markerOf(sql);
  if (found === marker) return;
  console.log(`seeding ${clusters} cluster(s) of ${shape.pods} pods (kept for later runs) ...`);
  const started = performance.now();
  // an interrupted seeding is completed, not started over: a cluster already in is an unchanged
  // re-collection, which costs seconds
  const partial = `${marker}:partial`;
  if (found !== partial) {
    await sql.unsafe(
      'truncate outbox, relationships, pending_relationships, change_records, change_stats_queue, change_stats_buckets, change_stats_days, change_stats_ci_last, ' +
        'change_stats_affected, ci_last_seen, configuration_items, ci_counts, ci_type_counts, ci_count_deltas restart identity cascade',
    );
    await sql`update change_stats_state set refreshed_at = '-infinity'`;
    await sql.unsafe(`comment on table configuration_items is '${partial}'`);
  }
  for (let k = 0; k < clusters; k++) {
    const source = await ensureSource(sql, DEFAULT_TENANT_ID, `bench-cluster-${k}`, 'kubernetes');
    const records = [...cluster(shape, { collection: 0, generation: 0 })];
    const result = await reconcile(
      sql,
      { tenantId: DEFAULT_TENANT_ID, sourceId: source.id, scopeId: `cluster-${k}`, mode: 'snapshot', records },
      // a one-time seed in few, large transactions; the seeded rows do not depend on the batch size
      { batchSize: options.batchSize ?? 5000 },
    );
    console.log(
      `  cluster ${k + 1}/${clusters}: ${result.created} CIs, ${result.relationships.written} relationships, ${((performance.now() - started) / 1000).toFixed(0)} s`,
    );
  }
  // the collections' change records went to the default partition: the server would otherwise
  // start by moving them under its statement timeout
  await settlePartitions(sql);
  await refreshStatsAggregate(sql, new Date(), 50_000);
  await foldCiCounts(sql);
  await sql.unsafe('vacuum analyze');
  await sql.unsafe(`comment on table configuration_items is '${marker}'`);
  console.log(`  seeded in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

export interface Load {
  connections: number;
  seconds: number;
  warmupSeconds: number;
}

export interface Measured {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
}

/**
 * Drives `pathOf(0)`, `pathOf(1)`, ... at `base` with a closed loop of `connections` (a warm-up
 * first, not counted). Every answer must be a 2xx.
 */
export async function drive(
  base: string,
  headers: Record<string, string>,
  pathOf: (i: number) => string,
  load: Load,
): Promise<Measured> {
  // one sequence through warm-up and measurement: the measured requests are not the warm-up's again
  let i = 0;
  const run = (seconds: number) =>
    new Promise<autocannon.Result>((resolve, reject) => {
      autocannon(
        {
          url: base,
          connections: load.connections,
          duration: seconds,
          headers,
          requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, path: pathOf(i++) }) }],
        },
        (error, result) => (error ? reject(error) : resolve(result)),
      );
    });
  await run(load.warmupSeconds);
  const result = await run(load.seconds);
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(
      `${base}${pathOf(0)}: ${result.non2xx} non-2xx answers, ${result.errors} errors (${JSON.stringify(result.statusCodeStats)})`,
    );
  }
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
  };
}

/** bare-server.ts as its own process, like `cinv serve`. */
export function serveBare(database: string): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test/bench/bare-server.ts')], {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: serverUrl(database), NODE_ENV: 'production' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk;
      const match = /listening (\d+)/.exec(output);
      if (match) {
        resolve({
          base: `http://127.0.0.1:${match[1]}`,
          pid: child.pid!,
          stop: () =>
            new Promise<void>((done) => {
              child.removeAllListeners('exit');
              child.once('exit', () => done());
              child.kill('SIGTERM');
            }),
        });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`bare server exited with ${code}:\n${output}`)));
  });
}

/** One path of the mix: a label and the request path of the i-th request. */
export interface ListPath {
  label: string;
  pathOf: (i: number) => string;
  /** A page (p99 target) rather than one CI. */
  page: boolean;
}

const CIS = '/api/v1/configuration-items';

/**
 * The mix: the default page, two filters, a raw_data filter and a detail, the filters walking
 * through their values (and the details through `detailIds`) so that no two neighbouring
 * requests ask the same.
 */
export function listPaths(shape: ClusterShape, detailIds: readonly string[]): ListPath[] {
  return [
    { label: 'default page', pathOf: () => CIS, page: true },
    {
      label: 'ci_type + namespace',
      pathOf: (i) => `${CIS}?filter=ci_type:eq:k8s.pod&filter=namespace:eq:team-${(i * 7) % shape.namespaces}`,
      page: true,
    },
    {
      label: 'raw_data.spec.nodeName',
      pathOf: (i) => `${CIS}?filter=raw_data.spec.nodeName:eq:node-${(i * 13) % shape.nodes}`,
      page: true,
    },
    { label: 'detail', pathOf: (i) => `${CIS}/${detailIds[i % detailIds.length]}`, page: false },
  ];
}

/** Pods picked across the cluster: the same external ids (hence objects) in every database. */
export async function detailIdsOf(sql: Sql): Promise<string[]> {
  const rows = await sql<{ ci_id: string }[]>`
    select ci_id from configuration_items
    where ci_type = 'k8s.pod' and status = 'active' and hashtext(external_id) & 255 = 0
    order by hashtext(external_id), source_id
    limit 1000`;
  if (rows.length === 0) throw new Error('no pods to ask for');
  return rows.map((r) => r.ci_id);
}

/** The ids of the items of one page, or of the one CI: what must agree between two servers. */
export async function answerOf(base: string, headers: Record<string, string>, requestPath: string): Promise<string[]> {
  const response = await fetch(base + requestPath, { headers });
  if (!response.ok) throw new Error(`${base}${requestPath}: ${response.status} ${await response.text()}`);
  const body = (await response.json()) as { items?: { ci_id: string }[]; ci_id?: string };
  return body.items ? body.items.map((item) => item.ci_id) : [body.ci_id!];
}

/** Median milliseconds of `times` sequential requests for one path. */
async function medianMs(
  base: string,
  headers: Record<string, string>,
  requestPath: string,
  times = 7,
): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = performance.now();
    await answerOf(base, headers, requestPath);
    samples.push(performance.now() - started);
  }
  return samples.sort((a, b) => a - b)[Math.floor(times / 2)]!;
}

/**
 * One page half-way through the inventory, reached by `offset` (which reads and drops every row
 * before it) and by the cursor of the page before it (which starts at its position): the same
 * 50 CIs, at a cost that grows with the depth against one that does not.
 */
async function deepPages(base: string, headers: Record<string, string>, depth: number): Promise<Figure[]> {
  const before = await fetch(`${base}${CIS}?offset=${depth - 50}&limit=50`, { headers });
  const cursor = ((await before.json()) as { next_cursor: string }).next_cursor;
  const byOffset = `${CIS}?offset=${depth}&limit=50`;
  const byCursor = `${CIS}?cursor=${encodeURIComponent(cursor)}&limit=50`;
  const [a, b] = await Promise.all([answerOf(base, headers, byOffset), answerOf(base, headers, byCursor)]);
  if (a.join() !== b.join()) throw new Error(`page at ${depth}: offset and cursor answer different CIs`);
  const offsetMs = await medianMs(base, headers, byOffset);
  const cursorMs = await medianMs(base, headers, byCursor);
  console.log(
    `  page at row ${depth}: by offset ${offsetMs.toFixed(1)} ms, by cursor ${cursorMs.toFixed(1)} ms (medians of 7)`,
  );
  return [
    { bench: 'list', path: `page at row ${depth}: by offset`, value: offsetMs, unit: 'ms' },
    { bench: 'list', path: `page at row ${depth}: by cursor`, value: cursorMs, unit: 'ms' },
  ];
}

export async function benchList(pods = LARGE_CLUSTER.pods, clusters = 7): Promise<Figure[]> {
  const shape = clusterShape(pods);
  const database = 'cinv_bench_list';
  const sql = await benchDatabase(database);
  const figures: Figure[] = [];
  let cinv: RunningServer | undefined;
  let bare: RunningServer | undefined;
  try {
    await seedClusters(sql, shape, clusters);
    const [{ cis }] = await sql<[{ cis: number }]>`select count(*)::int as cis from configuration_items`;
    const key = await benchKey(sql);
    const paths = listPaths(shape, await detailIdsOf(sql));
    cinv = await serveBench(database, SERVE_ENV);
    bare = await serveBare(database);
    const auth = { 'x-api-key': key };
    const load: Load = { connections: 16, seconds: 10, warmupSeconds: 2 };
    console.log(
      `${cis} CIs; ${load.connections} connections, ${load.seconds} s per path after ${load.warmupSeconds} s of warm-up`,
    );
    for (const p of paths) {
      for (const i of [0, 1, 2]) {
        const [ours, floor] = await Promise.all([
          answerOf(cinv.base, auth, p.pathOf(i)),
          answerOf(bare.base, {}, p.pathOf(i)),
        ]);
        if (ours.join() !== floor.join())
          throw new Error(`${p.pathOf(i)}: cinv and the bare server answer different CIs`);
      }
      const ours = await drive(cinv.base, auth, p.pathOf, load);
      const floor = await drive(bare.base, {}, p.pathOf, load);
      console.log(
        `  ${p.label.padEnd(24)} cinv ${ours.rps.toFixed(0).padStart(5)} req/s p50 ${ours.p50} ms p99 ${ours.p99} ms | ` +
          `bare ${floor.rps.toFixed(0).padStart(5)} req/s p50 ${floor.p50} ms p99 ${floor.p99} ms`,
      );
      const full = cis >= 1_000_000;
      figures.push(
        { bench: 'list', path: `${p.label}: cinv`, value: ours.rps, unit: 'req/s' },
        { bench: 'list', path: `${p.label}: bare`, value: floor.rps, unit: 'req/s' },
        {
          bench: 'list',
          path: `${p.label}: cinv ÷ bare`,
          value: ours.rps / floor.rps,
          unit: 'ratio',
          target: 0.6,
          atLeast: true,
        },
        {
          bench: 'list',
          path: `${p.label}: cinv p99`,
          value: ours.p99,
          unit: 'ms',
          target: p.page && full ? (p.label.startsWith('raw_data') ? 150 : 60) : undefined,
        },
      );
    }
    figures.push(...(await deepPages(cinv.base, auth, Math.floor(cis / 2))));
    return figures;
  } finally {
    await Promise.all([cinv?.stop(), bare?.stop()]);
    await sql.end();
  }
}
