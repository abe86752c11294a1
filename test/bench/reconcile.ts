/**
 * Reconcile benchmark on a generated cluster (default: 100 000 pods, 143 834 objects): the first
 * load into an empty source, a re-collection where nothing moved, one where only metrics and
 * heartbeats moved (every real collection), and one with 1 % of the objects changed. Each figure
 * is validation of the parsed document plus the reconcile, as `cinv ingest` and the ingest route
 * do it, in two lanes as on a PostgreSQL server (CINV_RECONCILE_LANES).
 *
 *   npm run bench -- reconcile [pods]
 */
import { assertSnapshot, reconcile } from '../../src/inventory/write-path/reconcile.js';
import type { UniversalRecord } from '../../src/inventory/write-path/records.js';
import { ensureSource } from '../../src/collection/sources/store.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { cluster, LARGE_CLUSTER, type Collection } from './cluster.js';
import { benchDatabase, seconds, type Figure } from './common.js';

export async function benchReconcile(pods = LARGE_CLUSTER.pods): Promise<Figure[]> {
  const shape = {
    ...LARGE_CLUSTER,
    pods,
    deployments: Math.max(1, Math.round((LARGE_CLUSTER.deployments * pods) / LARGE_CLUSTER.pods)),
  };
  const sql = await benchDatabase('cinv_bench_reconcile');
  const figures: Figure[] = [];
  try {
    await sql.unsafe(
      'truncate outbox, relationships, relationship_history, pending_relationships, change_records, change_stats_queue, change_feed, ci_last_seen, configuration_items, ci_versions, ci_undo, ci_counts, ci_type_counts, ci_count_deltas restart identity cascade',
    );
    const source = await ensureSource(sql, DEFAULT_TENANT_ID, 'bench-cluster', 'kubernetes');
    const run = async (at: Collection) => {
      const document: unknown = { items: [...cluster(shape, at)] };
      const started = performance.now();
      assertSnapshot(document);
      const items = (document as { items: UniversalRecord[] }).items;
      // a PostgreSQL server's default: the source's two parts in parallel lanes
      const result = await reconcile(
        sql,
        { tenantId: DEFAULT_TENANT_ID, sourceId: source.id, scopeId: 'prod', mode: 'snapshot', records: items },
        { lanes: true },
      );
      return { seconds: seconds(started), objects: items.length, result };
    };
    const first = await run({ collection: 0, generation: 0 });
    const count = first.objects;
    figures.push({
      bench: 'reconcile',
      path: `first load, ${count} objects`,
      value: first.seconds,
      unit: 's',
      target: count >= 140_000 ? 20 : undefined,
    });
    // re-collections come minutes after a first load, when autovacuum has visited the new rows
    // (the identity lookups are index-only from then on); this stands in for it instead of waiting
    await sql`vacuum analyze configuration_items`;
    const unchanged = await run({ collection: 0, generation: 0 });
    figures.push({
      bench: 'reconcile',
      path: 'unchanged re-collection',
      value: unchanged.seconds,
      unit: 's',
      target: count >= 140_000 ? 2.0 : undefined,
    });
    const metrics = await run({ collection: 1, generation: 0 });
    const written = metrics.result.updated + metrics.result.changes;
    figures.push({
      bench: 'reconcile',
      path: `metrics only (${written} rows rewritten, ${metrics.result.changes} changes)`,
      value: metrics.seconds,
      unit: 's',
      target: Math.round(unchanged.seconds * 1.3 * 100) / 100,
    });
    const changed = await run({ collection: 1, generation: 1, changeEvery: 100 });
    figures.push({
      bench: 'reconcile',
      path: `1 % changed (${changed.result.updated} updated)`,
      value: changed.seconds,
      unit: 's',
      target: count >= 140_000 ? 3.0 : undefined,
    });
    const both = await run({ collection: 2, generation: 2, changeEvery: 100 });
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
