import type { Sql } from 'postgres';
import { seesAllData, type Principal } from '../../platform/auth/principal.js';
import { and, changeColumnsOf, columnsOf, visibleTo, type Fragment } from '../../platform/auth/scope.js';
import { windowCounts } from './window-counts.js';
import type { SnapshotCache } from './stats-cache.js';
import { defaultWindowStart, figuresOf, TOP_CI_TYPES, type Figures } from './stats-figures.js';
import type { ChangeStats, StatsGrouping, StatsWindow } from './stats-model.js';

/** The moment the pre-aggregate was last brought up to date (-infinity before the first refresh). */
export async function statsRefreshedAt(sql: Sql): Promise<Date | null> {
  const [row] = await sql<{ refreshed_at: Date | null }[]>`
    select case when refreshed_at = '-infinity' then null else refreshed_at end as refreshed_at from change_stats_state where id = 1`;
  return row?.refreshed_at ?? null;
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
): Promise<Omit<ChangeStats, 'changes_by_kind'>> {
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

type KindCount = { kind: string; count: number };
const byCount = (rows: readonly { kind: string; count: number | string }[]): KindCount[] =>
  rows
    .map((row) => ({ kind: row.kind, count: Number(row.count) }))
    .sort((a, b) => b.count - a.count || (a.kind < b.kind ? -1 : 1));

/** The default window's changes by kind, from the daily pre-aggregate: whole UTC days from the window's start. */
export async function defaultWindowKinds(sql: Sql, principal: Principal, now: Date): Promise<KindCount[]> {
  const start = defaultWindowStart(now);
  const rows = await sql<{ kind: string; count: string }[]>`
    select k.kind, sum(k.changes)::bigint as count from change_stats_kinds k
    where k.tenant_id = ${principal.tenantId} and ${visibleTo(sql, principal, changeColumnsOf('k'))}
      and k.day >= date_trunc('day', ${start}::timestamptz, 'UTC')
    group by 1 having sum(k.changes) > 0`;
  return byCount(rows);
}

/** An explicit window's changes by kind, counted from the records under the statistics timeout. */
export async function historyKinds(
  sql: Sql,
  principal: Principal,
  window: StatsWindow,
  timeoutMs: number,
  ciIds?: readonly string[],
): Promise<KindCount[]> {
  const upper = window.untilExclusive
    ? sql`cr.changed_at < ${window.until}::text::timestamptz`
    : sql`cr.changed_at <= ${window.until}::text::timestamptz`;
  const among = ciIds === undefined ? sql`` : sql`and cr.ci_id = any(${ciIds as string[]}::uuid[])`;
  const [, rows] = await sql.begin((tx) => [
    tx`select set_config('statement_timeout', ${String(timeoutMs)}, true)`,
    tx<{ kind: string; count: string }[]>`
      select coalesce(cr.kind, 'other') as kind, count(*)::bigint as count from change_records cr
      where ${visibleTo(sql, principal, changeColumnsOf('cr'))} and cr.changes <> '[]'::jsonb
        and cr.changed_at >= ${window.from}::text::timestamptz and ${upper} ${among}
      group by 1`,
  ]);
  return byCount(rows as { kind: string; count: string }[]);
}
