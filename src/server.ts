import type { Server } from 'node:http';
import { createApp } from './app.js';
import { AuditLog } from './platform/audit/log.js';
import { CollectionWorker } from './collection/collectors/runs/worker.js';
import { RateLimits } from './platform/http/rate-limit.js';
import { SingleSignOn } from './platform/auth/sso.js';
import { installBootstrapKey } from './platform/auth/api-keys.js';
import { principalCacheFor } from './platform/auth/principal-cache.js';
import type { Config } from './platform/config/config.js';
import type { AppContext } from './context.js';
import { connectServer, guardDatabase, poolSettings, type Database } from './platform/db/database.js';
import { AnalystReads } from './operations/read-routing/analyst-reads.js';
import { openDatabase } from './platform/db/open.js';
import { migrate } from './platform/db/migrate.js';
import { pendingPartitionMigrations } from './platform/db/partition-migration.js';
import { keepAllPartitions, PartitionRetries } from './platform/db/partitions.js';
import { answerClientErrors } from './platform/http/client-errors.js';
import { reportPartitionUpkeep, scheduleSweeps } from './inventory/lifecycle/scheduler.js';
import { createSearchBackend } from './history/search/backends.js';
import { scheduleSearchJobs } from './history/changes/scheduler.js';
import { SubscriptionDelivery } from './history/subscriptions/delivery.js';
import type { Logger } from './platform/observability/logger.js';
import { DEFAULT_TENANT_ID } from './platform/tenants.js';

export interface RunOptions {
  api: boolean;
  scheduler: boolean;
  /** Run the outbox indexer (only when OPENSEARCH_URL is set). */
  indexer: boolean;
}

export interface Running {
  server: Server | undefined;
  stop(): Promise<void>;
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

/** Opens the database, migrates, installs the bootstrap key, then serves and/or schedules. */
export async function run(config: Config, logger: Logger, options: RunOptions): Promise<Running> {
  const database: Database = await openDatabase(config, { joinEmbedded: false });
  const replica = config.databaseReplicaUrl
    ? guardDatabase(connectServer(config.databaseReplicaUrl, poolSettings(config)), poolSettings(config))
    : undefined;
  const now = () => new Date();
  const app: AppContext = {
    sql: database.sql,
    database: database.kind,
    gate: database.gate,
    health: database.health,
    search: createSearchBackend(database.sql, config, now),
    audit: new AuditLog(database.sql, logger, now),
    limits: new RateLimits(config, logger),
    sso: config.oidc ? new SingleSignOn(config.oidc, logger) : undefined,
    config,
    logger,
    now,
  };
  const analystReads = replica ? new AnalystReads(app, replica) : undefined;
  app.analystReads = analystReads;
  try {
    const applied = await migrate(database.sql);
    if (applied.length > 0) logger.info({ versions: applied }, 'migrations applied');
    // the months writes go to exist before serving; older months in the default partitions are the sweep's
    reportPartitionUpkeep(
      logger,
      await keepAllPartitions(database.sql, app.now(), {
        aheadOnly: true,
        retries: new PartitionRetries(database.sql),
      }),
    );
    const moving = await pendingPartitionMigrations(database.sql);
    if (moving.length > 0) {
      logger.warn(
        { tables: moving.map((m) => m.table_name) },
        'existing rows wait to move into monthly partitions: run `cinv migrate` (the service keeps serving meanwhile); until then expired history is deleted row by row',
      );
    }
    if (
      config.bootstrapAdminKey &&
      (await installBootstrapKey(database.sql, config.secret, DEFAULT_TENANT_ID, config.bootstrapAdminKey))
    ) {
      logger.info('bootstrap admin key installed');
    }
    const [live] = await database.sql<
      { keys: number }[]
    >`select count(*)::int as keys from api_keys where revoked_at is null`;
    if (live?.keys === 0)
      logger.warn('no API keys exist yet: create one with `npm run cinv -- keys create --tier adm --name admin`');
  } catch (error) {
    await Promise.all([database.close(), replica?.close()]);
    throw error;
  }
  analystReads?.start();
  const principals = options.api ? await principalCacheFor(database, config.keyCacheMs) : undefined;
  app.principals = principals?.cache;

  const sweeps = options.scheduler ? scheduleSweeps(app) : undefined;
  const worker = options.scheduler
    ? new CollectionWorker(app, {
        concurrency: config.workerConcurrency,
        leaseMs: config.workerLeaseMs,
        pollMs: config.workerPollMs,
        watches: config.workerWatches,
      })
    : undefined;
  worker?.start();
  const searchJobs = options.scheduler ? scheduleSearchJobs(app) : undefined;
  const deliveries = options.scheduler ? new SubscriptionDelivery(app) : undefined;
  deliveries?.start();
  // Node.js 20 is past its end of life: cinv still runs there, but says so once at start
  const major = Number(process.versions.node.split('.')[0]);
  if (major < 22)
    logger.warn(
      { node: process.versions.node },
      `Node.js ${major} is not supported (past its end of life): run cinv on Node.js 22 or 24`,
    );
  const indexer = options.indexer && config.opensearchUrl ? await startIndexer(app, config.opensearchUrl) : undefined;
  let server: Server | undefined;
  if (options.api) {
    const koa = createApp(app);
    server = await new Promise<Server>((resolve, reject) => {
      const listening = koa.listen(config.port, config.host, () => resolve(listening)).once('error', reject);
    });
    answerClientErrors(server);
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : config.port;
    const origin = `http://${config.host === '0.0.0.0' ? 'localhost' : config.host}:${port}`;
    logger.info(
      {
        port,
        database: database.kind,
        dataDir: database.kind === 'embedded' ? config.dataDir : undefined,
        readReplica: replica !== undefined,
      },
      `cinv listening on ${origin}: open ${origin}/ui/ and sign in${config.oidc ? ' with your company account or' : ' with'} an API key`,
    );
  }

  let stopping: Promise<void> | undefined;
  return {
    server,
    stop: () =>
      (stopping ??= (async () => {
        if (server) {
          const closing = new Promise<void>((resolve) => server!.close(() => resolve()));
          server.closeIdleConnections();
          await closing;
        }
        await Promise.all([
          sweeps?.stop(),
          searchJobs?.stop(),
          indexer?.stop(),
          worker?.stop(),
          deliveries?.stop(),
          principals?.stop(),
        ]);
        // after the last request: what it audited is written before the pool closes
        await app.audit.close();
        await app.limits.close();
        await analystReads?.stop();
        await database.close();
      })()),
  };
}
