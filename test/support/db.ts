import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { connectServer, embeddedClientOptions, type RawDatabase, type Sql } from '../../src/platform/db/database.js';
import { hostEmbedded } from '../../src/platform/db/embedded.js';
import { migrate } from '../../src/platform/db/migrate.js';
import { keepAllPartitions } from '../../src/platform/db/partitions.js';

/** Set by .ci/run for the second pass: a throwaway database on the real PostgreSQL server. */
export const REAL_DATABASE_URL = process.env.CINV_TEST_DATABASE_URL || undefined;
export const onRealPostgres = REAL_DATABASE_URL !== undefined;
export const TEST_SECRET = 'test-secret-test-secret-test-secret-0123';

let database: RawDatabase | undefined;
let probe: Sql | undefined;
let socketDir: string | undefined;

/**
 * The run's database, migrated once: PGlite in memory by default, the real server when asked.
 * This is the pool without admission control; test apps put their own gate in front of it.
 */
export async function testDatabase(): Promise<RawDatabase> {
  if (database) return database;
  let opened: RawDatabase;
  if (REAL_DATABASE_URL) {
    opened = connectServer(REAL_DATABASE_URL, { poolSize: 8, acquireTimeoutMs: 5000, statementTimeoutMs: 60_000 });
  } else {
    socketDir = mkdtempSync(path.join(tmpdir(), 'cinv-test-'));
    opened = await hostEmbedded({ pgDataDir: undefined, socketPath: path.join(socketDir, '.s.PGSQL.5432') });
  }
  await migrate(opened.sql);
  await keepAllPartitions(opened.sql, new Date());
  database = opened;
  return opened;
}

/**
 * A connection to the run's database as another process has one: its own session on the server,
 * or on the embedded database a connection through the socket that is not the hosting process's.
 */
export async function otherProcessConnection(): Promise<Sql> {
  await testDatabase();
  return REAL_DATABASE_URL
    ? postgres(REAL_DATABASE_URL, { max: 1, onnotice: () => {} })
    : postgres({ ...embeddedClientOptions(path.join(socketDir!, '.s.PGSQL.5432')), max: 1 });
}

/** One health-probe connection for the whole run, shared by every test app. */
export async function testProbe(): Promise<Sql> {
  probe ??= (await testDatabase()).connectOne();
  return probe;
}

export async function closeTestDatabase(): Promise<void> {
  await probe?.end({ timeout: 1 });
  probe = undefined;
  await database?.close();
  database = undefined;
  if (socketDir) rmSync(socketDir, { recursive: true, force: true });
}

const TABLES = [
  'outbox',
  'ci_undo',
  'ci_tombstones',
  'relationship_history',
  'pending_relationships',
  'relationships',
  'change_records',
  'ci_last_seen',
  'configuration_items',
  'api_key_scopes',
  'api_keys',
  'sessions',
  'audit_events',
  'data_scopes',
  'grants',
  'team_members',
  'teams',
  'users',
  'collection_runs',
  'source_credentials',
  'tenant_data_keys',
  'sources',
  'collectors',
  'change_stats_queue',
  'partition_retries',
  'change_stats_buckets',
  'change_stats_days',
  'change_stats_ci_last',
  'change_stats_affected',
  'search_reindex',
  'change_stats_snapshots',
  'ci_counts',
  'ci_type_counts',
  'ci_count_deltas',
  'baselines',
  'ci_versions',
  'change_feed',
  'subscription_deliveries',
  'subscriptions',
  'change_feed_pending',
];

/** Empties every tenant-owned table; the default tenant stays, as after migration. */
export async function resetDatabase(sql: Sql): Promise<void> {
  await sql.unsafe(`truncate ${TABLES.join(', ')} restart identity cascade`);
  await sql`delete from tenants where slug <> 'default'`;
  await sql`update change_stats_state set refreshed_at = '-infinity'`;
}
