/**
 * Reconcile benchmark on a generated cluster (default: 100 000 pods, 143 834 objects): the first
 * load into an empty source, a re-collection where nothing moved, one where only metrics and
 * heartbeats moved (every real collection), and one with 1 % of the objects changed. Each figure
 * is validation of the parsed document plus the reconcile, as `cinv ingest` and the ingest route
 * do it, in two lanes as on a PostgreSQL server (CINV_RECONCILE_LANES).
 *
 * The first load, the unchanged and the 1 % changed re-collections are also measured with identity
 * resolution on: the same reconcile, then the identity worker caught up with what it wrote
 * (`catchUpIdentities`, the work the worker does for that collection, its 1 000 nodes among it),
 * in turn with runs without (off, on, off, on: one run's time moves more from run to run than the
 * difference measured). Target: on / off ≤ 1.10, mean against mean.
 *
 *   npm run bench -- reconcile [pods]
 */
import { assertSnapshot, reconcile } from '../../src/inventory/write-path/reconcile.js';
import type { UniversalRecord } from '../../src/inventory/write-path/records.js';
import { catchUpIdentities } from '../../src/inventory/identities/worker.js';
import { ensureSource } from '../../src/collection/sources/store.js';
import type { Sql } from '../../src/platform/db/database.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { cluster, LARGE_CLUSTER, type ClusterShape, type Collection } from './cluster.js';
import { benchDatabase, seconds, type Figure } from './common.js';

const EMPTY =
  'truncate identities, identity_observations, identity_keys, identity_links, identity_conflicts, identity_decisions, identity_progress, ' +
  'outbox, relationships, relationship_history, pending_relationships, change_records, change_stats_queue, change_feed, ci_last_seen, ' +
  'configuration_items, ci_versions, ci_undo, ci_counts, ci_type_counts, ci_count_deltas restart identity cascade';

type Collected = { seconds: number; objects: number; result: Awaited<ReturnType<typeof reconcile>> };

/** One collection of the source, timed from the parsed document: validation and the reconcile. */
async function collect(sql: Sql, sourceId: string, shape: ClusterShape, at: Collection): Promise<Collected> {
  const document: unknown = { items: [...cluster(shape, at)] };
  const started = performance.now();
  assertSnapshot(document);
  const items = (document as { items: UniversalRecord[] }).items;
  // a PostgreSQL server's default: the source's two parts in parallel lanes
  const result = await reconcile(
    sql,
    { tenantId: DEFAULT_TENANT_ID, sourceId, scopeId: 'prod', mode: 'snapshot', records: items },
    { lanes: true },
  );
  return { seconds: seconds(started), objects: items.length, result };
}

/**
 * The same collection with identity resolution on: the worker caught up before (untimed, as the
 * running worker would be), then the collection and the worker's catching up with it, timed as one.
 */
type Resolved = Collected & { resolved: number; resolving: number };

async function withIdentities(sql: Sql, run: () => Promise<Collected>): Promise<Resolved> {
  await catchUpIdentities(sql, () => new Date());
  const collected = await run();
  const started = performance.now();
  const resolved = await catchUpIdentities(sql, () => new Date());
  const resolving = seconds(started);
  return { ...collected, seconds: Math.round((collected.seconds + resolving) * 100) / 100, resolved, resolving };
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

/** Identity off and on in turn, `pairs` times; the figure is mean on / mean off, with each pair's ratio. */
async function interleaved(
  label: string,
  pairs: number,
  off: (pair: number) => Promise<Collected>,
  on: (pair: number) => Promise<Resolved>,
): Promise<{ offs: Collected[]; figure: Figure }> {
  const offs: Collected[] = [];
  const ons: Resolved[] = [];
  for (let pair = 0; pair < pairs; pair++) {
    offs.push(await off(pair));
    ons.push(await on(pair));
    console.log(
      `  ${label}: identity off ${offs[pair]!.seconds} s, on ${ons[pair]!.seconds} s (the worker ${ons[pair]!.resolving} s of it, ${ons[pair]!.resolved} feed records read)`,
    );
  }
  const offSeconds = offs.map((r) => r.seconds);
  const onSeconds = ons.map((r) => r.seconds);
  const ratios = offSeconds.map((s, i) => onSeconds[i]! / s);
  const figure: Figure = {
    bench: 'reconcile',
    path:
      `${label}, identity on / off (${offSeconds.join(' s, ')} s → ${onSeconds.join(' s, ')} s, interleaved; ` +
      `pairs ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
    value: Math.round((100 * mean(onSeconds)) / mean(offSeconds)) / 100,
    unit: 'ratio',
    target: 1.1,
  };
  return { offs, figure };
}

/** The first load into an empty database, off and on in turn twice; leaves the last (on) load in place. */
async function firstLoads(
  sql: Sql,
  shape: ClusterShape,
  figures: Figure[],
): Promise<{ sourceId: string; count: number }> {
  let sourceId = '';
  const empty = async () => {
    await sql.unsafe(EMPTY);
    sourceId = (await ensureSource(sql, DEFAULT_TENANT_ID, 'bench-cluster', 'kubernetes')).id;
  };
  const load = () => collect(sql, sourceId, shape, { collection: 0, generation: 0 });
  const { offs, figure } = await interleaved(
    'first load',
    2,
    async () => {
      await empty();
      return load();
    },
    async () => {
      // the worker started on the empty database: it has backfilled nothing and follows the feed
      await empty();
      return withIdentities(sql, load);
    },
  );
  const count = offs[0]!.objects;
  figures.push({
    bench: 'reconcile',
    path: `first load, ${count} objects (mean of ${offs.map((r) => r.seconds).join(' s, ')} s)`,
    value: Math.round(mean(offs.map((r) => r.seconds)) * 100) / 100,
    unit: 's',
    target: count >= 140_000 ? 20 : undefined,
  });
  figures.push(figure);
  return { sourceId, count };
}

export async function benchReconcile(pods = LARGE_CLUSTER.pods): Promise<Figure[]> {
  const shape = {
    ...LARGE_CLUSTER,
    pods,
    deployments: Math.max(1, Math.round((LARGE_CLUSTER.deployments * pods) / LARGE_CLUSTER.pods)),
  };
  const sql = await benchDatabase('cinv_bench_reconcile');
  const figures: Figure[] = [];
  try {
    const { sourceId, count } = await firstLoads(sql, shape, figures);
    const run = (at: Collection) => collect(sql, sourceId, shape, at);
    // re-collections come minutes after a first load, when autovacuum has visited the new rows
    // (the identity lookups are index-only from then on); this stands in for it instead of waiting
    await sql`vacuum analyze configuration_items`;
    await sql`vacuum analyze identities, identity_observations, identity_keys, identity_links`;
    const unchanged = await interleaved(
      'unchanged re-collection',
      3,
      () => run({ collection: 0, generation: 0 }),
      () => withIdentities(sql, () => run({ collection: 0, generation: 0 })),
    );
    figures.push({
      bench: 'reconcile',
      path: 'unchanged re-collection',
      value: Math.round(mean(unchanged.offs.map((r) => r.seconds)) * 100) / 100,
      unit: 's',
      target: count >= 140_000 ? 2.0 : undefined,
    });
    figures.push(unchanged.figure);
    const metrics = await run({ collection: 1, generation: 0 });
    const written = metrics.result.updated + metrics.result.changes;
    figures.push({
      bench: 'reconcile',
      path: `metrics only (${written} rows rewritten, ${metrics.result.changes} changes)`,
      value: metrics.seconds,
      unit: 's',
      target: Math.round(mean(unchanged.offs.map((r) => r.seconds)) * 1.3 * 100) / 100,
    });
    // each run moves the same 1 % (every hundredth object, ten nodes among them) to a generation of its own
    const changed = await interleaved(
      '1 % changed',
      3,
      (pair) => run({ collection: 1, generation: 1 + 2 * pair, changeEvery: 100 }),
      (pair) => withIdentities(sql, () => run({ collection: 1, generation: 2 + 2 * pair, changeEvery: 100 })),
    );
    figures.push({
      bench: 'reconcile',
      path: `1 % changed (${changed.offs[0]!.result.updated} updated)`,
      value: Math.round(mean(changed.offs.map((r) => r.seconds)) * 100) / 100,
      unit: 's',
      target: count >= 140_000 ? 3.0 : undefined,
    });
    figures.push(changed.figure);
    const both = await run({ collection: 2, generation: 7, changeEvery: 100 });
    figures.push({
      bench: 'reconcile',
      path: `1 % changed, metrics moved (${both.result.updated} updated)`,
      value: both.seconds,
      unit: 's',
    });
    return figures;
  } finally {
    await sql.end();
  }
}
