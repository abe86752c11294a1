import type { Principal } from '../../platform/auth/principal.js';
import type { ChangeRow } from '../records/store.js';
import type { ParsedFilter } from '../../platform/query/filters.js';
import type { Match } from './highlight.js';
import type { ParsedQuery } from '../../platform/query/text-query.js';
import type { ChangeStats, RefreshResult, StatsRequest } from '../records/stats-model.js';
import type { Horizon } from '../records/retention.js';

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
  /** Brings the statistics pre-aggregate up to date (ChangeStatistics, whichever the backend). */
  refresh(): Promise<RefreshResult>;
  health(): Promise<BackendHealth>;
  /**
   * Forgets the changes past these horizons where the backend keeps its own copy (OpenSearch); the
   * records themselves are trimmed in PostgreSQL by the sweep. Answers how many copies went.
   */
  expire(horizons: readonly Horizon[]): Promise<number>;
}

/** Search candidates ranked per query: from + size may not exceed this (as OpenSearch's window). */
export const SEARCH_WINDOW = 10_000;
