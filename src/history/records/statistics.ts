import type { Sql } from 'postgres';
import type { Principal } from '../../platform/auth/principal.js';
import { databaseFailure } from '../../platform/db/failures.js';
import { unprocessable } from '../../platform/errors.js';
import type { ChangeStats, RefreshResult, StatsGrouping, StatsRequest, StatsWindow } from './stats-model.js';
import { SnapshotCache } from './stats-cache.js';
import { defaultWindowStart, explicitWindow } from './stats-figures.js';
import { defaultWindowKinds, defaultWindowStats, historyKinds, historyStats } from './stats-read-store.js';
import { queuedChanges, refreshStatsAggregate } from './stats-store.js';

/**
 * Queued change records a statistics read folds in before it answers: a few seconds of work at
 * most. A larger backlog (a first load) is folded behind the answer.
 */
export const FOLD_ON_READ = 20_000;

/** The 422 of an explicit statistics window that could not be computed in time. */
export const statsWindowTooWide = () =>
  unprocessable('The statistics window is too wide to compute within CINV_STATS_TIMEOUT; narrow it with end_date', {
    reason: 'stats_timeout',
  });

export interface StatisticsOptions {
  /** Limit of one explicit-window statistics query (CINV_STATS_TIMEOUT). */
  statsTimeoutMs: number;
  now: () => Date;
  /**
   * Whether a default-window read folds queued records in first (a write). Not on a read replica:
   * there the scheduled refresh folds them on the primary, and `time_range.end` says how far it got.
   */
  foldOnRead?: boolean;
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

  private folding: Promise<RefreshResult> | undefined;
  private readonly snapshots = new SnapshotCache();

  /**
   * The last 90 days, as the principal may see them. Change records still queued are folded in
   * first, so what was just written counts at once; past FOLD_ON_READ of them the answer does not
   * wait, the fold goes on behind it, and `time_range.end` says up to when the figures count.
   */
  async defaultWindow(principal: Principal, groupBy: StatsGrouping): Promise<ChangeStats> {
    const queued = this.options.foldOnRead === false ? 0 : await queuedChanges(this.sql, FOLD_ON_READ + 1);
    if (queued > 0) {
      const folding = this.refreshOnce();
      // a failed fold is retried by the next read and the scheduled refresh, which report it
      if (queued <= FOLD_ON_READ) await folding.catch(() => undefined);
      else folding.catch(() => undefined);
    }
    const [stats, kinds] = await Promise.all([
      defaultWindowStats(this.sql, principal, groupBy, this.options.now(), this.snapshots),
      defaultWindowKinds(this.sql, principal, this.options.now()),
    ]);
    return { ...stats, changes_by_kind: kinds };
  }

  /** One refresh at a time in this process: reads arriving meanwhile wait for the running one. */
  refreshOnce(): Promise<RefreshResult> {
    return (this.folding ??= this.refresh().finally(() => (this.folding = undefined)));
  }

  /** An explicit request's bounds: a missing start is the default window's, a missing end is now. */
  window(request: StatsRequest): StatsWindow {
    return explicitWindow(request, this.options.now());
  }

  /** The statistics of a request: the default window, or an explicit one counted in PostgreSQL. */
  async answer(principal: Principal, request: StatsRequest): Promise<ChangeStats> {
    if (request.from === undefined && request.until === undefined && request.ciIds === undefined)
      return this.defaultWindow(principal, request.groupBy);
    const window = this.window(request);
    const [figures, kinds] = await Promise.all([
      historyStats(this.sql, principal, window, request.groupBy, this.options.statsTimeoutMs, request.ciIds),
      historyKinds(this.sql, principal, window, this.options.statsTimeoutMs, request.ciIds),
    ]).catch((error: unknown) => {
      throw databaseFailure(error) === 'timeout' ? statsWindowTooWide() : error;
    });
    return {
      ...figures,
      changes_by_kind: kinds,
      time_range: { start: new Date(window.from).toISOString(), end: new Date(window.until).toISOString() },
    };
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
