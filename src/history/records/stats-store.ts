import type { Sql } from 'postgres';
import { seesAllData, type Principal } from '../../platform/auth/principal.js';
import { and, changeColumnsOf, columnsOf, visibleTo, type Fragment } from '../../platform/auth/scope.js';
import { validationFailed } from '../../platform/errors.js';
import { HOUR_MS, windowCounts } from './window-counts.js';
import {
  DEFAULT_STATS_WINDOW_MS,
  STATS_TYPE,
  type ChangeStats,
  type StatsGrouping,
  type StatsRequest,
  type StatsWindow,
} from './stats-model.js';

// Any constant works as long as every cinv process uses the same one.
const REFRESH_LOCK = 0x63696e78;

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
               cr.change_type, cr.ci_type, cr.ci_id, cr.moved_from_scope_id
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

/** The start of the default window (the last 90 days) at `now`: the start of that hour. */
export function defaultWindowStart(now: Date): Date {
  const start = now.getTime() - DEFAULT_STATS_WINDOW_MS;
  return new Date(start - (start % HOUR_MS));
}

/**
 * Brings the pre-aggregate up to date with every change record committed so far: only what was
 * queued since the last refresh is read, so a refresh costs what changed, not the history. Then
 * stores each tenant's default window as an unrestricted principal sees it (one row to read).
 * Safe to run from several replicas at once. Returns the records consumed and the window's end.
 */
/** How many change records wait to be folded into the pre-aggregate, counted up to `cap`. */
export async function queuedChanges(sql: Sql, cap: number): Promise<number> {
  const [row] = await sql<
    { n: number }[]
  >`select count(*)::int as n from (select 1 from change_stats_queue limit ${cap}) q`;
  return row?.n ?? 0;
}

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

/** The moment the pre-aggregate was last brought up to date (-infinity before the first refresh). */
export async function statsRefreshedAt(sql: Sql): Promise<Date | null> {
  const [row] = await sql<{ refreshed_at: Date | null }[]>`
    select case when refreshed_at = '-infinity' then null else refreshed_at end as refreshed_at from change_stats_state where id = 1`;
  return row?.refreshed_at ?? null;
}

const iso = (value: Date | string): string => (value instanceof Date ? value : new Date(value)).toISOString();

/** The start of the `groupBy` bucket an hour belongs to (weeks start on Monday, UTC). */
function bucketOf(hour: string, groupBy: StatsGrouping): string {
  if (groupBy === 'hour') return hour;
  const day = new Date(hour);
  day.setUTCHours(0, 0, 0, 0);
  if (groupBy === 'week') day.setUTCDate(day.getUTCDate() - ((day.getUTCDay() + 6) % 7));
  return day.toISOString();
}

type Figures = Omit<ChangeStats, 'time_range'>;

/**
 * Spec §2.3's figures from counts per (hour, change type) and per CI type: `DELETED` counts
 * under `archived`, the series is summed into `groupBy` buckets.
 */
function figuresOf(
  hourly: readonly { hour: string; change_type: string; count: number }[],
  topTypes: readonly { ci_type: string; count: number }[],
  affected: number,
  groupBy: StatsGrouping,
): Figures {
  const changesByType = { created: 0, updated: 0, archived: 0 };
  const buckets = new Map<string, ChangeStats['series'][number]>();
  for (const row of hourly) {
    const kind = STATS_TYPE[row.change_type]!;
    const count = Number(row.count);
    changesByType[kind] += count;
    const start = bucketOf(iso(row.hour), groupBy);
    let bucket = buckets.get(start);
    if (!bucket) buckets.set(start, (bucket = { bucket_start: start, created: 0, updated: 0, archived: 0 }));
    bucket[kind] += count;
  }
  return {
    total_changes: changesByType.created + changesByType.updated + changesByType.archived,
    affected_cis: affected,
    changes_by_type: changesByType,
    top_changed_ci_types: topTypes.map((row) => ({ ci_type: row.ci_type, count: Number(row.count) })),
    series: [...buckets.values()].sort((a, b) => (a.bucket_start < b.bucket_start ? -1 : 1)),
  };
}

export const TOP_CI_TYPES = 10;

/** Snapshot figures a process keeps at most; past it the cache starts over rather than tracking use. */
const MAX_SNAPSHOTS = 300;

/**
 * The snapshot figures last read, by tenant and grouping, with the version of the row they came
 * from (its `xmin`: every write of the row, the refresh's included, gives it a new one). A read
 * then asks the database only whether the row is still that version; the figures, a few hundred
 * kilobytes in the hourly grouping, are decoded again only when it is not. What it holds is shared
 * between answers and never changed.
 */
export class SnapshotCache {
  private readonly entries = new Map<string, { version: string; figures: Figures }>();

  get(tenantId: string, groupBy: StatsGrouping) {
    return this.entries.get(`${tenantId}:${groupBy}`);
  }

  set(tenantId: string, groupBy: StatsGrouping, version: string, figures: Figures): void {
    if (this.entries.size >= MAX_SNAPSHOTS) this.entries.clear();
    this.entries.set(`${tenantId}:${groupBy}`, { version, figures });
  }
}

/** The tenant's snapshot figures of one grouping, decoded only when the cache does not hold its current version. */
async function snapshotFigures(sql: Sql, tenantId: string, groupBy: StatsGrouping, cache: SnapshotCache) {
  const known = cache.get(tenantId, groupBy);
  const [row] = await sql<{ window_start: Date; window_end: Date; version: string; figures: Figures | null }[]>`
    select window_start, window_end, xmin::text as version,
      case when xmin::text = ${known?.version ?? ''} then null else figures -> ${groupBy} end as figures
    from change_stats_snapshots where tenant_id = ${tenantId}`;
  if (!row) return undefined;
  let figures = row.figures;
  if (figures) cache.set(tenantId, groupBy, row.version, figures);
  else if (known?.version === row.version) figures = known.figures;
  return figures ? { figures, start: row.window_start, end: row.window_end } : undefined;
}

/**
 * The default window (the last 90 days, as of the last refresh): an unrestricted principal reads
 * its tenant's snapshot; a data-scoped one sums the per-instance buckets it may see.
 */
export async function defaultWindowStats(
  sql: Sql,
  principal: Principal,
  groupBy: StatsGrouping,
  now: Date,
  cache: SnapshotCache,
): Promise<ChangeStats> {
  const start = defaultWindowStart(now);
  if (seesAllData(principal)) {
    const snapshot = await snapshotFigures(sql, principal.tenantId, groupBy, cache);
    if (snapshot)
      return {
        ...snapshot.figures,
        time_range: { start: snapshot.start.toISOString(), end: snapshot.end.toISOString() },
      };
  }
  // never refreshed: the aggregate covers nothing yet, and says so
  const refreshedAt = await statsRefreshedAt(sql);
  const end = refreshedAt && refreshedAt > start ? refreshedAt : start;
  // the buckets keep the instance a move left (sql/0041); the distinct-CI rows count CIs, which the reader sees where they are
  const where = (alias: string, columns = columnsOf(alias)): Fragment =>
    and(sql, [visibleTo(sql, principal, columns), sql`${sql(`${alias}.bucket`)} >= ${start}`]);
  const buckets = where('b', changeColumnsOf('b'));
  const [hourly, topTypes, [affected]] = await Promise.all([
    sql<{ hour: string; change_type: string; count: number }[]>`
      select b.bucket as hour, b.change_type, sum(b.changes)::bigint as count from change_stats_buckets b where ${buckets} group by 1, 2`,
    sql<{ ci_type: string; count: number }[]>`
      select b.ci_type, sum(b.changes)::bigint as count from change_stats_buckets b where ${buckets}
      group by 1 order by 2 desc, 1 limit ${TOP_CI_TYPES}`,
    sql<
      { cis: number }[]
    >`select coalesce(sum(a.cis), 0)::bigint as cis from change_stats_affected a where ${where('a')}`,
  ]);
  const figures = figuresOf(hourly, topTypes, Number(affected?.cis ?? 0), groupBy);
  return { ...figures, time_range: { start: start.toISOString(), end: end.toISOString() } };
}

/**
 * The bounds of an explicit window: a missing start is the default window's start, a missing end
 * is now. An end before the start is a 422 naming the parameter the caller gave.
 */
export function explicitWindow(request: StatsRequest, now: Date): StatsWindow {
  const from = request.from ?? defaultWindowStart(now).toISOString();
  const until = request.until ?? now.toISOString();
  if (Date.parse(until) < Date.parse(from)) {
    const field = request.until === undefined ? 'start_date' : 'end_date';
    throw validationFailed([
      { field, location: 'query', message: `must not make the window end before it starts (${from} to ${until})` },
    ]);
  }
  return { from, until, untilExclusive: request.until !== undefined && request.untilExclusive };
}

/**
 * Statistics of an explicit window, exact: the counts of `windowCounts`, and distinct CIs by a
 * hashed scan of the window (the covering index `changes_stats`), under the statistics timeout.
 * With `ciIds`, only those CIs' records, counted from the records.
 */
export async function historyStats(
  sql: Sql,
  principal: Principal,
  window: StatsWindow,
  groupBy: StatsGrouping,
  timeoutMs: number,
  ciIds?: readonly string[],
): Promise<Figures> {
  const visible = (alias: string) => visibleTo(sql, principal, changeColumnsOf(alias));
  const upper = window.untilExclusive
    ? sql`cr.changed_at < ${window.until}::text::timestamptz`
    : sql`cr.changed_at <= ${window.until}::text::timestamptz`;
  const inWindow = sql`cr.changed_at >= ${window.from}::text::timestamptz and ${upper}`;
  // a set of CIs is a dimension the pre-aggregate does not have: its few records are counted as they are
  const among = ciIds === undefined ? sql`` : sql`and cr.ci_id = any(${ciIds as string[]}::uuid[])`;
  const counted =
    ciIds === undefined
      ? windowCounts(
          sql,
          principal,
          { at: window.from, inclusive: true },
          { at: window.until, inclusive: !window.untilExclusive },
          [],
          groupBy !== 'hour',
        )
      : sql`select date_trunc('hour', cr.changed_at, 'UTC') as hour, cr.change_type, cr.ci_type, 1 as n from change_records cr
            where ${visible('cr')} and cr.changes <> '[]'::jsonb and ${inWindow} ${among}`;
  const [, , rows, [affected]] = await sql.begin((tx) => [
    tx`select set_config('statement_timeout', ${String(timeoutMs)}, true)`,
    // the distinct count hashes the window's CI ids; the default work_mem would spill to disk
    tx`select set_config('work_mem', '64MB', true)`,
    tx<{ hour: string | null; change_type: string | null; ci_type: string | null; count: number }[]>`
      select hour, change_type, ci_type, sum(n)::bigint as count from (${counted}) as counted
      group by grouping sets ((hour, change_type), (ci_type))`,
    tx<{ affected: number }[]>`
      select count(*)::bigint as affected from (
        select cr.ci_id from change_records cr
        where ${visible('cr')} and cr.changes <> '[]'::jsonb and ${inWindow} ${among}
        group by cr.ci_id) d`,
  ]);
  const counts = rows as { hour: string | null; change_type: string | null; ci_type: string | null; count: number }[];
  const hourly = counts
    .filter((row) => row.hour !== null)
    .map((row) => ({ hour: row.hour!, change_type: row.change_type!, count: row.count }));
  const topTypes = counts
    .filter((row) => row.ci_type !== null)
    .map((row) => ({ ci_type: row.ci_type!, count: Number(row.count) }))
    .sort((a, b) => b.count - a.count || (a.ci_type < b.ci_type ? -1 : 1))
    .slice(0, TOP_CI_TYPES);
  return figuresOf(hourly, topTypes, Number((affected as { affected: number }).affected), groupBy);
}
