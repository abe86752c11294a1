import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { userInfo } from 'node:os';
import { generateApiKey, TIERS } from '../auth/api-key-format.js';
import { isPermission, type DataScope, type Permission, type Tier } from '../auth/principal.js';
import { loadConfig, type Config } from '../config/config.js';
import { parseDuration } from '../config/duration.js';
import type { Database, Sql } from '../db/database.js';
import type { Snapshot } from '../inventory/records.js';
import { DEFAULT_TENANT_ID } from '../tenants.js';

// Commands load the database, server and reconciler modules only when they run, so that usage
// errors and --help answer at once.

export class UsageError extends Error {
  /** The command whose usage was broken, so that the hint can point at its own --help. */
  constructor(message: string, readonly command?: string) {
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
 * land where the server never looks.
 */
async function refuseStrayDatabase(config: Config, flags: Flags): Promise<void> {
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
async function openForCommand(config: Config, flags: Flags): Promise<{ db: Database; applied: number[] }> {
  await refuseStrayDatabase(config, flags);
  const [{ openDatabase }, { migrate }] = await Promise.all([import('../db/open.js'), import('../db/migrate.js')]);
  const fresh = !config.databaseUrl && !existsSync(path.join(config.dataDir, 'pgdata'));
  console.error(`cinv: using ${describeDatabase(config)}${fresh ? ' (new)' : ''}`);
  const db = await openDatabase(config);
  try {
    return { db, applied: await migrate(db.sql) };
  } catch (error) {
    await db.close();
    throw error;
  }
}

/** Opens the database (see openForCommand), runs `work`, and closes again. */
async function withDatabase<T>(config: Config, flags: Flags, work: (db: Database) => Promise<T>): Promise<T> {
  const { db } = await openForCommand(config, flags);
  try {
    return await work(db);
  } finally {
    await db.close();
  }
}

function single(flags: Flags, name: string, required = true): string | undefined {
  const value = flags[name];
  if (Array.isArray(value)) throw new UsageError(`--${name} may be given once`);
  if (value === undefined || value === true || value === '') {
    if (required) throw new UsageError(`--${name} is required`);
    return undefined;
  }
  return String(value);
}

function many(flags: Flags, name: string): string[] {
  const value = flags[name];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [String(value)]).filter((v) => v !== '');
}

export async function serveCommand(options: { api: boolean; scheduler: boolean; indexer: boolean }): Promise<void> {
  const config = loadConfig();
  if (options.indexer && !options.api && !options.scheduler && !config.opensearchUrl) {
    throw new UsageError('the indexer mirrors change records into OpenSearch: set OPENSEARCH_URL');
  }
  const [{ createLogger }, { run }] = await Promise.all([import('../observability/logger.js'), import('../server.js')]);
  const logger = createLogger(config.logLevel);
  const running = await run(config, logger, options);
  await new Promise<void>((resolve) => {
    const shutdown = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      running.stop().then(resolve, (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        resolve();
      });
    };
    process.once('SIGINT', () => shutdown('SIGINT'));
    process.once('SIGTERM', () => shutdown('SIGTERM'));
  });
}

export async function migrateCommand(flags: Flags): Promise<void> {
  const { db, applied } = await openForCommand(loadConfig(), flags);
  await db.close();
  console.log(applied.length > 0 ? `applied migrations: ${applied.join(', ')}` : 'schema is up to date');
}

async function resolveScopes(db: Database, specs: string[]): Promise<DataScope[]> {
  const { findSourceByName } = await import('../sources/store.js');
  const scopes: DataScope[] = [];
  for (const spec of specs) {
    if (spec === '*') {
      scopes.push({ sourceId: null, scopeId: null });
      continue;
    }
    const colon = spec.indexOf(':');
    const sourceName = colon === -1 ? spec : spec.slice(0, colon);
    const scopeId = colon === -1 ? null : spec.slice(colon + 1) || null;
    const source = await findSourceByName(db.sql, DEFAULT_TENANT_ID, sourceName);
    if (!source) throw new UsageError(`--scope ${spec}: no source named "${sourceName}"`);
    scopes.push({ sourceId: source.id, scopeId });
  }
  return scopes;
}

export async function keysCreateCommand(flags: Flags): Promise<void> {
  const tier = single(flags, 'tier') as Tier;
  const name = single(flags, 'name')!;
  if (!['adm', 'svc', 'ro'].includes(tier)) throw new UsageError('--tier must be adm, svc or ro (user tokens are issued to users)');
  const permissions = many(flags, 'permission');
  const scopeSpecs = many(flags, 'scope');
  if (tier === 'adm' && (permissions.length > 0 || scopeSpecs.length > 0)) {
    throw new UsageError('adm keys hold everything: --permission and --scope do not apply');
  }
  if (tier === 'ro' && permissions.length > 0) {
    throw new UsageError('--permission applies to svc keys only; ro keys read with the fixed permissions of their tier (--scope limits their data)');
  }
  const bad = permissions.find((p) => !isPermission(p));
  if (bad) throw new UsageError(`--permission ${bad}: expected RESOURCE:ACTION, e.g. configuration_items:read`);
  const expiresIn = single(flags, 'expires-in', false);
  const expiresMs = expiresIn === undefined ? undefined : parseDuration(expiresIn);
  if (expiresIn !== undefined && !expiresMs) throw new UsageError(`--expires-in ${expiresIn}: expected a duration such as 90d`);
  const config = loadConfig();
  const { issueApiKey } = await import('../auth/api-keys.js');
  await withDatabase(config, flags, async (db) => {
    const scopes = await resolveScopes(db, scopeSpecs);
    const { id, key } = await issueApiKey(db.sql, config.secret, {
      tenantId: DEFAULT_TENANT_ID,
      name,
      tier: tier as 'adm' | 'svc' | 'ro',
      permissions: permissions as Permission[],
      // an ro key without --scope reads all data
      scopes: tier === 'ro' && scopeSpecs.length === 0 ? undefined : scopes,
      expiresAt: expiresMs ? new Date(Date.now() + expiresMs) : null,
    });
    await auditFromCommandLine(db.sql, 'api_key.created', { type: 'api_key', id, name }, { tier });
    console.error(`created ${tier} key "${name}" (id ${id}); it is shown once, store it now:`);
    console.log(key);
  });
}

export async function usersPromoteCommand(email: string | undefined, flags: Flags): Promise<void> {
  if (!email) throw new UsageError('users promote needs the email of a user who exists (signed in once, or created through the API)');
  const config = loadConfig();
  const { findUserByEmail, setSuperadmin } = await import('../users/store.js');
  await withDatabase(config, flags, async (db) => {
    const user = await findUserByEmail(db.sql, DEFAULT_TENANT_ID, email);
    if (!user) throw new UsageError(`no user with the email ${email}`);
    await setSuperadmin(db.sql, DEFAULT_TENANT_ID, user.id, true);
    await auditFromCommandLine(db.sql, 'user.promoted', { type: 'user', id: user.id, name: user.name }, { superadmin: true });
    console.error(`${user.name} <${email}> is a superadmin`);
  });
}

/** The audit row of something done on the command line (its actor is the system, not a key). */
async function auditFromCommandLine(
  sql: Sql,
  type: 'user.promoted' | 'api_key.created' | 'api_key.revoked',
  target: { type: string; id: string; name: string },
  details: Record<string, unknown>,
): Promise<void> {
  const { insertAuditEvents } = await import('../audit/store.js');
  await insertAuditEvents(sql, [{
    tenant_id: DEFAULT_TENANT_ID,
    occurred_at: new Date().toISOString(),
    event_type: type,
    outcome: 'success',
    actor_kind: 'system',
    actor_id: null,
    actor_name: `cli (${userInfo().username})`,
    target_type: target.type,
    target_id: target.id,
    target_name: target.name,
    client_address: null,
    user_agent: null,
    request_id: null,
    details: { ...details, via: 'cli' },
  }]);
}

export async function keysListCommand(flags: Flags): Promise<void> {
  const config = loadConfig();
  const { listApiKeys } = await import('../auth/api-key-store.js');
  await withDatabase(config, flags, async (db) => {
    const keys = await listApiKeys(db.sql, DEFAULT_TENANT_ID, { includeRevoked: flags['include-revoked'] === true });
    const rows = keys.map((k) => [
      k.id, k.tier, k.name, `…${k.key_hint}`, k.created_at.toISOString().slice(0, 16), k.expires_at?.toISOString().slice(0, 16) ?? '-',
      k.last_used_at?.toISOString().slice(0, 16) ?? '-', k.revoked_at ? 'revoked' : 'active',
    ]);
    printTable(['id', 'tier', 'name', 'hint', 'created', 'expires', 'last used', 'state'], rows);
  });
}

export async function keysRevokeCommand(id: string | undefined, flags: Flags): Promise<void> {
  if (!id || !/^[0-9a-f-]{36}$/i.test(id)) throw new UsageError('keys revoke needs the id of a key (see `cinv keys list`)');
  const config = loadConfig();
  const { listApiKeys, revokeApiKey } = await import('../auth/api-key-store.js');
  await withDatabase(config, flags, async (db) => {
    const [key] = await listApiKeys(db.sql, DEFAULT_TENANT_ID, { id, includeRevoked: true });
    if (!key) throw new UsageError(`no API key with the id ${id}`);
    if (!(await revokeApiKey(db.sql, DEFAULT_TENANT_ID, id, new Date()))) {
      console.error(`key "${key.name}" was revoked already`);
      return;
    }
    await auditFromCommandLine(db.sql, 'api_key.revoked', { type: 'api_key', id, name: key.name }, {});
    console.error(`revoked ${key.tier} key "${key.name}" (id ${id}); it is refused from the next request on`);
  });
}

/**
 * Re-wraps the tenants' data keys under CINV_MASTER_KEY. The old master key must be readable as
 * CINV_MASTER_KEY_PREVIOUS (on every replica, so that they read both while this runs); the
 * credential ciphertexts stay as they are. Safe to interrupt and run again.
 */
export async function rotateMasterCommand(flags: Flags): Promise<void> {
  const config = loadConfig();
  if (!config.masterKey) throw new UsageError('keys rotate-master needs the new master key in CINV_MASTER_KEY');
  if (!config.previousMasterKey) throw new UsageError('keys rotate-master needs the old master key in CINV_MASTER_KEY_PREVIOUS');
  const { MasterKeys, rotateMasterKey } = await import('../sources/credentials.js');
  await withDatabase(config, flags, async (db) => {
    const keys = new MasterKeys(config.masterKey!, config.previousMasterKey);
    const { rewrapped, remaining } = await rotateMasterKey(db.sql, keys);
    console.error(`re-wrapped ${rewrapped} data key(s) under the master key ${keys.current.fingerprint}; ${remaining} left under another key`);
    if (remaining > 0) throw new UsageError(`${remaining} data key(s) are wrapped by a master key that is neither CINV_MASTER_KEY nor CINV_MASTER_KEY_PREVIOUS`);
  });
}

function printTable(header: string[], rows: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  console.log([line(header), ...rows.map(line)].join('\n'));
}

export function keysGenerateCommand(flags: Flags): void {
  const tier = (single(flags, 'tier', false) ?? 'adm') as Tier;
  if (!TIERS.includes(tier)) throw new UsageError('--tier must be adm, svc, ro or usr');
  console.log(generateApiKey(tier));
}

export async function ingestCommand(flags: Flags): Promise<void> {
  const sourceName = single(flags, 'source')!;
  const file = single(flags, 'file')!;
  const collectorType = single(flags, 'collector-type', false) ?? 'universal';
  let document: unknown;
  try {
    document = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    throw new UsageError(`--file ${file}: ${(error as Error).message}`);
  }
  if (Array.isArray(document)) document = { items: document };
  const override = single(flags, 'mode', false);
  if (override) (document as Record<string, unknown>).mode = override;
  const scope = single(flags, 'scope', false);
  if (scope) (document as Record<string, unknown>).scope_id = scope;
  const [{ assertSnapshot, reconcile }, { AppError }, { ensureSource }] = await Promise.all([
    import('../inventory/reconcile.js'),
    import('../errors.js'),
    import('../sources/store.js'),
  ]);
  try {
    (assertSnapshot as (value: unknown) => void)(document);
  } catch (error) {
    if (error instanceof AppError) {
      const errors = (error.details.errors as { field: string; message: string }[]).slice(0, 20);
      throw new UsageError(`${file} is not a valid snapshot:\n${errors.map((e) => `  ${e.field}: ${e.message}`).join('\n')}`);
    }
    throw error;
  }
  const snapshot = document as Snapshot;
  const config = loadConfig();
  await withDatabase(config, flags, async (db) => {
    const source = await ensureSource(db.sql, DEFAULT_TENANT_ID, sourceName, collectorType);
    const result = await reconcile(
      db.sql,
      {
        tenantId: DEFAULT_TENANT_ID,
        sourceId: source.id,
        scopeId: snapshot.scope_id ?? null,
        mode: snapshot.mode ?? 'snapshot',
        records: snapshot.items,
        deletions: snapshot.deletions,
      },
      { batchSize: config.reconcileBatchSize, statementTimeoutMs: config.bulkStatementTimeoutMs },
    );
    console.log(JSON.stringify({ source: { id: Number(source.id), name: source.name }, ...result }, null, 2));
  });
}

export async function sweepCommand(flags: Flags): Promise<void> {
  const config = loadConfig();
  const { lifecycleSettings, sweepLifecycle } = await import('../lifecycle/sweep.js');
  await withDatabase(config, flags, async (db) => {
    const result = await sweepLifecycle(db.sql, lifecycleSettings(config), new Date());
    console.log(JSON.stringify(result));
  });
}

function requireOpenSearch(config: Config): string {
  if (!config.opensearchUrl) throw new UsageError('this command works on OpenSearch: set OPENSEARCH_URL');
  return config.opensearchUrl;
}

export async function reindexCommand(flags: Flags): Promise<void> {
  const config = loadConfig();
  const url = requireOpenSearch(config);
  const batchText = single(flags, 'batch-size', false);
  const batchSize = batchText === undefined ? 2000 : Number(batchText);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 50_000) throw new UsageError('--batch-size must be an integer from 1 to 50000');
  const [{ reindex, ReindexError }, { createOpenSearchClient }] = await Promise.all([
    import('../../indexer/reindex.js'),
    import('../search/opensearch-index.js'),
  ]);
  await withDatabase(config, flags, async (db) => {
    try {
      const report = await reindex(
        db.sql,
        createOpenSearchClient(url, 120_000),
        {
          alias: config.opensearchIndex,
          batchSize,
          resume: flags.resume === true,
          deleteOld: flags['delete-old'] === true,
          now: () => new Date(),
          indexer: { batchSize: config.indexerBatchSize, maxAttempts: config.indexerMaxAttempts, pollMs: config.indexerPollMs },
        },
        process.stderr,
      );
      console.log(
        `${config.opensearchIndex} now points at ${report.index}: ${report.indexed} documents indexed, ${report.verified} verified against PostgreSQL` +
          (report.previous.length > 0 ? `; previous: ${report.previous.join(', ')}${report.deleted.length > 0 ? ' (deleted)' : ' (kept; --delete-old removes them)'}` : '') +
          (report.drained > 0 ? `; ${report.drained} outbox rows applied afterwards` : ''),
      );
    } catch (error) {
      if (error instanceof ReindexError) throw new UsageError(error.message);
      throw error;
    }
  });
}

export async function outboxCommand(sub: string | undefined, flags: Flags): Promise<void> {
  if (sub !== undefined && sub !== 'retry') throw new UsageError(`unknown outbox command "${sub}"`);
  const config = loadConfig();
  const { outboxState, parkedRows, requeueParked } = await import('../../indexer/outbox.js');
  await withDatabase(config, flags, async (db) => {
    if (sub === 'retry') {
      console.log(`re-queued ${await requeueParked(db.sql)} parked rows`);
      return;
    }
    const state = await outboxState(db.sql);
    console.log(`pending: ${state.pending}${state.pendingCapped ? '+' : ''}`);
    console.log(`lag: ${state.lagSeconds.toFixed(1)} s (age of the oldest pending row)`);
    console.log(`parked: ${state.parked}${state.parked > 0 ? ' (cinv outbox retry re-queues them)' : ''}`);
    for (const row of await parkedRows(db.sql, 20)) {
      console.log(`  row ${row.id} change ${row.change_id}: ${row.attempts} attempts, parked ${row.parked_at.toISOString()}: ${row.last_error ?? ''}`);
    }
    if (!config.opensearchUrl) console.log('OPENSEARCH_URL is not set: nothing consumes the outbox, and the sweep trims rows older than a day');
  });
}

export async function refreshStatsCommand(flags: Flags): Promise<void> {
  const config = loadConfig();
  const { refreshStatsAggregate } = await import('../history/stats-store.js');
  await withDatabase(config, flags, async (db) => {
    const started = performance.now();
    const { rows, refreshedAt } = await refreshStatsAggregate(db.sql, new Date());
    console.log(JSON.stringify({ refreshed: true, rows, refreshed_at: refreshedAt.toISOString(), took_ms: Math.round(performance.now() - started) }));
  });
}
