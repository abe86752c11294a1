import type { Sql } from 'postgres';
import { defaultWindowStart, figuresOf, TOP_CI_TYPES } from './stats-figures.js';

// Any constant works as long as every cinv process uses the same one.
const REFRESH_LOCK = 0x63696e78;

/** Holds off refreshes until the transaction ends: a writer of counted records' statistics waits for no fold in flight. */
export async function lockStatistics(tx: Sql): Promise<void> {
  await tx`select pg_advisory_xact_lock(${REFRESH_LOCK})`;
}

/**
 * Folds one batch of queued change records into the pre-aggregate, in one statement: the hourly
 * and daily counts per tenant, source, instance, change type and CI type, each CI's latest hour with a
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
        -- = any(array(...)): the batch is fixed before the delete, whatever the planner believes
        -- about the queue (an IN here became a nested loop over the whole queue after bulk loads)
        where q.change_id = any(array(select change_id from change_stats_queue order by change_id limit ${batchSize}))
        returning q.change_id, q.changed_at
      ), recs as (
        select cr.tenant_id, cr.source_id, cr.scope_id, date_trunc('hour', cr.changed_at, 'UTC') as bucket,
               cr.change_type, cr.ci_type, cr.ci_id, cr.moved_from_scope_id, coalesce(cr.kind, 'other') as kind
        from claimed join change_records cr on cr.id = claimed.change_id and cr.changed_at = claimed.changed_at
        where cr.changes <> '[]'::jsonb
      ), counted as (
        insert into change_stats_buckets (tenant_id, source_id, scope_id, bucket, change_type, ci_type, moved_from_scope_id, changes)
        select tenant_id, source_id, scope_id, bucket, change_type, ci_type, moved_from_scope_id, count(*)
        from recs group by 1, 2, 3, 4, 5, 6, 7 order by 1, 4, 2, 3, 5, 6, 7
        on conflict (tenant_id, bucket, source_id, scope_id, change_type, ci_type, moved_from_scope_id)
          do update set changes = change_stats_buckets.changes + excluded.changes
      ), days as (
        insert into change_stats_days (tenant_id, source_id, scope_id, day, change_type, ci_type, moved_from_scope_id, changes)
        select tenant_id, source_id, scope_id, date_trunc('day', bucket, 'UTC'), change_type, ci_type, moved_from_scope_id, count(*)
        from recs group by 1, 2, 3, 4, 5, 6, 7 order by 1, 4, 2, 3, 5, 6, 7
        on conflict (tenant_id, day, source_id, scope_id, change_type, ci_type, moved_from_scope_id)
          do update set changes = change_stats_days.changes + excluded.changes
      ), kinds as (
        insert into change_stats_kinds (tenant_id, source_id, scope_id, moved_from_scope_id, day, kind, changes)
        select tenant_id, source_id, scope_id, moved_from_scope_id, date_trunc('day', bucket, 'UTC'), kind, count(*)
        from recs group by 1, 2, 3, 4, 5, 6 order by 1, 5, 2, 3, 4, 6
        on conflict (tenant_id, day, source_id, scope_id, moved_from_scope_id, kind)
          do update set changes = change_stats_kinds.changes + excluded.changes
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

const VACUUM_AFTER_ROWS = 10_000;

/** How many change records wait to be folded into the pre-aggregate, counted up to `cap`. */
export async function queuedChanges(sql: Sql, cap: number): Promise<number> {
  const [row] = await sql<
    { n: number }[]
  >`select count(*)::int as n from (select 1 from change_stats_queue limit ${cap}) q`;
  return row?.n ?? 0;
}

/**
 * Brings the pre-aggregate up to date with every change record committed so far: only what was
 * queued since the last refresh is read, so a refresh costs what changed, not the history. Then
 * stores each tenant's default window as an unrestricted principal sees it (one row to read).
 * Safe to run from several replicas at once. Returns the records consumed and the window's end.
 */
export async function refreshStatsAggregate(
  sql: Sql,
  now: Date,
  batchSize = 10_000,
): Promise<{ rows: number; refreshedAt: Date }> {
  let rows = 0;
  let last: { consumed: number; snapshotAt: Date };
  do {
    last = await refreshBatch(sql, batchSize);
    rows += last.consumed;
  } while (last.consumed === batchSize);
  // the last batch found the queue drained: every record committed before its statement began is in
  const [state] = await sql<{ refreshed_at: Date }[]>`
    update change_stats_state set refreshed_at = greatest(refreshed_at, ${last.snapshotAt}) where id = 1 returning refreshed_at`;
  // a drained queue keeps the pages and statistics of what it held: the unfolded records of an
  // explicit window are found through it, which must stay one cheap scan of what is really queued
  if (rows >= VACUUM_AFTER_ROWS) await sql`vacuum (analyze) change_stats_queue`;
  await storeSnapshots(sql, defaultWindowStart(now), state!.refreshed_at, rows > 0);
  return { rows, refreshedAt: state!.refreshed_at };
}

interface SnapshotSource {
  tenant_id: string;
  hourly: [string, string, number][];
  top_ci_types: [string, number][];
  affected_cis: number;
}

/**
 * Stores the unrestricted default window of every tenant with changes in it, when something was
 * folded in or the window has moved on by an hour since the stored one: the figures of each
 * `group_by`, ready to be answered as they are.
 */
async function storeSnapshots(sql: Sql, start: Date, end: Date, folded: boolean): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${REFRESH_LOCK})`;
    const sources = await tx<SnapshotSource[]>`
      with tenants as (
        select distinct b.tenant_id from change_stats_buckets b where b.bucket >= ${start}
      ), due as (
        select t.tenant_id from tenants t left join change_stats_snapshots s on s.tenant_id = t.tenant_id
        where ${folded} or s.tenant_id is null or s.window_start < ${start}
      )
      select due.tenant_id,
        coalesce((
          select json_agg(json_build_array(to_char(s.bucket at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), s.change_type, s.count)) from (
            select b.bucket, b.change_type, sum(b.changes)::bigint as count from change_stats_buckets b
            where b.tenant_id = due.tenant_id and b.bucket >= ${start} group by 1, 2) s), '[]') as hourly,
        coalesce((
          select json_agg(json_build_array(t.ci_type, t.count) order by t.count desc, t.ci_type) from (
            select b.ci_type, sum(b.changes)::bigint as count from change_stats_buckets b
            where b.tenant_id = due.tenant_id and b.bucket >= ${start} group by 1 order by 2 desc, 1 limit ${TOP_CI_TYPES}) t), '[]') as top_ci_types,
        (select coalesce(sum(a.cis), 0)::bigint from change_stats_affected a where a.tenant_id = due.tenant_id and a.bucket >= ${start}) as affected_cis
      from due`;
    for (const source of sources) {
      const hourly = source.hourly.map(([hour, change_type, count]) => ({ hour, change_type, count }));
      const top = source.top_ci_types.map(([ci_type, count]) => ({ ci_type, count }));
      const figures = Object.fromEntries(
        (['hour', 'day', 'week'] as const).map((groupBy) => [
          groupBy,
          figuresOf(hourly, top, Number(source.affected_cis), groupBy),
        ]),
      );
      await tx`
        insert into change_stats_snapshots (tenant_id, window_start, window_end, figures)
        values (${source.tenant_id}, ${start}, ${end}, ${tx.json(figures as never)})
        on conflict (tenant_id) do update set window_start = excluded.window_start, window_end = excluded.window_end, figures = excluded.figures`;
    }
    // a refresh that folded nothing still covers up to its own end
    await tx`update change_stats_snapshots set window_end = greatest(window_end, ${end})`;
  });
}
