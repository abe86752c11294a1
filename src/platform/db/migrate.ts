import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { packagePath } from '../paths.js';
import type { Sql } from 'postgres';

export const MIGRATIONS_DIR = packagePath('sql');
// Any constant works as long as every cinv process uses the same one.
const MIGRATION_LOCK = 0x63696e76; // "cinv"

export interface Migration {
  version: number;
  name: string;
  file: string;
}

export async function listMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((file) => /^\d{4}_[\w-]+\.sql$/.test(file)).sort();
  return files.map((file) => ({
    version: Number(file.slice(0, 4)),
    name: file.slice(5, -4),
    file: path.join(dir, file),
  }));
}

/**
 * Applies pending migrations in order, each in its own transaction together with its version row.
 * A session advisory lock makes replicas that start together take turns: the second finds the
 * work done. Returns the versions this call applied; `progress` hears of each one as it begins.
 */
export async function migrate(
  sql: Sql,
  dir = MIGRATIONS_DIR,
  progress?: (done: number, total: number, name: string) => void,
): Promise<number[]> {
  const migrations = await listMigrations(dir);
  const conn = await sql.reserve();
  const applied: number[] = [];
  try {
    // waiting for another replica's migrations, or rewriting a large table, may take longer than
    // the request statement timeout this pooled connection carries
    await conn`set statement_timeout = 0`;
    await conn`select pg_advisory_lock(${MIGRATION_LOCK})`;
    try {
      await conn.unsafe(`create table if not exists schema_migrations (
        version integer primary key,
        name text not null,
        applied_at timestamptz not null default now()
      )`);
      const done = new Set(
        (await conn<{ version: number }[]>`select version from schema_migrations`).map((r) => r.version),
      );
      const pending = migrations.filter((migration) => !done.has(migration.version));
      for (const migration of pending) {
        progress?.(applied.length, pending.length, path.basename(migration.file));
        const body = await readFile(migration.file, 'utf8');
        await conn.unsafe('begin');
        try {
          await conn.unsafe(body);
          await conn`insert into schema_migrations (version, name) values (${migration.version}, ${migration.name})`;
          await conn.unsafe('commit');
        } catch (error) {
          await conn.unsafe('rollback');
          throw new Error(`migration ${path.basename(migration.file)} failed: ${(error as Error).message}`, {
            cause: error,
          });
        }
        applied.push(migration.version);
      }
    } finally {
      await conn`select pg_advisory_unlock(${MIGRATION_LOCK})`;
    }
  } finally {
    await conn`reset statement_timeout`.catch(() => undefined);
    conn.release();
  }
  return applied;
}
