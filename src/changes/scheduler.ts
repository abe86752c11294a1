import schedule from 'node-schedule';
import type { AppContext } from '../context.js';
import { backfillSearchDocuments } from '../search/backfill.js';

/**
 * The search jobs of a process that runs scheduled work (`serve`, `worker`): once at start, search
 * documents for records that have none; at start and on CINV_STATS_REFRESH_SCHEDULE, the
 * statistics refresh (a run still going when the next is due is not doubled). Errors are logged.
 */
export function scheduleSearchJobs(app: AppContext): { stop(): Promise<void> } {
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
  const refresh = () => {
    if (running) return;
    running = app.search
      .refresh()
      .then(
        (result) => logger.info({ rows: result.rows, ms: result.took_ms }, 'statistics refreshed'),
        (error: unknown) => logger.error({ err: error }, 'statistics refresh failed'),
      )
      .finally(() => {
        running = undefined;
      });
  };
  const job = schedule.scheduleJob('cinv-stats-refresh', app.config.statsRefreshSchedule, refresh);
  if (!job) throw new Error(`CINV_STATS_REFRESH_SCHEDULE: "${app.config.statsRefreshSchedule}" is not a valid cron expression`);
  refresh();
  return {
    async stop() {
      job.cancel();
      await Promise.all([backfill, running]);
    },
  };
}
