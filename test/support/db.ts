import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import type { Database, Sql } from '../../src/db/database.js';
import { hostEmbedded } from '../../src/db/embedded.js';
import { migrate } from '../../src/db/migrate.js';

/** Set by .ci/run for the second pass: a throwaway database on the real PostgreSQL server. */
export const REAL_DATABASE_URL = process.env.CINV_TEST_DATABASE_URL || undefined;
export const onRealPostgres = REAL_DATABASE_URL !== undefined;
export const TEST_SECRET = 'test-secret-test-secret-test-secret-0123';

let database: Database | undefined;
let socketDir: string | undefined;

/** The run's database, migrated once: PGlite in memory by default, the real server when asked. */
export async function testDatabase(): Promise<Database> {
  if (database) return database;
  if (REAL_DATABASE_URL) {
    const sql = postgres(REAL_DATABASE_URL, { max: 8, onnotice: () => {}, connect_timeout: 5 });
    database = { sql, kind: 'postgres', close: () => sql.end({ timeout: 5 }) };
  } else {
    socketDir = mkdtempSync(path.join(tmpdir(), 'cinv-test-'));
    database = await hostEmbedded({ pgDataDir: undefined, socketPath: path.join(socketDir, '.s.PGSQL.5432') });
  }
  await migrate(database.sql);
  return database;
}

export async function closeTestDatabase(): Promise<void> {
  await database?.close();
  database = undefined;
  if (socketDir) rmSync(socketDir, { recursive: true, force: true });
}

const TABLES = [
  'outbox',
  'relationships',
  'change_records',
  'ci_last_seen',
  'configuration_items',
  'api_key_scopes',
  'api_keys',
  'sources',
  'collectors',
];

/** Empties every tenant-owned table; the default tenant stays, as after migration. */
export async function resetDatabase(sql: Sql): Promise<void> {
  await sql.unsafe(`truncate ${TABLES.join(', ')} restart identity cascade`);
  await sql`delete from tenants where slug <> 'default'`;
}
