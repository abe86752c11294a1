import postgres, { type Sql } from 'postgres';
import type { Config } from '../config/config.js';
import { DatabaseGate, gateSql } from './gate.js';
import { DatabaseHealth } from './health.js';

export type { Sql };
/** A transaction handle or the pool: stores accept either, so services can compose them. */
export type Queryable = Sql | postgres.TransactionSql;

/**
 * Values bound as jsonb go through `sql.json`: postgres.js serialises a parameter by the type the
 * server infers, so a pre-stringified JSON text would be encoded a second time (unless it is cast
 * through text, as `jsonText` in db/pipeline.ts is for statements sent in a pipeline).
 */
export const asJson = (value: unknown): postgres.JSONValue => value as postgres.JSONValue;

export type DatabaseKind = 'embedded' | 'postgres';

/** A connection pool as opened, before admission control. */
export interface RawDatabase {
  sql: Sql;
  kind: DatabaseKind;
  /** Opens a separate single connection to the same database (health probes). */
  connectOne(): Sql;
  /**
   * The hosted embedded database only: other processes' turns at the single session queue in
   * `gate` behind this process's waiting queries, rather than past them.
   */
  admitTurnsThrough?(gate: DatabaseGate): void;
  /** The hosted embedded database only: `listener` runs after each unit of work another process's connection ran there, until the returned stop. */
  onForeignWrites?(listener: () => void): () => void;
  close(): Promise<void>;
}

export interface Database {
  /** The pool, every query admitted through `gate`. */
  sql: Sql;
  kind: DatabaseKind;
  gate: DatabaseGate;
  health: DatabaseHealth;
  /** See RawDatabase.onForeignWrites. */
  onForeignWrites?(listener: () => void): () => void;
  close(): Promise<void>;
}

type Options = postgres.Options<Record<string, postgres.PostgresType>>;

const baseOptions = {
  onnotice: () => {},
  connection: { application_name: 'cinv' },
} satisfies Options;

/**
 * Reconnect delays after a failed connection attempt: postgres.js grows them to 20 s by default,
 * which keeps a pool dark for that long after the database is back. Capped at one second.
 */
export const reconnectBackoff = (attempts: number): number =>
  Math.min(0.05 * 2 ** attempts, 1) * (0.5 + Math.random() / 2);

export interface PoolSettings {
  poolSize: number;
  acquireTimeoutMs: number;
  /** Server-side limit for one statement of a request (real PostgreSQL only). */
  statementTimeoutMs: number;
}

export const poolSettings = (config: Config): PoolSettings => ({
  poolSize: config.databasePoolSize,
  acquireTimeoutMs: config.dbAcquireTimeoutMs,
  statementTimeoutMs: config.statementTimeoutMs,
});

/** Connects to a real PostgreSQL server. */
export function connectServer(url: string, settings: PoolSettings): RawDatabase {
  const connectTimeout = Math.max(1, Math.ceil(settings.acquireTimeoutMs / 1000));
  const sql = postgres(url, {
    ...baseOptions,
    // jit off: a partitioned table's plan is costed as if every month were read, which crosses the
    // JIT thresholds; compiling then took 0.7 s of CPU for a 2 ms list total, and the requests of a
    // busy server queued behind it. The service's statements read pages, where JIT never pays.
    connection: { ...baseOptions.connection, statement_timeout: settings.statementTimeoutMs, jit: 'off' },
    max: settings.poolSize,
    idle_timeout: 30,
    connect_timeout: connectTimeout,
    backoff: reconnectBackoff,
  });
  return {
    sql,
    kind: 'postgres',
    connectOne: () =>
      postgres(url, {
        ...baseOptions,
        connection: { application_name: 'cinv-health' },
        max: 1,
        connect_timeout: connectTimeout,
        backoff: reconnectBackoff,
      }),
    close: () => sql.end({ timeout: 5 }),
  };
}

export interface Admitted {
  sql: Sql;
  gate: DatabaseGate;
  health: DatabaseHealth;
}

/**
 * Puts admission control in front of a pool: one slot per pooled connection, the acquire timeout,
 * and the health of the database as seen from `probe`, a connection outside the pool.
 */
export function admit(pool: Sql, probe: Sql, acquireTimeoutMs: number): Admitted {
  const health = new DatabaseHealth(probe, acquireTimeoutMs);
  const gate = new DatabaseGate({ capacity: pool.options.max, acquireTimeoutMs }, health);
  return { sql: gateSql(pool, gate, health), gate, health };
}

/** Puts admission control and a health probe in front of a pool. */
export function guardDatabase(raw: RawDatabase, settings: PoolSettings): Database {
  const probe = raw.connectOne();
  const { sql, gate, health } = admit(raw.sql, probe, settings.acquireTimeoutMs);
  raw.admitTurnsThrough?.(gate);
  return {
    sql,
    kind: raw.kind,
    gate,
    health,
    onForeignWrites: raw.onForeignWrites,
    async close() {
      health.stop();
      await Promise.all([raw.close(), probe.end({ timeout: 1 })]);
    },
  };
}

/** postgres.js options for a connection through the embedded database's socket. */
export function embeddedClientOptions(socketPath: string): Options {
  return {
    ...baseOptions,
    path: socketPath,
    username: 'postgres',
    database: 'postgres',
    // PGlite is a single backend session shared by every socket client: one connection per
    // process. A command beside the server runs each statement about once, so preparing them
    // would only leave statements in the shared session; the hosting process prepares its own.
    max: 1,
    prepare: false,
    connect_timeout: 10,
    backoff: reconnectBackoff,
  };
}
