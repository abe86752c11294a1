import type { Sql } from 'postgres';
import type { Principal } from '../auth/principal.js';
import { and, columnsOf, visibleTo, type Fragment } from '../auth/scope.js';
import { STATS_TYPE, type ChangeStats, type StatsGrouping } from './backend.js';

// Any constant works as long as every cinv process uses the same one.
const REFRESH_LOCK = 0x63696e78;

/**
 * Folds one batch of queued change records into the pre-aggregate, in one statement: the hourly
 * counts per tenant, source, instance, change type and CI type, each CI's latest hour with a
 * change, and per hour the number of CIs whose latest change falls in it. Returns how many queue
 * entries it consumed (0 when the queue is empty).
 */
async function refreshBatch(sql: Sql, batchSize: number): Promise<{ consumed: number; snapshotAt: Date }> {
  return sql.begin(async (tx) => {
    // concurrent refreshes take turns: the CI bookkeeping reads what the previous batch wrote
    await tx`select pg_advisory_xact_lock(${REFRESH_LOCK})`;
    const [row] = await tx<{ consumed: number; snapshot_at: Date }[]>`
      with claimed as (
        delete from change_stats_queue q
        where q.change_id in (select change_id from change_stats_queue order by change_id limit ${batchSize})
        returning q.change_id
      ), recs as (
        select cr.tenant_id, cr.source_id, cr.scope_id, date_trunc('hour', cr.changed_at, 'UTC') as bucket,
               cr.change_type, cr.ci_type, cr.ci_id
        from claimed join change_records cr on cr.id = claimed.change_id
        where cr.changes <> '[]'::jsonb
      ), counted as (
        insert into change_stats_buckets (tenant_id, source_id, scope_id, bucket, change_type, ci_type, changes)
        select tenant_id, source_id, scope_id, bucket, change_type, ci_type, count(*)
        from recs group by 1, 2, 3, 4, 5, 6 order by 1, 4, 2, 3, 5, 6
        on conflict (tenant_id, bucket, source_id, scope_id, change_type, ci_type)
          do update set changes = change_stats_buckets.changes + excluded.changes
      ), latest as (
        select tenant_id, source_id, scope_id, ci_id, max(bucket) as bucket from recs group by 1, 2, 3, 4
      ), moved as (
        select l.*, c.last_bucket as old_bucket
        from latest l
        left join change_stats_ci_last c
          on c.tenant_id = l.tenant_id and c.ci_id = l.ci_id
         and c.source_id is not distinct from l.source_id and c.scope_id is not distinct from l.scope_id
        where c.last_bucket is null or l.bucket > c.last_bucket
      ), lasts as (
        insert into change_stats_ci_last (tenant_id, source_id, scope_id, ci_id, last_bucket)
        select tenant_id, source_id, scope_id, ci_id, bucket from moved order by 1, 4, 2, 3
        on conflict (tenant_id, ci_id, source_id, scope_id) do update set last_bucket = excluded.last_bucket
      ), deltas as (
        select tenant_id, source_id, scope_id, bucket, 1 as delta from moved
        union all
        select tenant_id, source_id, scope_id, old_bucket, -1 from moved where old_bucket is not null
      ), affected as (
        insert into change_stats_affected (tenant_id, source_id, scope_id, bucket, cis)
        select tenant_id, source_id, scope_id, bucket, sum(delta)
        from deltas group by 1, 2, 3, 4 having sum(delta) <> 0 order by 1, 4, 2, 3
        on conflict (tenant_id, bucket, source_id, scope_id) do update set cis = change_stats_affected.cis + excluded.cis
      )
      select count(*)::int as consumed, statement_timestamp() as snapshot_at from claimed`;
    return { consumed: row!.consumed, snapshotAt: row!.snapshot_at };
  });
}

/**
 * Brings the pre-aggregate up to date with every change record committed so far: only what was
 * queued since the last refresh is read, so a refresh costs what changed, not the history. Safe to
 * run from several replicas at once. Returns the records consumed and the new end of the window.
 */
export async function refreshStatsAggregate(sql: Sql, batchSize = 10_000): Promise<{ rows: number; refreshedAt: Date }> {
  let rows = 0;
  let last: { consumed: number; snapshotAt: Date };
  do {
    last = await refreshBatch(sql, batchSize);
    rows += last.consumed;
  } while (last.consumed === batchSize);
  // the last batch found the queue drained: every record committed before its statement began is in
  const [state] = await sql<{ refreshed_at: Date }[]>`
    update change_stats_state set refreshed_at = greatest(refreshed_at, ${last.snapshotAt}) where id = 1 returning refreshed_at`;
  return { rows, refreshedAt: state!.refreshed_at };
}

/** The moment the pre-aggregate was last brought up to date (-infinity before the first refresh). */
export async function statsRefreshedAt(sql: Sql): Promise<Date | null> {
  const [row] = await sql<{ refreshed_at: Date | null }[]>`
    select case when refreshed_at = '-infinity' then null else refreshed_at end as refreshed_at from change_stats_state where id = 1`;
  return row?.refreshed_at ?? null;
}

const iso = (value: Date | string): string => (value instanceof Date ? value : new Date(value)).toISOString();

interface TypeCount {
  change_type: string;
  count: number;
}

function fold(
  byType: readonly TypeCount[],
  topTypes: readonly { ci_type: string; count: number }[],
  series: readonly { bucket_start: Date | string; change_type: string; count: number }[],
): Pick<ChangeStats, 'total_changes' | 'changes_by_type' | 'top_changed_ci_types' | 'series'> {
  const changesByType = { created: 0, updated: 0, archived: 0 };
  for (const row of byType) changesByType[STATS_TYPE[row.change_type]!] += Number(row.count);
  const buckets = new Map<string, ChangeStats['series'][number]>();
  for (const row of series) {
    const start = iso(row.bucket_start);
    let bucket = buckets.get(start);
    if (!bucket) buckets.set(start, (bucket = { bucket_start: start, created: 0, updated: 0, archived: 0 }));
    bucket[STATS_TYPE[row.change_type]!] += Number(row.count);
  }
  return {
    total_changes: changesByType.created + changesByType.updated + changesByType.archived,
    changes_by_type: changesByType,
    top_changed_ci_types: topTypes.map((row) => ({ ci_type: row.ci_type, count: Number(row.count) })),
    series: [...buckets.values()],
  };
}

export const TOP_CI_TYPES = 10;

/** Statistics of the default window from the pre-aggregate: sums over the visible instances. */
export async function aggregateStats(
  sql: Sql,
  principal: Principal,
  window: { start: Date; end: Date },
  groupBy: StatsGrouping,
): Promise<Omit<ChangeStats, 'time_range'>> {
  const where = (alias: string): Fragment =>
    and(sql, [visibleTo(sql, principal, columnsOf(alias)), sql`${sql(`${alias}.bucket`)} >= ${window.start}`]);
  const [byType, topTypes, series, [affected]] = await Promise.all([
    sql<TypeCount[]>`select b.change_type, sum(b.changes)::bigint as count from change_stats_buckets b where ${where('b')} group by 1`,
    sql<{ ci_type: string; count: number }[]>`
      select b.ci_type, sum(b.changes)::bigint as count from change_stats_buckets b where ${where('b')}
      group by 1 order by 2 desc, 1 limit ${TOP_CI_TYPES}`,
    sql<{ bucket_start: Date; change_type: string; count: number }[]>`
      select date_trunc(${groupBy}, b.bucket, 'UTC') as bucket_start, b.change_type, sum(b.changes)::bigint as count
      from change_stats_buckets b where ${where('b')} group by 1, 2 order by 1`,
    sql<{ cis: number }[]>`select coalesce(sum(a.cis), 0)::bigint as cis from change_stats_affected a where ${where('a')}`,
  ]);
  return { ...fold(byType, topTypes, series), affected_cis: Number(affected?.cis ?? 0) };
}

/**
 * Statistics of an explicit window from the change records themselves, in one pass over the
 * window (the covering index `changes_stats` serves it), under the statistics timeout.
 */
export async function historyStats(
  sql: Sql,
  principal: Principal,
  window: { from: string; until: string; untilExclusive: boolean },
  groupBy: StatsGrouping,
  timeoutMs: number,
): Promise<Omit<ChangeStats, 'time_range'>> {
  const upper = window.untilExclusive ? sql`cr.changed_at < ${window.until}::text::timestamptz` : sql`cr.changed_at <= ${window.until}::text::timestamptz`;
  const [, [row]] = await sql.begin((tx) => [
    tx`select set_config('statement_timeout', ${String(timeoutMs)}, true)`,
    tx<{ affected: number; by_type: TypeCount[]; top_types: { ci_type: string; count: number }[]; series: { bucket_start: string; change_type: string; count: number }[] }[]>`
      with recs as materialized (
        select cr.change_type, cr.ci_type, cr.ci_id, date_trunc(${groupBy}, cr.changed_at, 'UTC') as bucket_start
        from change_records cr
        where ${visibleTo(sql, principal, columnsOf('cr'))} and cr.changes <> '[]'::jsonb
          and cr.changed_at >= ${window.from}::text::timestamptz and ${upper}
      )
      select (select count(distinct ci_id) from recs)::bigint as affected,
             coalesce((select json_agg(t) from (select change_type, count(*) as count from recs group by 1) t), '[]') as by_type,
             coalesce((select json_agg(t) from (
               select ci_type, count(*) as count from recs group by 1 order by 2 desc, 1 limit ${TOP_CI_TYPES}) t), '[]') as top_types,
             coalesce((select json_agg(t order by t.bucket_start) from (
               select bucket_start, change_type, count(*) as count from recs group by 1, 2) t), '[]') as series`,
  ]);
  const result = row as { affected: number; by_type: TypeCount[]; top_types: { ci_type: string; count: number }[]; series: { bucket_start: string; change_type: string; count: number }[] };
  return { ...fold(result.by_type, result.top_types, result.series), affected_cis: Number(result.affected) };
}
