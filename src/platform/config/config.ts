import path from 'node:path';
import { parseAllowedHosts } from '../net/endpoint.js';
import { indexName, opensearchUrl, redisUrl, replicaUrl } from './endpoints.js';
import { boolean, ConfigError, duration, durationOrOff, integer, type Env } from './env.js';
import { oidcConfig, type OidcConfig } from './oidc.js';
import { rateLimitOverrides, type RateLimitOverride } from './rate-limits.js';
import { changeRetention, type ChangeRetention } from './retention.js';
import { parseMasterKey, resolveMasterKey, resolveSecret } from './secrets.js';

export interface Config {
  port: number;
  host: string;
  /**
   * Whether `X-Forwarded-*` headers are believed (CINV_TRUST_PROXY=true, behind a reverse proxy):
   * they then give the client's address and protocol, so `Secure` cookies work behind TLS.
   */
  trustProxy: boolean;
  /** Real PostgreSQL connection string; undefined means the embedded database. */
  databaseUrl: string | undefined;
  databasePoolSize: number;
  /** A streaming replica of the same database for analyst reads; undefined: the primary serves them. */
  databaseReplicaUrl: string | undefined;
  /** Replay lag beyond which analyst reads fall back to the primary. */
  replicaMaxLagMs: number;
  /** How long a request waits for a pooled connection before it is answered 503. */
  dbAcquireTimeoutMs: number;
  /** Server-side limit of one statement on request paths. */
  statementTimeoutMs: number;
  /** The same limit for ingest batches, CSV export batches and migrations' neighbours. */
  bulkStatementTimeoutMs: number;
  /** Requests served at once by this process; more are answered 503 at once. */
  maxInFlight: number;
  /** CSV exports streamed at once by this process; more are answered 503 at once. */
  maxExports: number;
  /** NDJSON pushes taken at once by this process; more are answered 503 at once. */
  maxNdjsonPushes: number;
  /** Change-feed long polls this process keeps waiting at once; more are answered 503 at once. */
  maxLongPolls: number;
  /** Change-feed long polls one principal keeps waiting at once; more are answered 429 at once. */
  maxLongPollsPerPrincipal: number;
  /** Mean event-loop delay beyond which requests are shed; 0: never; undefined: the default for the database. */
  shedEventLoopDelayMs: number | undefined;
  /** Wait for a database connection beyond which requests are shed; 0: never; undefined: the default for the database. */
  shedDatabaseWaitMs: number | undefined;
  dataDir: string;
  secret: string;
  bootstrapAdminKey: string | undefined;
  logLevel: string;
  bodyLimitBytes: number;
  inactiveAfterMs: number;
  archiveInactiveAfterMs: number;
  archiveRetentionMs: number;
  sweepSchedule: string;
  sweepBatchSize: number;
  reconcileBatchSize: number;
  /**
   * Whether a reconcile of more than one batch writes the source's two parts in parallel lanes,
   * one connection each (CINV_RECONCILE_LANES; a PostgreSQL server with a pool of three
   * connections or more only: the embedded database has one session).
   */
  reconcileLanes: boolean;
  /** Exact counts beyond this take the planner's estimate instead (`total_exact: false`). */
  countTimeoutMs: number;
  /** Statistics over an explicit window that take longer answer 422 (narrow the window). */
  statsTimeoutMs: number;
  /** A query-language query that takes longer answers 422 (CINV_QUERY_TIMEOUT). */
  queryTimeoutMs: number;
  /**
   * A query the planner expects to read a table of more rows than this without an index is
   * refused unless the caller asks for it and may run heavy queries (CINV_QUERY_SCAN_ROWS).
   */
  queryScanRows: number;
  statsRefreshSchedule: string;
  /** OpenSearch for change search and explicit-window statistics; undefined: PostgreSQL does it. */
  opensearchUrl: string | undefined;
  /** The alias the change-record indices sit behind. */
  opensearchIndex: string;
  indexerBatchSize: number;
  /** Attempts after which a row that fails permanently (a mapping error) is parked. */
  indexerMaxAttempts: number;
  /** How often the indexer looks at the outbox when no notification wakes it. */
  indexerPollMs: number;
  /** Audit events older than this are removed by the sweep. */
  auditRetentionMs: number;
  /** How long change records are kept; null keeps them forever (CINV_CHANGE_RETENTION=0). */
  changeRetention: ChangeRetention;
  /** How long a sign-in session lasts without use; every use moves it on (rolling). */
  sessionTtlMs: number;
  /**
   * How long a server keeps a used key's principal at most (CINV_KEY_CACHE); every change to keys,
   * users, grants or scopes drops it sooner. 0: every request reads its key from the database.
   */
  keyCacheMs: number;
  /** Single sign-on; undefined when CINV_OIDC_ISSUER is unset. */
  oidc: OidcConfig | undefined;
  /** Requests per minute per credential (the bucket's refill rate). */
  rateLimit: number;
  /** Requests a credential may make at once before the rate applies (the bucket's capacity). */
  rateBurst: number;
  /**
   * Requests per minute of a signed-in browser (the web interface), counted apart from the key or
   * user behind it: a page draws several views at once, and its person should not be refused for it.
   */
  sessionRateLimit: number;
  sessionRateBurst: number;
  /** Lower (or higher) limits for some paths: `[{prefix, method?, limit, burst}]`, longest prefix first. */
  rateLimitOverrides: RateLimitOverride[];
  /** Limits shared by every replica when set; in-process otherwise. */
  redisUrl: string | undefined;
  /** Hosts (`*.suffix` names) and networks (CIDR) source endpoints are restricted to; empty: any but metadata. */
  sourceAllowedHosts: string[];
  /** Sources may reach loopback, private and other non-public addresses (never link-local or metadata ones). */
  sourceAllowPrivate: boolean;
  /** Wraps the tenants' data keys (CINV_MASTER_KEY); undefined: credentials cannot be stored. */
  masterKey: Buffer | undefined;
  /** Collection runs one worker executes at once. */
  workerConcurrency: number;
  /** How long a worker's claim on a run holds without renewal. */
  workerLeaseMs: number;
  /** How often a worker looks for due sources. */
  workerPollMs: number;
  /** How often the identity worker reads the change feed for CIs to resolve (CINV_IDENTITY_POLL_INTERVAL). */
  identityPollMs: number;
  /** How often the quality worker drains the queue of CIs to check (CINV_QUALITY_POLL_INTERVAL). */
  qualityPollMs: number;
  /** How often the change-rules worker looks for re-applications to do (CINV_CHANGE_RULES_POLL_INTERVAL). */
  changeRulesPollMs: number;
  /** Hybrid sources one worker watches at once, beside its concurrent runs. */
  workerWatches: number;
  /** The master key before a rotation, still accepted for unwrapping (CINV_MASTER_KEY_PREVIOUS). */
  previousMasterKey: Buffer | undefined;
  /** How long a subscription's failing batch is retried before it is dead-lettered (CINV_SUBSCRIPTION_RETRY_WINDOW). */
  subscriptionRetryWindowMs: number;
  /** How long a webhook receiver may take to answer (CINV_WEBHOOK_TIMEOUT). */
  webhookTimeoutMs: number;
  /** The most candidate CIs one page of an inventory diff examines before it answers short, with a cursor (CINV_DIFF_PAGE_EXAMINE). */
  diffPageExamine: number;
  /** At most this many change records per delivered batch (CINV_SUBSCRIPTION_BATCH_RECORDS). */
  subscriptionBatchRecords: number;
  /** At most about this many bytes per delivered batch; one record more never splits (CINV_SUBSCRIPTION_BATCH_BYTES). */
  subscriptionBatchBytes: number;
  /** How often the delivery job looks for subscriptions with work (CINV_SUBSCRIPTION_POLL). */
  subscriptionPollMs: number;
  /** How long a process holds a subscription without renewing it; another takes over after (CINV_SUBSCRIPTION_LEASE). */
  subscriptionLeaseMs: number;
}

export { ConfigError } from './env.js';
export type { ChangeRetention, OidcConfig, RateLimitOverride };

/**
 * Which database the configuration names and the port its server listens on, read without touching
 * the data directory (loadConfig writes its secret and master key there when they are missing).
 */
export function databaseTarget(env: Env = process.env): Pick<Config, 'databaseUrl' | 'dataDir' | 'port'> {
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL', 'must start with postgres:// or postgresql://');
  }
  return {
    databaseUrl,
    dataDir: path.resolve(env.CINV_DATA_DIR || './data'),
    port: integer(env, 'PORT', 8080, 0, 65535),
  };
}

/** Reads and validates the whole configuration; a bad variable is named in the thrown error. */
export function loadConfig(env: Env = process.env): Config {
  const { databaseUrl, dataDir, port } = databaseTarget(env);
  const bootstrapAdminKey = env.CINV_BOOTSTRAP_ADMIN_KEY || undefined;
  const databasePoolSize = integer(env, 'CINV_DB_POOL_SIZE', 10, 1, 200);
  // the parts are read in this order: of several bad variables, the first is the one reported
  return {
    port,
    host: env.HOST || '0.0.0.0',
    trustProxy: env.CINV_TRUST_PROXY === 'true',
    ...databaseSettings(env, databaseUrl, databasePoolSize),
    ...loadLimits(env),
    dataDir,
    secret: resolveSecret(env, dataDir, !databaseUrl),
    bootstrapAdminKey,
    logLevel: env.LOG_LEVEL || 'info',
    bodyLimitBytes: integer(env, 'CINV_BODY_LIMIT_BYTES', 10 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    ...writeSettings(env, databaseUrl, databasePoolSize),
    ...searchSettings(env),
    auditRetentionMs: duration(env, 'CINV_AUDIT_RETENTION', '365d'),
    changeRetention: changeRetention(env),
    ...accessSettings(env),
    sourceAllowedHosts: parseAllowedHosts(env.CINV_SOURCE_ALLOWED_HOSTS),
    sourceAllowPrivate: boolean(env, 'CINV_SOURCE_ALLOW_PRIVATE', true),
    masterKey: resolveMasterKey(env, dataDir, !databaseUrl),
    workerConcurrency: integer(env, 'CINV_WORKER_CONCURRENCY', 2, 1, 256),
    workerLeaseMs: duration(env, 'CINV_WORKER_LEASE', '60s'),
    ...deliverySettings(env),
    workerPollMs: duration(env, 'CINV_WORKER_POLL_INTERVAL', '5s'),
    identityPollMs: duration(env, 'CINV_IDENTITY_POLL_INTERVAL', '2s'),
    qualityPollMs: duration(env, 'CINV_QUALITY_POLL_INTERVAL', '2s'),
    changeRulesPollMs: duration(env, 'CINV_CHANGE_RULES_POLL_INTERVAL', '5s'),
    workerWatches: integer(env, 'CINV_WORKER_WATCHES', 100, 0, 10_000),
    previousMasterKey: env.CINV_MASTER_KEY_PREVIOUS
      ? parseMasterKey('CINV_MASTER_KEY_PREVIOUS', env.CINV_MASTER_KEY_PREVIOUS)
      : undefined,
  };
}

/** The database, its replica and how long a request or a bulk statement may wait on them. */
function databaseSettings(
  env: Env,
  databaseUrl: string | undefined,
  databasePoolSize: number,
): Pick<
  Config,
  | 'databaseUrl'
  | 'databasePoolSize'
  | 'databaseReplicaUrl'
  | 'replicaMaxLagMs'
  | 'dbAcquireTimeoutMs'
  | 'statementTimeoutMs'
  | 'bulkStatementTimeoutMs'
> {
  return {
    databaseUrl,
    databasePoolSize,
    databaseReplicaUrl: replicaUrl(env, databaseUrl),
    replicaMaxLagMs: duration(env, 'CINV_REPLICA_MAX_LAG', '30s'),
    dbAcquireTimeoutMs: duration(env, 'CINV_DB_ACQUIRE_TIMEOUT', '2s'),
    statementTimeoutMs: duration(env, 'CINV_STATEMENT_TIMEOUT', '15s'),
    bulkStatementTimeoutMs: duration(env, 'CINV_BULK_STATEMENT_TIMEOUT', '10m'),
  };
}

/** How much this process takes on at once before it answers 503 (or 429), and when it sheds load. */
function loadLimits(
  env: Env,
): Pick<
  Config,
  | 'maxInFlight'
  | 'maxExports'
  | 'maxNdjsonPushes'
  | 'maxLongPolls'
  | 'maxLongPollsPerPrincipal'
  | 'shedEventLoopDelayMs'
  | 'shedDatabaseWaitMs'
> {
  return {
    maxInFlight: integer(env, 'CINV_MAX_IN_FLIGHT', 64, 1, 100_000),
    maxExports: integer(env, 'CINV_MAX_EXPORTS', 2, 1, 1000),
    maxNdjsonPushes: integer(env, 'CINV_MAX_NDJSON_PUSHES', 2, 1, 1000),
    maxLongPolls: integer(env, 'CINV_MAX_LONG_POLLS', 64, 1, 100_000),
    maxLongPollsPerPrincipal: integer(env, 'CINV_MAX_LONG_POLLS_PER_PRINCIPAL', 4, 1, 1000),
    shedEventLoopDelayMs: durationOrOff(env, 'CINV_SHED_EVENT_LOOP_DELAY'),
    shedDatabaseWaitMs: durationOrOff(env, 'CINV_SHED_DB_WAIT'),
  };
}

/** The lifecycle sweep and the reconciler: how CIs age, and in what batches records are written. */
function writeSettings(
  env: Env,
  databaseUrl: string | undefined,
  databasePoolSize: number,
): Pick<
  Config,
  | 'inactiveAfterMs'
  | 'archiveInactiveAfterMs'
  | 'archiveRetentionMs'
  | 'sweepSchedule'
  | 'sweepBatchSize'
  | 'reconcileBatchSize'
  | 'reconcileLanes'
> {
  return {
    inactiveAfterMs: duration(env, 'CINV_INACTIVE_AFTER', '24h'),
    archiveInactiveAfterMs: duration(env, 'CINV_ARCHIVE_INACTIVE_AFTER', '7d'),
    archiveRetentionMs: duration(env, 'CINV_ARCHIVE_RETENTION', '7d'),
    sweepSchedule: env.CINV_SWEEP_SCHEDULE || '*/5 * * * *',
    sweepBatchSize: integer(env, 'CINV_SWEEP_BATCH_SIZE', 1000, 1, 100_000),
    // smaller transactions keep the embedded database (one session shared with the API) responsive;
    // on a server, batches of 1000 let each lane prepare its next batch while the database writes
    // one (a first load of 143 834 objects: 32.5 s against 45.5 s in batches of 5000)
    reconcileBatchSize: integer(env, 'CINV_RECONCILE_BATCH_SIZE', 1000, 1, 50_000),
    // a lane waits for a pooled connection like a request (CINV_DB_ACQUIRE_TIMEOUT): with fewer than
    // three, the second lane would queue behind the first's batch and requests behind both
    reconcileLanes: boolean(env, 'CINV_RECONCILE_LANES', true) && Boolean(databaseUrl) && databasePoolSize >= 3,
  };
}

/** Counts, statistics and the OpenSearch indexer. */
function searchSettings(
  env: Env,
): Pick<
  Config,
  | 'countTimeoutMs'
  | 'statsTimeoutMs'
  | 'queryTimeoutMs'
  | 'queryScanRows'
  | 'statsRefreshSchedule'
  | 'opensearchUrl'
  | 'opensearchIndex'
  | 'indexerBatchSize'
  | 'indexerMaxAttempts'
  | 'indexerPollMs'
> {
  return {
    countTimeoutMs: duration(env, 'CINV_COUNT_TIMEOUT', '250ms'),
    statsTimeoutMs: duration(env, 'CINV_STATS_TIMEOUT', '10s'),
    queryTimeoutMs: duration(env, 'CINV_QUERY_TIMEOUT', '10s'),
    queryScanRows: integer(env, 'CINV_QUERY_SCAN_ROWS', 100_000, 0, 1_000_000_000),
    statsRefreshSchedule: env.CINV_STATS_REFRESH_SCHEDULE || '*/5 * * * *',
    opensearchUrl: opensearchUrl(env),
    opensearchIndex: indexName(env),
    indexerBatchSize: integer(env, 'CINV_INDEXER_BATCH_SIZE', 500, 1, 10_000),
    indexerMaxAttempts: integer(env, 'CINV_INDEXER_MAX_ATTEMPTS', 5, 1, 1000),
    indexerPollMs: duration(env, 'CINV_INDEXER_POLL_INTERVAL', '2s'),
  };
}

/** Sign-in sessions, the key cache, single sign-on and the rate limits. */
function accessSettings(
  env: Env,
): Pick<
  Config,
  | 'sessionTtlMs'
  | 'keyCacheMs'
  | 'oidc'
  | 'rateLimit'
  | 'rateBurst'
  | 'sessionRateLimit'
  | 'sessionRateBurst'
  | 'rateLimitOverrides'
  | 'redisUrl'
> {
  return {
    sessionTtlMs: duration(env, 'CINV_SESSION_TTL', '24h'),
    keyCacheMs: durationOrOff(env, 'CINV_KEY_CACHE') ?? 5_000,
    oidc: oidcConfig(env),
    rateLimit: integer(env, 'CINV_RATE_LIMIT', 100, 1, 1_000_000),
    rateBurst: integer(env, 'CINV_RATE_BURST', integer(env, 'CINV_RATE_LIMIT', 100, 1, 1_000_000), 1, 1_000_000),
    sessionRateLimit: integer(env, 'CINV_SESSION_RATE_LIMIT', 600, 1, 1_000_000),
    sessionRateBurst: integer(
      env,
      'CINV_SESSION_RATE_BURST',
      integer(env, 'CINV_SESSION_RATE_LIMIT', 600, 1, 1_000_000),
      1,
      1_000_000,
    ),
    rateLimitOverrides: rateLimitOverrides(env),
    redisUrl: redisUrl(env),
  };
}

/** Subscriptions' deliveries to webhooks, and the size of an inventory diff's page. */
function deliverySettings(
  env: Env,
): Pick<
  Config,
  | 'subscriptionRetryWindowMs'
  | 'webhookTimeoutMs'
  | 'diffPageExamine'
  | 'subscriptionBatchRecords'
  | 'subscriptionBatchBytes'
  | 'subscriptionPollMs'
  | 'subscriptionLeaseMs'
> {
  return {
    subscriptionRetryWindowMs: duration(env, 'CINV_SUBSCRIPTION_RETRY_WINDOW', '24h'),
    webhookTimeoutMs: duration(env, 'CINV_WEBHOOK_TIMEOUT', '10s'),
    diffPageExamine: integer(env, 'CINV_DIFF_PAGE_EXAMINE', 100_000, 1, 10_000_000),
    subscriptionBatchRecords: integer(env, 'CINV_SUBSCRIPTION_BATCH_RECORDS', 500, 1, 10_000),
    subscriptionBatchBytes: integer(env, 'CINV_SUBSCRIPTION_BATCH_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    subscriptionPollMs: duration(env, 'CINV_SUBSCRIPTION_POLL', '250ms'),
    subscriptionLeaseMs: duration(env, 'CINV_SUBSCRIPTION_LEASE', '30s'),
  };
}
