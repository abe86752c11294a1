import type { Sql } from 'postgres';
import type { Principal } from '../../platform/auth/principal.js';
import { and, changeColumnsOf, visibleTo, type Fragment } from '../../platform/auth/scope.js';
import { compileFilters, type ParsedFilter } from '../../platform/query/filters.js';

export const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const HOUR_US = BigInt(HOUR_MS) * 1000n;

/**
 * Microseconds since the epoch of an ISO 8601 timestamp (Date.parse stops at milliseconds), as a
 * bigint: timestamps far from the epoch (year 9999) hold more microseconds than a double counts exactly.
 */
export function microsOf(iso: string): bigint {
  const fraction = /\.(\d+)/.exec(iso)?.[1] ?? '';
  return BigInt(Date.parse(iso)) * 1000n + BigInt(fraction.slice(3, 6).padEnd(3, '0'));
}

/** The hour (as epoch milliseconds) that begins at or before a microsecond instant. */
const hourOf = (us: bigint): number => Number((us - (((us % HOUR_US) + HOUR_US) % HOUR_US)) / 1000n);

/** A bound of a window on `changed_at`. */
export interface Bound {
  /** ISO 8601. */
  at: string;
  inclusive: boolean;
}

/** [from, to) on a column, either side open when undefined. */
function within(sql: Sql, column: string, from: number | undefined, to: number | undefined): Fragment {
  return and(sql, [
    ...(from === undefined ? [] : [sql`${sql(column)} >= ${new Date(from)}`]),
    ...(to === undefined ? [] : [sql`${sql(column)} < ${new Date(to)}`]),
  ]);
}

/** The whole hours of a window, [firstHour, lastHour) as epoch milliseconds: every record of them lies inside it. */
function wholeHours(
  lower: Bound | undefined,
  upper: Bound | undefined,
): { firstHour: number | undefined; lastHour: number | undefined } {
  const lowerUs = lower ? microsOf(lower.at) : undefined;
  const upperUs = upper ? microsOf(upper.at) : undefined;
  let firstHour =
    lowerUs === undefined
      ? undefined
      : lower!.inclusive && lowerUs % HOUR_US === 0n
        ? hourOf(lowerUs)
        : hourOf(lowerUs) + HOUR_MS;
  const lastHour = upperUs === undefined ? undefined : hourOf(upperUs);
  if (firstHour !== undefined && lastHour !== undefined && firstHour > lastHour) firstHour = lastHour;
  return { firstHour, lastHour };
}

/** The change records of the window that count: visible to the principal, kept by the filters. */
function windowRecords(
  sql: Sql,
  principal: Principal,
  lower: Bound | undefined,
  upper: Bound | undefined,
  filters: readonly ParsedFilter[],
): Fragment {
  return and(sql, [
    visibleTo(sql, principal, changeColumnsOf('cr')),
    sql`cr.changes <> '[]'::jsonb`,
    ...compileFilters(sql, filters),
    ...(lower
      ? [
          lower.inclusive
            ? sql`cr.changed_at >= ${lower.at}::text::timestamptz`
            : sql`cr.changed_at > ${lower.at}::text::timestamptz`,
        ]
      : []),
    ...(upper
      ? [
          upper.inclusive
            ? sql`cr.changed_at <= ${upper.at}::text::timestamptz`
            : sql`cr.changed_at < ${upper.at}::text::timestamptz`,
        ]
      : []),
  ]);
}

/** The pre-aggregate's rows of the whole hours, the whole days among them by the day with `byDay`. */
function aggregatedParts(
  sql: Sql,
  principal: Principal,
  filters: readonly ParsedFilter[],
  { firstHour, lastHour }: { firstHour: number | undefined; lastHour: number | undefined },
  byDay: boolean,
): Fragment[] {
  const aggregated = (table: string, column: string, range: Fragment) =>
    sql`select cr.${sql(column)} as hour, cr.change_type, cr.ci_type, cr.changes as n from ${sql(table)} cr
        where ${and(sql, [visibleTo(sql, principal, changeColumnsOf('cr')), ...compileFilters(sql, filters), range])}`;
  // [firstDay, lastDay): the whole days among the whole hours
  const firstDay = firstHour === undefined ? undefined : Math.ceil(firstHour / DAY_MS) * DAY_MS;
  const lastDay = lastHour === undefined ? undefined : Math.floor(lastHour / DAY_MS) * DAY_MS;
  if (!byDay || (firstDay !== undefined && lastDay !== undefined && firstDay >= lastDay))
    return [aggregated('change_stats_buckets', 'bucket', within(sql, 'cr.bucket', firstHour, lastHour))];
  const parts = [aggregated('change_stats_days', 'day', within(sql, 'cr.day', firstDay, lastDay))];
  if (firstDay !== undefined)
    parts.push(aggregated('change_stats_buckets', 'bucket', within(sql, 'cr.bucket', firstHour, firstDay)));
  if (lastDay !== undefined)
    parts.push(aggregated('change_stats_buckets', 'bucket', within(sql, 'cr.bucket', lastDay, lastHour)));
  return parts;
}

/**
 * The rows `(hour, change_type, ci_type, n)` that count, exactly, the change records of a window
 * which match `filters` (on change type and CI type only; the pre-aggregate has no other
 * dimension) and the principal may see: whole hours inside the window from the buckets, the two
 * partial hours at its edges from the records, and records the pre-aggregate has not folded in
 * yet through the queue. One statement reads them all, so a refresh running meanwhile changes
 * nothing. Aliased `cr`, the buckets take the same scope and filter fragments as the records.
 */
export function windowCounts(
  sql: Sql,
  principal: Principal,
  lower: Bound | undefined,
  upper: Bound | undefined,
  filters: readonly ParsedFilter[],
  /** Whole UTC days of the window come as one row per day (`hour` at its start): for totals, and series by day or week. */
  byDay = false,
): Fragment {
  const whole = wholeHours(lower, upper);
  const { firstHour, lastHour } = whole;
  const records = windowRecords(sql, principal, lower, upper, filters);
  const hours = (column: string) => within(sql, column, firstHour, lastHour);
  const parts = aggregatedParts(sql, principal, filters, whole, byDay);
  parts.push(
    // whole hours hold records the pre-aggregate has not folded in yet. The queue is short, so it
    // drives the join: one lookup per queued record of the window's hours, in its month (offset 0 keeps the planner from turning it
    // into a join that scans the window's records, as stale queue statistics invite)
    sql`select date_trunc('hour', cr.changed_at, 'UTC'), cr.change_type, cr.ci_type, 1
        from change_stats_queue q cross join lateral (select * from change_records r where r.id = q.change_id and r.changed_at = q.changed_at offset 0) as cr
        where ${hours('q.changed_at')} and ${records} and ${hours('cr.changed_at')}`,
  );
  if (firstHour !== undefined) {
    parts.push(sql`select date_trunc('hour', cr.changed_at, 'UTC'), cr.change_type, cr.ci_type, 1 from change_records cr
                   where ${records} and cr.changed_at < ${new Date(firstHour)}`);
  }
  if (lastHour !== undefined) {
    parts.push(sql`select date_trunc('hour', cr.changed_at, 'UTC'), cr.change_type, cr.ci_type, 1 from change_records cr
                   where ${records} and cr.changed_at >= ${new Date(lastHour)}`);
  }
  return parts.reduce((union, part) => sql`${union} union all ${part}`);
}
