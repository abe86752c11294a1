import schedule from 'node-schedule';
import type { AppContext } from '../../context.js';
import { queuedChanges } from '../records/stats-store.js';
import { backfillSearchDocuments } from '../search/backfill.js';

/**
 * Change records waiting in the statistics queue that start a refresh before its schedule: a list
 * total counts the waiting records one by one, so a steady ingest must not let them pile up for
 * the minutes between scheduled refreshes.
 */
export const FOLD_BACKLOG = 5_000;
/** How often the queue is looked at for such a backlog. */
const FOLD_CHECK_MS = 5_000;

/**
 * The search jobs of a process that runs scheduled work (`serve`, `worker`): once at start, search
 * documents for records that have none; at start and on CINV_STATS_REFRESH_SCHEDULE, the
 * statistics refresh (a run still going when the next is due is not doubled), and sooner whenever
 * FOLD_BACKLOG change records wait. Errors are logged.
 */
export function scheduleSearchJobs(
  app: AppContext,
  options: { backlogCheckMs?: number } = {},
): { stop(): Promise<void> } {
  const { logger } = app;
  const backfill = backfillSearchDocuments(app.sql, 1000, (done) => {
    if (done % 100_000 === 0) logger.info({ done }, 'search documents backfilled so far');
  }).then(
    (done) => {
      if (done > 0) logger.info({ done }, 'search documents backfilled');
    },
    (error: unknown) => logger.error({ err: error }, 'search document backfill failed'),
  );

  let running: Promise<void> | undefined;
  const refresh = (reason: 'schedule' | 'backlog') => {
    if (running) return;
    running = app.search
      .refresh()
      .then(
        (result) =>
          logger[reason === 'schedule' ? 'info' : 'debug'](
            { rows: result.rows, ms: result.took_ms, reason },
            'statistics refreshed',
          ),
        (error: unknown) => logger.error({ err: error }, 'statistics refresh failed'),
      )
      .finally(() => {
        running = undefined;
      });
  };
  const job = schedule.scheduleJob('cinv-stats-refresh', app.config.statsRefreshSchedule, () => refresh('schedule'));
  if (!job)
    throw new Error(`CINV_STATS_REFRESH_SCHEDULE: "${app.config.statsRefreshSchedule}" is not a valid cron expression`);
  refresh('schedule');
  let checking: Promise<void> | undefined;
  const backlog = setInterval(() => {
    if (running || checking) return;
    checking = queuedChanges(app.sql, FOLD_BACKLOG)
      .then((queued) => {
        if (queued >= FOLD_BACKLOG) refresh('backlog');
      })
      .catch((error: unknown) => logger.warn({ err: error }, 'statistics queue could not be read'))
      .finally(() => (checking = undefined));
  }, options.backlogCheckMs ?? FOLD_CHECK_MS);
  backlog.unref();
  return {
    async stop() {
      clearInterval(backlog);
      job.cancel();
      await checking;
      await Promise.all([backfill, running]);
    },
  };
}
