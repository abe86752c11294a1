import type { Server } from 'node:http';
import { createApp } from './app.js';
import type { AppContext } from './context.js';
import { createSearchBackend } from './history/search/backends.js';
import { reportPartitionUpkeep } from './inventory/lifecycle/scheduler.js';
import { AnalystReads } from './operations/read-routing/analyst-reads.js';
import { AuditLog } from './platform/audit/log.js';
import { installBootstrapKey } from './platform/auth/api-keys.js';
import { principalCacheFor } from './platform/auth/principal-cache.js';
import { SingleSignOn } from './platform/auth/sso.js';
import type { Config } from './platform/config/config.js';
import { connectServer, guardDatabase, poolSettings, type Database } from './platform/db/database.js';
import { migrate } from './platform/db/migrate.js';
import { openDatabase } from './platform/db/open.js';
import { pendingPartitionMigrations } from './platform/db/partition-migration.js';
import { keepAllPartitions, PartitionRetries } from './platform/db/partitions.js';
import { answerClientErrors } from './platform/http/client-errors.js';
import { RateLimits } from './platform/http/rate-limit.js';
import type { Logger } from './platform/observability/logger.js';
import { DEFAULT_TENANT_ID } from './platform/tenants.js';
import { startWorkers } from './platform/workers.js';
import { backgroundWorkers, type WorkerOptions } from './workers.js';

export interface RunOptions extends WorkerOptions {
  api: boolean;
}

export interface Running {
  server: Server | undefined;
  stop(): Promise<void>;
}

/** The services every handler, service and worker of this process is handed. */
function contextOf(config: Config, logger: Logger, database: Database): AppContext {
  const now = () => new Date();
  return {
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
}

/** Migrates, makes the months writes go to, installs the bootstrap key: what must hold before serving. */
async function prepareDatabase(app: AppContext): Promise<void> {
  const { sql, config, logger } = app;
  const applied = await migrate(sql);
  if (applied.length > 0) logger.info({ versions: applied }, 'migrations applied');
  // older months in the default partitions are the sweep's
  reportPartitionUpkeep(
    logger,
    await keepAllPartitions(sql, app.now(), { aheadOnly: true, retries: new PartitionRetries(sql) }),
  );
  const moving = await pendingPartitionMigrations(sql);
  if (moving.length > 0) {
    logger.warn(
      { tables: moving.map((m) => m.table_name) },
      'existing rows wait to move into monthly partitions: run `cinv migrate` (the service keeps serving meanwhile); until then expired history is deleted row by row',
    );
  }
  if (
    config.bootstrapAdminKey &&
    (await installBootstrapKey(sql, config.secret, DEFAULT_TENANT_ID, config.bootstrapAdminKey))
  ) {
    logger.info('bootstrap admin key installed');
  }
  const [live] = await sql<{ keys: number }[]>`select count(*)::int as keys from api_keys where revoked_at is null`;
  if (live?.keys === 0)
    logger.warn('no API keys exist yet: create one with `npm run cinv -- keys create --tier adm --name admin`');
}

/** Node.js 20 is past its end of life: cinv still runs there, but says so once at start. */
function warnOfOldNode(logger: Logger): void {
  const major = Number(process.versions.node.split('.')[0]);
  if (major < 22)
    logger.warn(
      { node: process.versions.node },
      `Node.js ${major} is not supported (past its end of life): run cinv on Node.js 22 or 24`,
    );
}

/** Serves the API on the configured address and says where to open it. */
async function listen(app: AppContext, replicated: boolean): Promise<Server> {
  const { config, logger } = app;
  const koa = createApp(app);
  const server = await new Promise<Server>((resolve, reject) => {
    const listening = koa.listen(config.port, config.host, () => resolve(listening)).once('error', reject);
  });
  answerClientErrors(server);
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const origin = `http://${config.host === '0.0.0.0' ? 'localhost' : config.host}:${port}`;
  logger.info(
    {
      port,
      database: app.database,
      dataDir: app.database === 'embedded' ? config.dataDir : undefined,
      readReplica: replicated,
    },
    `cinv listening on ${origin}: open ${origin}/ui/ and sign in${config.oidc ? ' with your company account or' : ' with'} an API key`,
  );
  return server;
}

/** Stops taking requests, lets those in flight finish, and closes the idle keep-alive connections. */
async function close(server: Server): Promise<void> {
  const closing = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  await closing;
}

/** Opens the database, migrates, installs the bootstrap key, then serves and/or runs the background workers. */
export async function run(config: Config, logger: Logger, options: RunOptions): Promise<Running> {
  const database: Database = await openDatabase(config, { joinEmbedded: false });
  const replica = config.databaseReplicaUrl
    ? guardDatabase(connectServer(config.databaseReplicaUrl, poolSettings(config)), poolSettings(config))
    : undefined;
  const app = contextOf(config, logger, database);
  const analystReads = replica ? new AnalystReads(app, replica) : undefined;
  app.analystReads = analystReads;
  try {
    await prepareDatabase(app);
  } catch (error) {
    await Promise.all([database.close(), replica?.close()]);
    throw error;
  }
  analystReads?.start();
  const principals = options.api ? await principalCacheFor(database, config.keyCacheMs) : undefined;
  app.principals = principals?.cache;
  warnOfOldNode(logger);
  const workers = await startWorkers(backgroundWorkers(app, options), logger);
  const server = options.api ? await listen(app, replica !== undefined) : undefined;

  let stopping: Promise<void> | undefined;
  const stop = async () => {
    if (server) await close(server);
    await Promise.all([workers.stop(), principals?.stop()]);
    // after the last request: what it audited is written before the pool closes
    await app.audit.close();
    await app.limits.close();
    await analystReads?.stop();
    await database.close();
  };
  return { server, stop: () => (stopping ??= stop()) };
}
