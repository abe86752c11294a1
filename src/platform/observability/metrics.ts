import { collectDefaultMetrics, Counter, Gauge, Histogram, register } from 'prom-client';

let defaultsCollected = false;

/** Process metrics are collected once per process, whatever number of apps it builds (tests). */
export function enableProcessMetrics(): void {
  if (defaultsCollected) return;
  defaultsCollected = true;
  collectDefaultMetrics({ prefix: 'cinv_' });
}

export const httpRequestDuration = new Histogram({
  name: 'cinv_http_request_duration_seconds',
  help: 'HTTP request duration by method, route template and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
});

export const cisReconciled = new Counter({
  name: 'cinv_cis_reconciled_total',
  help: 'Configuration items processed by the reconciler, by outcome',
  labelNames: ['outcome'] as const,
});

export const changesWritten = new Counter({
  name: 'cinv_changes_written_total',
  help: 'Change records written',
});

export const changeShapingSeconds = new Counter({
  name: 'cinv_change_shaping_seconds_total',
  help: "Time the write path spent applying the tenants' change rules to the records it wrote",
});

export const partitionDefaultRows = new Gauge<'table'>({
  name: 'cinv_partition_default_rows',
  help: 'Rows the default partition held after the last sweep (rows whose month had no partition); should be 0',
  labelNames: ['table'],
});

export const partitionsDropped = new Counter<'table'>({
  name: 'cinv_partitions_dropped_total',
  help: 'Monthly partitions dropped whole by retention',
  labelNames: ['table'],
});

export const metricsRegistry = register;

/**
 * Why a request was answered 503 at once: `in_flight` (CINV_MAX_IN_FLIGHT reached),
 * `event_loop_delay` (CINV_SHED_EVENT_LOOP_DELAY exceeded), `database_wait` (CINV_SHED_DB_WAIT
 * exceeded), `exports` (CINV_MAX_EXPORTS reached), `ndjson_pushes` (CINV_MAX_NDJSON_PUSHES reached),
 * `long_polls` (CINV_MAX_LONG_POLLS change-feed reads waiting).
 */
export type ShedReason =
  'in_flight' | 'event_loop_delay' | 'database_wait' | 'exports' | 'ndjson_pushes' | 'long_polls';

export const requestsShed = new Counter<'reason'>({
  name: 'cinv_http_requests_shed_total',
  help: 'Requests answered 503 at once instead of being queued, by reason: in_flight, event_loop_delay, database_wait, exports, ndjson_pushes, long_polls',
  labelNames: ['reason'] as const,
});

export const eventLoopDelaySeen = new Gauge({
  name: 'cinv_http_event_loop_delay_seconds',
  help: 'Mean event-loop delay over the last half second, as load shedding compares it with CINV_SHED_EVENT_LOOP_DELAY',
});

export const collectionRuns = new Counter({
  name: 'cinv_collection_runs_total',
  help: 'Collection runs ended, by collector type and outcome (succeeded, failed, cancelled)',
  labelNames: ['collector_type', 'outcome'] as const,
});

export const collectionDuration = new Histogram({
  name: 'cinv_collection_run_duration_seconds',
  help: 'Duration of collection runs by collector type',
  labelNames: ['collector_type'] as const,
  buckets: [0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800],
});

export const recordsCollected = new Counter({
  name: 'cinv_records_collected_total',
  help: 'Records collected by collection runs, by collector type',
  labelNames: ['collector_type'] as const,
});

export const watchesActive = new Gauge({
  name: 'cinv_collection_watches',
  help: 'Hybrid sources this process is watching between lists',
});

export const watchEvents = new Counter({
  name: 'cinv_collection_watch_events_total',
  help: 'Changes received from watches (upserts and deletions), by collector type',
  labelNames: ['collector_type'] as const,
});

export const sourcesDueNotRunning = new Gauge({
  name: 'cinv_collection_sources_due',
  help: 'Sources queued for collection and not running yet (scheduler lag), as of the last scheduling round',
});

export const subscriptionDeliveries = new Counter<'sink' | 'outcome'>({
  name: 'cinv_subscription_deliveries_total',
  help: 'Attempts to deliver a subscription batch, by sink type and outcome (delivered, failed, dead, gone)',
  labelNames: ['sink', 'outcome'] as const,
});

export const subscriptionDeliveryLag = new Histogram<'sink'>({
  name: 'cinv_subscription_delivery_lag_seconds',
  help: "From the commit of a batch's first change record to the batch delivered, by sink type",
  labelNames: ['sink'] as const,
  buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600, 86_400],
});

export const subscriptionDeadLetters = new Counter<'sink'>({
  name: 'cinv_subscription_dead_letters_total',
  help: 'Subscription batches given up (their retry window, CINV_SUBSCRIPTION_RETRY_WINDOW, ran out, or retention removed their records first), by sink type',
  labelNames: ['sink'] as const,
});

export const replicaLag = new Gauge({
  name: 'cinv_replica_lag_seconds',
  help: 'How far the read replica (DATABASE_REPLICA_URL) is behind the primary; -1 while it cannot be reached or does not replay',
});

export const analystReads = new Counter<'served_by'>({
  name: 'cinv_analyst_reads_total',
  help: 'Analyst reads (search, statistics, history, exports, the inventory of the past) by the database that served them: replica or primary',
  labelNames: ['served_by'] as const,
});

export const qualityScore = new Gauge<'measure' | 'ci_type' | 'source'>({
  name: 'cinv_quality_score',
  help: 'Data-quality score (0-100) per measure, CI type and source, and `overall`, as of the last sweep (docs/quality.md)',
  labelNames: ['measure', 'ci_type', 'source'],
});

export const qualityFailing = new Gauge<'measure' | 'ci_type' | 'source'>({
  name: 'cinv_quality_failing',
  help: 'Active CIs failing each data-quality measure (rule results for `rules`), per CI type and source, as of the last sweep',
  labelNames: ['measure', 'ci_type', 'source'],
});

export const qualityBelowThreshold = new Gauge<'measure' | 'ci_type' | 'source'>({
  name: 'cinv_quality_below_threshold',
  help: "1 where a data-quality score is below the tenant's alert_below setting, per measure (and `overall`), CI type and source",
  labelNames: ['measure', 'ci_type', 'source'],
});
