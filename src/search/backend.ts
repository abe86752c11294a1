import type { Principal } from '../auth/principal.js';
import type { ChangeRow } from '../changes/store.js';
import type { ParsedFilter } from '../query/filters.js';
import type { Match } from './highlight.js';
import type { ParsedQuery } from './query.js';

/** The time bounds of a search or an explicit statistics window. */
export interface TimeWindow {
  /** Inclusive lower bound, ISO 8601 with offset. */
  from: string | undefined;
  /** Upper bound, ISO 8601 with offset; `untilExclusive` says which kind. */
  until: string | undefined;
  untilExclusive: boolean;
}

export interface SearchRequest extends TimeWindow {
  query: ParsedQuery;
  filters: readonly ParsedFilter[];
  limit: number;
  offset: number;
}

export interface SearchHit extends ChangeRow {
  score: number;
  matched: Match[];
}

export interface SearchResult {
  items: SearchHit[];
  total: number;
  /** False when `total` is an estimate (more matches than could be counted in time). */
  totalExact: boolean;
}

export type StatsGrouping = 'hour' | 'day' | 'week';

export interface StatsRequest {
  /** Absent: the default window (the last 90 days, from the pre-aggregate). */
  from: string | undefined;
  until: string | undefined;
  untilExclusive: boolean;
  groupBy: StatsGrouping;
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

export interface BackendHealth {
  backend: 'postgres' | 'opensearch';
  status: 'ok' | 'degraded' | 'unavailable';
  detail?: string;
}

/**
 * Where change search and statistics are answered. Routes never know which backend they talk to;
 * both apply the principal's tenant and data scopes inside the query they send.
 */
export interface SearchBackend {
  readonly name: 'postgres' | 'opensearch';
  search(principal: Principal, request: SearchRequest): Promise<SearchResult>;
  stats(principal: Principal, request: StatsRequest): Promise<ChangeStats>;
  /** Brings the statistics pre-aggregate up to date. */
  refresh(): Promise<RefreshResult>;
  health(): Promise<BackendHealth>;
}

/** The change types as statistics name them: a `DELETED` change archives the CI. */
export const STATS_TYPE: Record<string, keyof ChangeStats['changes_by_type']> = {
  CREATED: 'created',
  UPDATED: 'updated',
  DELETED: 'archived',
};

/** Default statistics window (spec §4.3). */
export const DEFAULT_STATS_WINDOW_MS = 90 * 86_400_000;

/** Search candidates ranked per query: from + size may not exceed this (as OpenSearch's window). */
export const SEARCH_WINDOW = 10_000;
