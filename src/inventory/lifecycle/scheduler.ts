import schedule from 'node-schedule';
import { trimAuditEvents } from '../../platform/audit/store.js';
import { trimExpiredSessions } from '../../platform/auth/sessions.js';
import { foldCiCounts } from '../configuration-items/counts.js';
import { sweepQuality } from '../quality/service.js';
import type { AppContext } from '../../context.js';
import { keepAllPartitions, PartitionRetries, type PartitionUpkeep } from '../../platform/db/partitions.js';
import type { Logger } from '../../platform/observability/logger.js';
import { partitionDefaultRows, partitionsDropped } from '../../platform/observability/metrics.js';
import { horizonsAt, trimChangeHistory } from '../../history/records/retention.js';
import { forgetClosedFolds } from '../../history/records/folds.js';
import { lifecycleSettings, sweepLifecycle, trimOutbox } from './sweep.js';

const OUTBOX_MAX_AGE_MS = 24 * 3_600_000;

/**
 * What a partition upkeep did, in the log and in `cinv_partition_default_rows`: at start-up and at
 * every sweep.
 */
export function reportPartitionUpkeep(logger: Logger, partitions: Record<string, PartitionUpkeep>): void {
  for (const [table, upkeep] of Object.entries(partitions)) {
    partitionDefaultRows.set({ table }, upkeep.defaultRows);
    if (upkeep.created.length > 0) logger.info({ table, partitions: upkeep.created }, 'partitions created');
    if (upkeep.deferred.length > 0) {
      logger.warn(
        { table, partitions: upkeep.deferred },
        'rows of these months are too many to move out of the default partition within CINV_STATEMENT_TIMEOUT: run `cinv migrate` to move them (the service keeps serving and writing meanwhile)',
      );
    }
    if (upkeep.movedFromDefault > 0 || upkeep.defaultRows > 0) {
      logger.warn(
        { table, moved: upkeep.movedFromDefault, left: upkeep.defaultRows },
        'rows were written outside the monthly partitions (a clock far off?): moved into their months, any left go with later sweeps',
      );
    }
  }
}

/**
 * One sweep: the months of partitioned history made ahead, lifecycle moves, outbox trimming, folding the CI count deltas, expiring audit events and
 * change history past their retention. Errors are logged, never thrown. With `retries`, a month
 * deferred by an earlier upkeep is tried again only when its retry is due.
 */
export async function runSweep(app: AppContext, retries?: PartitionRetries): Promise<void> {
  const { config, logger } = app;
  const started = Date.now();
  try {
    const now = app.now();
    // the months ahead exist before anything is written into them; rows that found no month are reported
    reportPartitionUpkeep(logger, await keepAllPartitions(app.sql, now, { retries }));
    const result = await sweepLifecycle(app.sql, lifecycleSettings(config), now);
    // with OpenSearch configured the indexer consumes the outbox; otherwise nothing would
    const trimmed = config.opensearchUrl ? 0 : await trimOutbox(app.sql, OUTBOX_MAX_AGE_MS, config.sweepBatchSize, now);
    // the CI count deltas of every write since the last sweep are added up, so list totals stay cheap
    const folded = await foldCiCounts(app.sql);
    // staleness moves with the clock; the quality counters fold, the day's trend and /metrics follow
    const quality = await sweepQuality(app, now).catch((error: unknown) => {
      logger.warn({ err: error }, 'the data-quality sweep failed');
      return {};
    });
    const auditTrimmed = await trimAuditEvents(
      app.sql,
      new Date(now.getTime() - config.auditRetentionMs),
      config.sweepBatchSize,
    );
    const history = await trimChangeHistory(app.sql, config.changeRetention, now, config.sweepBatchSize);
    const foldsClosed = await forgetClosedFolds(app.sql, now, config.sweepBatchSize);
    partitionsDropped.inc({ table: 'change_records' }, history.partitions.length);
    // the search copies follow the records; an unreachable cluster is tried again by the next sweep
    const searchExpired = await app.search.expire(horizonsAt(config.changeRetention, now)).catch((error: unknown) => {
      logger.warn({ err: error }, 'expiring search documents failed');
      return 0;
    });
    const sessionsEnded = await trimExpiredSessions(app.sql, now);
    logger.info(
      {
        ...result,
        outboxTrimmed: trimmed,
        countDeltasFolded: folded,
        ...quality,
        auditTrimmed,
        changesExpired: history.records,
        partitionsDropped: history.partitions,
        statsBucketsExpired: history.buckets,
        foldsClosed,
        searchDocumentsExpired: searchExpired,
        sessionsEnded,
        ms: Date.now() - started,
      },
      'lifecycle sweep done',
    );
  } catch (error) {
    logger.error({ err: error }, 'lifecycle sweep failed');
  }
}

/**
 * Schedules the sweep (CINV_SWEEP_SCHEDULE, cron syntax); overlapping runs are skipped. A deferred
 * month is tried again when the database's retry schedule says so, whoever deferred it.
 */
export function scheduleSweeps(app: AppContext): { stop(): Promise<void> } {
  const retries = new PartitionRetries(app.sql);
  let running: Promise<void> | undefined;
  const job = schedule.scheduleJob('cinv-lifecycle-sweep', app.config.sweepSchedule, () => {
    if (running) return;
    running = runSweep(app, retries).finally(() => {
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
