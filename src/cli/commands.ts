import { readFile } from 'node:fs/promises';
import { loadConfig, type Config } from '../platform/config/config.js';
import type { Snapshot } from '../inventory/write-path/records.js';
import type { ReconcileResult } from '../inventory/write-path/reconcile.js';
import { DEFAULT_TENANT_ID } from '../platform/tenants.js';
import { commandContext, openForCommand, single, UsageError, withDatabase, type Flags } from './shared.js';
import type { RunOptions } from '../server.js';

/** What `cinv migrate` says as each step of an online move begins. */
const PHASES = {
  swap: 'swapping in the partitioned table',
  compare: 'comparing count and checksum',
  drop: 'dropping the old table',
} as const;

export { UsageError, type Flags } from './shared.js';
export {
  keysCreateCommand,
  keysGenerateCommand,
  keysListCommand,
  keysRevokeCommand,
  rotateMasterCommand,
  usersPromoteCommand,
} from './keys.js';

export async function serveCommand(options: RunOptions): Promise<void> {
  const config = loadConfig();
  if (options.indexer && !options.api && !options.scheduler && !config.opensearchUrl) {
    throw new UsageError('the indexer mirrors change records into OpenSearch: set OPENSEARCH_URL');
  }
  const [{ createLogger }, { run }] = await Promise.all([
    import('../platform/observability/logger.js'),
    import('../server.js'),
  ]);
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
  const batchSize = Number(single(flags, 'batch-size', false) ?? 10_000);
  if (!Number.isInteger(batchSize) || batchSize < 100 || batchSize > 100_000)
    throw new UsageError('--batch-size must be an integer from 100 to 100000');
  const { db, applied } = await openForCommand(loadConfig(), flags);
  try {
    console.log(applied.length > 0 ? `applied migrations: ${applied.join(', ')}` : 'schema is up to date');
    const [{ migrateIntoPartitions }, { keepAllPartitions }, { Progress }] = await Promise.all([
      import('../platform/db/partition-migration.js'),
      import('../platform/db/partitions.js'),
      import('../platform/progress.js'),
    ]);
    // the operator's own command: months of rows left in the default partitions move however long it takes
    await keepAllPartitions(db.sql, new Date(), { moveTimeoutMs: 0 });
    // an interrupt stops after the batch in flight, which is committed with its position: run again to resume
    const stop = new AbortController();
    const interrupted = () => stop.abort();
    process.once('SIGINT', interrupted);
    let bar: InstanceType<typeof Progress> | undefined;
    let done = 0;
    try {
      const outcomes = await migrateIntoPartitions(db.sql, {
        batchSize,
        signal: stop.signal,
        progress: {
          phase(table, phase, total) {
            bar?.finish(done);
            done = 0;
            bar = phase === 'copy' ? new Progress(`${table} into partitions`, total, process.stderr) : undefined;
            if (phase !== 'copy') console.error(`${table}: ${PHASES[phase]}`);
          },
          copied(_table, copied) {
            done = copied;
            bar?.update(done);
          },
        },
      });
      bar?.finish(done);
      if (stop.signal.aborted) {
        console.log('interrupted: run cinv migrate again to resume where it stopped');
        process.exitCode = 130;
      }
      for (const outcome of outcomes) {
        console.log(
          `${outcome.table}: partitioned, ${outcome.rows} rows moved, checksum ${outcome.checksum} equal` +
            (outcome.repaired > 0 ? ` (${outcome.repaired} rows written during the move repaired first)` : ''),
        );
      }
    } finally {
      process.off('SIGINT', interrupted);
    }
  } finally {
    await db.close();
  }
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
  const [{ assertSnapshot, reconcile }, { AppError }, { ensureSource, recordPush }] = await Promise.all([
    import('../inventory/write-path/reconcile.js'),
    import('../platform/errors.js'),
    import('../collection/sources/service.js'),
  ]);
  try {
    (assertSnapshot as (value: unknown) => void)(document);
  } catch (error) {
    if (error instanceof AppError) {
      const errors = (error.details.errors as { field: string; message: string }[]).slice(0, 20);
      throw new UsageError(
        `${file} is not a valid snapshot:\n${errors.map((e) => `  ${e.field}: ${e.message}`).join('\n')}`,
      );
    }
    throw error;
  }
  const snapshot = document as Snapshot;
  const config = loadConfig();
  const { Progress } = await import('../platform/progress.js');
  const progress = new Progress(`ingest ${file}`, snapshot.items.length, process.stderr);
  await withDatabase(config, flags, async (db) => {
    const source = await ensureSource(db.sql, DEFAULT_TENANT_ID, sourceName, collectorType);
    const started = performance.now();
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
      {
        batchSize: config.reconcileBatchSize,
        statementTimeoutMs: config.bulkStatementTimeoutMs,
        lanes: config.reconcileLanes,
        progress: (done, total) => progress.update(done, total),
      },
    );
    progress.finish(snapshot.items.length);
    // the source shows this push as it shows one through the API: its last collection and health
    await recordPush(db.sql, DEFAULT_TENANT_ID, source.id, new Date(), {
      result,
      durationMs: Math.round(performance.now() - started),
    });
    const outcome = { source: { id: Number(source.id), name: source.name }, ...result };
    // JSON for programs (--json, or a pipe), a summary for a person at a terminal
    if (flags.json === true || !process.stdout.isTTY) console.log(JSON.stringify(outcome, null, 2));
    else console.log(ingestSummary(outcome));
  });
}

/** What `cinv ingest` says it did, on a terminal. */
function ingestSummary(outcome: { source: { id: number; name: string } } & ReconcileResult): string {
  const { source, relationships: r } = outcome;
  const counts = (['created', 'updated', 'unchanged', 'reactivated', 'archived'] as const)
    .map((key) => `${outcome[key]} ${key}`)
    .join(', ');
  return [
    `ingested ${outcome.received} item${outcome.received === 1 ? '' : 's'} into source ${source.name} (id ${source.id}): ${counts}`,
    `change records: ${outcome.changes}`,
    `relationships: ${r.written} written, ${r.removed} removed, ${r.unresolved} unresolved (their target is not in the inventory)`,
  ].join('\n');
}

/** `cinv demo`: loads the demo inventory (or removes it with --remove), showing its progress. */
export async function demoCommand(flags: Flags): Promise<void> {
  const config = loadConfig();
  const { loadDemo, removeDemo } = await import('../collection/demo/service.js');
  const { Progress } = await import('../platform/progress.js');
  await withDatabase(config, flags, async (db) => {
    if (flags.remove === true) {
      const removed = await removeDemo(db.sql, DEFAULT_TENANT_ID, new Date());
      console.log(
        removed.sources.length === 0
          ? 'no demo data to remove'
          : `removed ${removed.sources.join(', ')}: ${removed.cis} CIs and ${removed.changes} change records`,
      );
      return;
    }
    const progress = new Progress('demo events', 0, process.stderr);
    let done = 0;
    const outcome = await loadDemo(db.sql, {
      tenantId: DEFAULT_TENANT_ID,
      now: new Date(),
      batchSize: config.reconcileBatchSize,
      progress: (step, total, what) => progress.update((done = step), total, what),
    });
    if (outcome.loaded) progress.finish(done);
    if (!outcome.loaded) {
      console.log(`the demo is loaded already (${outcome.sources.join(', ')}); \`cinv demo --remove\` removes it`);
      return;
    }
    console.log(
      `loaded the demo: ${outcome.cis} CIs in ${outcome.sources.join(', ')}, ${outcome.changes} change records from ` +
        `${outcome.from.toISOString().slice(0, 16)}Z to ${outcome.to.toISOString().slice(0, 16)}Z (${outcome.steps} events). ` +
        'Open the web interface, or remove it with `cinv demo --remove`.',
    );
  });
}

export async function sweepCommand(flags: Flags): Promise<void> {
  const config = loadConfig();
  const { lifecycleSettings, sweepLifecycle } = await import('../inventory/lifecycle/sweep.js');
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
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 50_000)
    throw new UsageError('--batch-size must be an integer from 1 to 50000');
  const [{ reindex, ReindexError }, { createOpenSearchClient }] = await Promise.all([
    import('../../indexer/reindex.js'),
    import('../history/search/opensearch-index.js'),
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
          indexer: {
            batchSize: config.indexerBatchSize,
            maxAttempts: config.indexerMaxAttempts,
            pollMs: config.indexerPollMs,
          },
        },
        process.stderr,
      );
      console.log(
        `${config.opensearchIndex} now points at ${report.index}: ${report.indexed} documents indexed, ${report.verified} verified against PostgreSQL` +
          (report.previous.length > 0
            ? `; previous: ${report.previous.join(', ')}${report.deleted.length > 0 ? ' (deleted)' : ' (kept; --delete-old removes them)'}`
            : '') +
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
      console.log(
        `  row ${row.id} change ${row.change_id}: ${row.attempts} attempts, parked ${row.parked_at.toISOString()}: ${row.last_error ?? ''}`,
      );
    }
    if (!config.opensearchUrl)
      console.log('OPENSEARCH_URL is not set: nothing consumes the outbox, and the sweep trims rows older than a day');
  });
}

export async function refreshStatsCommand(flags: Flags): Promise<void> {
  const config = loadConfig();
  const { refreshStatsAggregate } = await import('../history/records/stats-store.js');
  await withDatabase(config, flags, async (db) => {
    const started = performance.now();
    const { rows, refreshedAt } = await refreshStatsAggregate(db.sql, new Date());
    console.log(
      JSON.stringify({
        refreshed: true,
        rows,
        refreshed_at: refreshedAt.toISOString(),
        took_ms: Math.round(performance.now() - started),
      }),
    );
  });
}

/** `cinv quality recount`: every CI checked again and the counters compared with a count from the rows. */
export async function qualityRecountCommand(flags: Flags): Promise<void> {
  const config = loadConfig();
  const { recountQuality } = await import('../inventory/quality/service.js');
  await withDatabase(config, flags, async (db) => {
    const app = commandContext(db, config);
    const tenants = await db.sql<{ id: string; slug: string }[]>`select id, slug from tenants order by slug`;
    const wanted = single(flags, 'tenant', false);
    let differing = 0;
    for (const tenant of tenants.filter((t) => wanted === undefined || t.slug === wanted)) {
      const report = await recountQuality(app, tenant.id, flags.fix === true);
      differing += report.differences.length;
      console.log(JSON.stringify({ tenant: tenant.slug, checked: report.checked, differences: report.differences }));
    }
    if (differing > 0 && flags.fix !== true) process.exitCode = 1;
  });
}
