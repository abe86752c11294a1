import type { Sql } from 'postgres';
import type { Principal } from '../auth/principal.js';
import { databaseFailure } from '../db/failures.js';
import { unprocessable } from '../errors.js';
import type { ChangeStats, RefreshResult, StatsGrouping, StatsRequest, StatsWindow } from './stats-model.js';
import { defaultWindowStart, defaultWindowStats, explicitWindow, historyStats, refreshStatsAggregate } from './stats-store.js';

/** The 422 of an explicit statistics window that could not be computed in time. */
export const statsWindowTooWide = () =>
  unprocessable('The statistics window is too wide to compute within CINV_STATS_TIMEOUT; narrow it with end_date', { reason: 'stats_timeout' });

export interface StatisticsOptions {
  /** Limit of one explicit-window statistics query (CINV_STATS_TIMEOUT). */
  statsTimeoutMs: number;
  now: () => Date;
}

/**
 * Change statistics, whichever backend answers search: the default window and the refresh always
 * come from the PostgreSQL pre-aggregate, which is exact; an explicit window is counted here unless
 * a backend aggregates it itself (OpenSearch), within the same bounds.
 */
export class ChangeStatistics {
  constructor(
    private readonly sql: Sql,
    private readonly options: StatisticsOptions,
  ) {}

  /** The last 90 days as of the last refresh, as the principal may see them. */
  defaultWindow(principal: Principal, groupBy: StatsGrouping): Promise<ChangeStats> {
    return defaultWindowStats(this.sql, principal, groupBy, this.options.now());
  }

  /** An explicit request's bounds: a missing start is the default window's, a missing end is now. */
  window(request: StatsRequest): StatsWindow {
    return explicitWindow(request, this.options.now());
  }

  /** The statistics of a request: the default window, or an explicit one counted in PostgreSQL. */
  async answer(principal: Principal, request: StatsRequest): Promise<ChangeStats> {
    if (request.from === undefined && request.until === undefined) return this.defaultWindow(principal, request.groupBy);
    const window = this.window(request);
    const figures = await historyStats(this.sql, principal, window, request.groupBy, this.options.statsTimeoutMs).catch((error: unknown) => {
      throw databaseFailure(error) === 'timeout' ? statsWindowTooWide() : error;
    });
    return { ...figures, time_range: { start: new Date(window.from).toISOString(), end: new Date(window.until).toISOString() } };
  }

  /** Brings the pre-aggregate up to date. */
  async refresh(): Promise<RefreshResult> {
    const started = performance.now();
    const now = this.options.now();
    const { rows, refreshedAt } = await refreshStatsAggregate(this.sql, now);
    const start = defaultWindowStart(now);
    return {
      refreshed: true,
      window: { start: start.toISOString(), end: refreshedAt.toISOString() },
      rows,
      took_ms: Math.round(performance.now() - started),
    };
  }
}
