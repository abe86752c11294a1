import { CollectionWorker } from './collection/collectors/runs/worker.js';
import type { AppContext } from './context.js';
import { scheduleSearchJobs } from './history/changes/scheduler.js';
import { SubscriptionDelivery } from './history/subscriptions/delivery.js';
import { IdentityWorker } from './inventory/identities/service.js';
import { QualityWorker } from './inventory/quality/service.js';
import { ChangeRulesWorker } from './history/change-rules/service.js';
import { scheduleSweeps } from './inventory/lifecycle/scheduler.js';
import { startedBy, type BackgroundWorker } from './platform/workers.js';

export interface WorkerOptions {
  /** The collection worker, the sweeps, the search jobs and subscription delivery. */
  scheduler: boolean;
  /** The outbox indexer; it runs only when OPENSEARCH_URL is set. */
  indexer: boolean;
}

/** Starts the outbox indexer of this process; it wakes on NOTIFY on a PostgreSQL server. */
async function startIndexer(app: AppContext, url: string): Promise<{ stop(): Promise<void> }> {
  const [{ OutboxIndexer }, { createOpenSearchClient }] = await Promise.all([
    import('../indexer/indexer.js'),
    import('./history/search/opensearch-index.js'),
  ]);
  const { config } = app;
  const indexer = new OutboxIndexer(
    app.sql,
    createOpenSearchClient(url),
    {
      alias: config.opensearchIndex,
      batchSize: config.indexerBatchSize,
      maxAttempts: config.indexerMaxAttempts,
      pollMs: config.indexerPollMs,
      listen: app.database === 'postgres',
    },
    app.logger,
  );
  await indexer.start();
  app.logger.info({ alias: config.opensearchIndex }, 'outbox indexer started');
  return indexer;
}

/**
 * The background workers a process runs beside (or instead of) the API, in the order they start.
 * `cinv serve` runs them all, `cinv worker` all but the indexer, `cinv indexer` the indexer alone and
 * `cinv api` none; several processes may run them at once (runs are leased, sweeps and deliveries
 * lock what they work on).
 */
export function backgroundWorkers(app: AppContext, options: WorkerOptions): BackgroundWorker[] {
  const { config } = app;
  const workers: BackgroundWorker[] = [];
  if (options.scheduler) {
    workers.push(
      startedBy('lifecycle sweeps', () => scheduleSweeps(app)),
      new NamedWorker(
        'collection',
        new CollectionWorker(app, {
          concurrency: config.workerConcurrency,
          leaseMs: config.workerLeaseMs,
          pollMs: config.workerPollMs,
          watches: config.workerWatches,
        }),
      ),
      startedBy('search jobs', () => scheduleSearchJobs(app)),
      new NamedWorker('subscription delivery', new SubscriptionDelivery(app)),
      new NamedWorker('identities', new IdentityWorker(app, config.identityPollMs)),
      new NamedWorker('data quality', new QualityWorker(app, config.qualityPollMs)),
      new NamedWorker('change rules', new ChangeRulesWorker(app, config.changeRulesPollMs)),
    );
  }
  const opensearchUrl = config.opensearchUrl;
  if (options.indexer && opensearchUrl)
    workers.push(startedBy('outbox indexer', () => startIndexer(app, opensearchUrl)));
  return workers;
}

/** Names a worker class that already starts and stops itself. */
class NamedWorker implements BackgroundWorker {
  constructor(
    readonly name: string,
    private readonly worker: { start(): void; stop(): Promise<void> },
  ) {}

  start(): void {
    this.worker.start();
  }

  stop(): Promise<void> {
    return this.worker.stop();
  }
}
