import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../platform/config/config.js';
import type { AppContext } from '../context.js';
import type { Database } from '../platform/db/database.js';
import { createLogger } from '../platform/observability/logger.js';

// Commands load the database, server and reconciler modules only when they run, so that usage
// errors and --help answer at once.

export class UsageError extends Error {
  /** The command whose usage was broken, so that the hint can point at its own --help. */
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
  }
}

export type Flags = Record<string, string | boolean | string[] | undefined>;

/** Where the command's data lives, as a person would name it (a server URL without its password). */
function describeDatabase(config: Config): string {
  if (!config.databaseUrl) return `the embedded database in ${path.resolve(config.dataDir)}`;
  try {
    const url = new URL(config.databaseUrl);
    return `PostgreSQL at ${url.hostname}:${url.port || '5432'}${url.pathname}`;
  } catch {
    return 'the PostgreSQL server in DATABASE_URL';
  }
}

/** Whether a cinv server answers /health on this port of the loopback address. */
async function cinvServerAnswers(port: number): Promise<boolean> {
  try {
    const reply = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(1000) });
    const body = (await reply.json()) as { checks?: { database?: unknown } };
    return typeof body.checks === 'object' && body.checks !== null && 'database' in body.checks;
  } catch {
    return false;
  }
}

/**
 * Refuses to create a new embedded database when a cinv server answers on PORT: that server uses
 * another database (one it serves is joined through its socket), so a key or an ingest here would
 * land where the server never looks. The command line asks before it loads the configuration,
 * which would write a secret and a master key into the data directory.
 */
export async function refuseStrayDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'port'>,
  flags: Flags,
): Promise<void> {
  if (config.databaseUrl || flags['new-database'] === true || config.port === 0) return;
  if (existsSync(path.join(config.dataDir, 'pgdata'))) return;
  if (!(await cinvServerAnswers(config.port))) return;
  throw new UsageError(
    `${path.resolve(config.dataDir)} holds no database yet, but a cinv server answers on port ${config.port}: it uses another database. ` +
      'Set CINV_DATA_DIR to the directory the server was started with (or DATABASE_URL to its PostgreSQL), ' +
      'or pass --new-database to create a new database here anyway.',
  );
}

/** Opens the database the command works on, saying which, and brings its schema up to date. */
export async function openForCommand(config: Config, flags: Flags): Promise<{ db: Database; applied: number[] }> {
  await refuseStrayDatabase(config, flags);
  const [{ openDatabase }, { migrate }] = await Promise.all([
    import('../platform/db/open.js'),
    import('../platform/db/migrate.js'),
  ]);
  const fresh = !config.databaseUrl && !existsSync(path.join(config.dataDir, 'pgdata'));
  console.error(`cinv: using ${describeDatabase(config)}${fresh ? ' (new)' : ''}`);
  const db = await openDatabase(config);
  const { Progress } = await import('../platform/progress.js');
  let progress: InstanceType<typeof Progress> | undefined;
  try {
    const applied = await migrate(db.sql, undefined, (done, total, name) => {
      // shown only when there is something to apply
      progress ??= new Progress('migrations', total, process.stderr);
      progress.update(done, total, name);
    });
    progress?.finish(applied.length);
    return { db, applied };
  } catch (error) {
    await db.close();
    throw error;
  }
}

/**
 * Opens the database (see openForCommand), runs `work`, and closes again. The months the command
 * writes into are made first, as a server's start makes them: a key created before any server ran
 * would otherwise leave its audit event in the default partition for the first server to move.
 */
export async function withDatabase<T>(config: Config, flags: Flags, work: (db: Database) => Promise<T>): Promise<T> {
  const { db } = await openForCommand(config, flags);
  try {
    const { keepAllPartitions, PartitionRetries } = await import('../platform/db/partitions.js');
    await keepAllPartitions(db.sql, new Date(), { aheadOnly: true, retries: new PartitionRetries(db.sql) });
    return await work(db);
  } finally {
    await db.close();
  }
}

export function single(flags: Flags, name: string, required = true): string | undefined {
  const value = flags[name];
  if (Array.isArray(value)) throw new UsageError(`--${name} may be given once`);
  if (value === undefined || value === true || value === '') {
    if (required) throw new UsageError(`--${name} is required`);
    return undefined;
  }
  return String(value);
}

export function many(flags: Flags, name: string): string[] {
  const value = flags[name];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [String(value)]).filter((v) => v !== '');
}

/** Columns padded to their widest cell. */
export function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  console.log([line(header), ...rows.map(line)].join('\n'));
}

/**
 * What a command hands the services that read the database, the settings and the clock, nothing
 * else of a server (the query language's endpoint, the data-quality checks).
 */
export function commandContext(db: Database, config: Config): AppContext {
  return {
    sql: db.sql,
    database: db.kind,
    config,
    logger: createLogger(config.logLevel),
    now: () => new Date(),
  } as unknown as AppContext;
}
