import postgres, { type Sql } from 'postgres';
import type { Config } from '../config/config.js';
import { openEmbedded } from './embedded.js';

export type { Sql };
/** A transaction handle or the pool: stores accept either, so services can compose them. */
export type Queryable = Sql | postgres.TransactionSql;

/**
 * Values bound as jsonb go through `sql.json`: postgres.js serialises a parameter by the type the
 * server infers, so a pre-stringified JSON text would be encoded a second time.
 */
export const asJson = (value: unknown): postgres.JSONValue => value as postgres.JSONValue;

export interface Database {
  sql: Sql;
  kind: 'embedded' | 'postgres';
  close(): Promise<void>;
}

const baseOptions = {
  onnotice: () => {},
  connection: { application_name: 'cinv' },
} satisfies postgres.Options<Record<string, postgres.PostgresType>>;

/**
 * Connects to the configured real PostgreSQL, or opens the embedded database. When another cinv
 * process already serves the embedded database, commands join it through its socket; a second
 * server (`joinEmbedded: false`) refuses instead.
 */
export async function openDatabase(config: Config, options: { joinEmbedded: boolean } = { joinEmbedded: true }): Promise<Database> {
  if (!config.databaseUrl) return openEmbedded(config.dataDir, { join: options.joinEmbedded });
  const sql = postgres(config.databaseUrl, {
    ...baseOptions,
    max: config.databasePoolSize,
    idle_timeout: 30,
    connect_timeout: 10,
  });
  return { sql, kind: 'postgres', close: () => sql.end({ timeout: 5 }) };
}

/** postgres.js options for a connection through the embedded database's socket. */
export function embeddedClientOptions(socketPath: string): postgres.Options<Record<string, postgres.PostgresType>> {
  return {
    ...baseOptions,
    path: socketPath,
    username: 'postgres',
    database: 'postgres',
    // PGlite is a single backend session shared by every socket client: one connection per
    // process, and no named prepared statements that another client could collide with.
    max: 1,
    prepare: false,
    connect_timeout: 10,
  };
}
