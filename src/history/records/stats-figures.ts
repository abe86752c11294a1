import { validationFailed } from '../../platform/errors.js';
import { HOUR_MS } from './window-counts.js';
import {
  DEFAULT_STATS_WINDOW_MS,
  STATS_TYPE,
  type ChangeStats,
  type StatsGrouping,
  type StatsRequest,
  type StatsWindow,
} from './stats-model.js';

/* The statistics' windows and their figures, from counts however they were read. */

/** The start of the default window (the last 90 days) at `now`: the start of that hour. */
export function defaultWindowStart(now: Date): Date {
  const start = now.getTime() - DEFAULT_STATS_WINDOW_MS;
  return new Date(start - (start % HOUR_MS));
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

const iso = (value: Date | string): string => (value instanceof Date ? value : new Date(value)).toISOString();

/** The start of the `groupBy` bucket an hour belongs to (weeks start on Monday, UTC). */
function bucketOf(hour: string, groupBy: StatsGrouping): string {
  if (groupBy === 'hour') return hour;
  const day = new Date(hour);
  day.setUTCHours(0, 0, 0, 0);
  if (groupBy === 'week') day.setUTCDate(day.getUTCDate() - ((day.getUTCDay() + 6) % 7));
  return day.toISOString();
}

export type Figures = Omit<ChangeStats, 'time_range' | 'changes_by_kind'>;

/**
 * Spec §2.3's figures from counts per (hour, change type) and per CI type: `DELETED` counts
 * under `archived`, the series is summed into `groupBy` buckets.
 */
export function figuresOf(
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
