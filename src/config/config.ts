import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseDuration } from './duration.js';

export interface Config {
  port: number;
  host: string;
  /** Real PostgreSQL connection string; undefined means the embedded database. */
  databaseUrl: string | undefined;
  databasePoolSize: number;
  /** How long a request waits for a pooled connection before it is answered 503. */
  dbAcquireTimeoutMs: number;
  /** Server-side limit of one statement on request paths. */
  statementTimeoutMs: number;
  /** The same limit for ingest batches, CSV export batches and migrations' neighbours. */
  bulkStatementTimeoutMs: number;
  /** Requests served at once by this process; more are answered 503 at once. */
  maxInFlight: number;
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
  /** Exact counts beyond this take the planner's estimate instead (`total_exact: false`). */
  countTimeoutMs: number;
  /** Statistics over an explicit window that take longer answer 422 (narrow the window). */
  statsTimeoutMs: number;
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
}

export class ConfigError extends Error {
  constructor(readonly variable: string, reason: string) {
    super(`${variable}: ${reason}`);
  }
}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(name, `expected an integer between ${min} and ${max}, got "${raw}"`);
  }
  return value;
}

function duration(env: Env, name: string, fallback: string): number {
  const raw = env[name] || fallback;
  const ms = parseDuration(raw);
  if (ms === undefined || ms <= 0) {
    throw new ConfigError(name, `expected a duration such as 30m, 24h or 7d, got "${raw}"`);
  }
  return ms;
}

const MIN_SECRET_LENGTH = 32;

/**
 * The secret signs cursors and keys the API-key hash. In embedded mode it is generated once and
 * kept in the data directory (mode 0600), so that keys and cursors survive restarts; with a real
 * PostgreSQL several replicas must share it, so it has to be given explicitly.
 */
function resolveSecret(env: Env, dataDir: string, embedded: boolean): string {
  const given = env.CINV_SECRET;
  if (given) {
    if (given.length < MIN_SECRET_LENGTH) {
      throw new ConfigError('CINV_SECRET', `must be at least ${MIN_SECRET_LENGTH} characters long`);
    }
    return given;
  }
  if (!embedded) {
    throw new ConfigError('CINV_SECRET', 'is required when DATABASE_URL is set (all replicas must share it)');
  }
  const file = path.join(dataDir, 'secret');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString('base64url');
  writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return secret;
}

function opensearchUrl(env: Env): string | undefined {
  const raw = env.OPENSEARCH_URL || undefined;
  if (raw === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('OPENSEARCH_URL', 'must be a URL such as http://localhost:9200');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError('OPENSEARCH_URL', 'must start with http:// or https://');
  return raw;
}

function indexName(env: Env): string {
  const name = env.CINV_OPENSEARCH_INDEX || 'cinv-changes';
  // OpenSearch index names: lower case, no spaces or the characters it reserves
  if (!/^[a-z0-9][a-z0-9_.-]{0,100}$/.test(name)) {
    throw new ConfigError('CINV_OPENSEARCH_INDEX', 'must be a lower-case OpenSearch index name (letters, digits, _ . -)');
  }
  return name;
}

/** Reads and validates the whole configuration; a bad variable is named in the thrown error. */
export function loadConfig(env: Env = process.env): Config {
  const databaseUrl = env.DATABASE_URL || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL', 'must start with postgres:// or postgresql://');
  }
  const dataDir = path.resolve(env.CINV_DATA_DIR || './data');
  const bootstrapAdminKey = env.CINV_BOOTSTRAP_ADMIN_KEY || undefined;
  return {
    port: integer(env, 'PORT', 8080, 0, 65535),
    host: env.HOST || '0.0.0.0',
    databaseUrl,
    databasePoolSize: integer(env, 'CINV_DB_POOL_SIZE', 10, 1, 200),
    dbAcquireTimeoutMs: duration(env, 'CINV_DB_ACQUIRE_TIMEOUT', '2s'),
    statementTimeoutMs: duration(env, 'CINV_STATEMENT_TIMEOUT', '15s'),
    bulkStatementTimeoutMs: duration(env, 'CINV_BULK_STATEMENT_TIMEOUT', '10m'),
    maxInFlight: integer(env, 'CINV_MAX_IN_FLIGHT', 64, 1, 100_000),
    dataDir,
    secret: resolveSecret(env, dataDir, !databaseUrl),
    bootstrapAdminKey,
    logLevel: env.LOG_LEVEL || 'info',
    bodyLimitBytes: integer(env, 'CINV_BODY_LIMIT_BYTES', 10 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    inactiveAfterMs: duration(env, 'CINV_INACTIVE_AFTER', '24h'),
    archiveInactiveAfterMs: duration(env, 'CINV_ARCHIVE_INACTIVE_AFTER', '7d'),
    archiveRetentionMs: duration(env, 'CINV_ARCHIVE_RETENTION', '7d'),
    sweepSchedule: env.CINV_SWEEP_SCHEDULE || '*/5 * * * *',
    sweepBatchSize: integer(env, 'CINV_SWEEP_BATCH_SIZE', 1000, 1, 100_000),
    // the embedded database is one session shared with the API: smaller transactions keep it responsive
    reconcileBatchSize: integer(env, 'CINV_RECONCILE_BATCH_SIZE', databaseUrl ? 5000 : 1000, 1, 50_000),
    countTimeoutMs: duration(env, 'CINV_COUNT_TIMEOUT', '250ms'),
    statsTimeoutMs: duration(env, 'CINV_STATS_TIMEOUT', '10s'),
    statsRefreshSchedule: env.CINV_STATS_REFRESH_SCHEDULE || '*/5 * * * *',
    opensearchUrl: opensearchUrl(env),
    opensearchIndex: indexName(env),
    indexerBatchSize: integer(env, 'CINV_INDEXER_BATCH_SIZE', 500, 1, 10_000),
    indexerMaxAttempts: integer(env, 'CINV_INDEXER_MAX_ATTEMPTS', 5, 1, 1000),
    indexerPollMs: duration(env, 'CINV_INDEXER_POLL_INTERVAL', '2s'),
  };
}
