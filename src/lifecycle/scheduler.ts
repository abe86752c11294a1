import schedule from 'node-schedule';
import type { AppContext } from '../context.js';
import { lifecycleSettings, sweepLifecycle, trimOutbox } from './sweep.js';

const OUTBOX_MAX_AGE_MS = 24 * 3_600_000;

/** One sweep: lifecycle moves, then outbox trimming. Errors are logged, never thrown. */
export async function runSweep(app: AppContext): Promise<void> {
  const { config, logger } = app;
  const started = Date.now();
  try {
    const now = app.now();
    const result = await sweepLifecycle(app.sql, lifecycleSettings(config), now);
    // with OpenSearch configured the indexer consumes the outbox; otherwise nothing would
    const trimmed = config.opensearchUrl ? 0 : await trimOutbox(app.sql, OUTBOX_MAX_AGE_MS, config.sweepBatchSize, now);
    logger.info({ ...result, outboxTrimmed: trimmed, ms: Date.now() - started }, 'lifecycle sweep done');
  } catch (error) {
    logger.error({ err: error }, 'lifecycle sweep failed');
  }
}

/** Schedules the sweep (CINV_SWEEP_SCHEDULE, cron syntax); overlapping runs are skipped. */
export function scheduleSweeps(app: AppContext): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const job = schedule.scheduleJob('cinv-lifecycle-sweep', app.config.sweepSchedule, () => {
    if (running) return;
    running = runSweep(app).finally(() => {
      running = undefined;
    });
  });
  if (!job) throw new Error(`CINV_SWEEP_SCHEDULE: "${app.config.sweepSchedule}" is not a valid cron expression`);
  return {
    async stop() {
      job.cancel();
      await running;
    },
  };
}
