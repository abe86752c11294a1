/** What change statistics are asked and answer, whichever backend computes them. */

export type StatsGrouping = 'hour' | 'day' | 'week';

export interface StatsRequest {
  /** Absent: the default window (the last 90 days, from the pre-aggregate). */
  from: string | undefined;
  until: string | undefined;
  untilExclusive: boolean;
  groupBy: StatsGrouping;
  /** Only the changes of these CIs (the radius of one, see `related_to`), counted from the records. */
  ciIds?: readonly string[];
}

/** The bounds of an explicit window, both present. */
export interface StatsWindow {
  from: string;
  until: string;
  untilExclusive: boolean;
}

export interface StatsBucket {
  bucket_start: string;
  created: number;
  updated: number;
  archived: number;
}

/** Spec §2.3, plus the series by `group_by`. */
export interface ChangeStats {
  total_changes: number;
  affected_cis: number;
  changes_by_type: { created: number; updated: number; archived: number };
  /** By kind (kinds.ts), most first; the default window counts whole UTC days. */
  changes_by_kind: { kind: string; count: number }[];
  top_changed_ci_types: { ci_type: string; count: number }[];
  time_range: { start: string; end: string };
  series: StatsBucket[];
}

export interface RefreshResult {
  refreshed: true;
  window: { start: string; end: string };
  /** Change records folded into the pre-aggregate by this refresh. */
  rows: number;
  took_ms: number;
}

/** The change types as statistics name them: a `DELETED` change archives the CI. */
export const STATS_TYPE: Record<string, keyof ChangeStats['changes_by_type']> = {
  CREATED: 'created',
  UPDATED: 'updated',
  DELETED: 'archived',
};

/** Default statistics window (spec §4.3). */
export const DEFAULT_STATS_WINDOW_MS = 90 * 86_400_000;
