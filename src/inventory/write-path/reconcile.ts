import type { Sql } from '../../platform/db/database.js';
import { holdHeapTight } from '../../platform/observability/heap-growth.js';
import { cisReconciled } from '../../platform/observability/metrics.js';
import { archiveWithHistory } from './archive.js';
import { crossesInstances, NAMED_REFUSALS, reconcileBatch } from './batch.js';
import { countCreated, newBulkLoad, type BulkLoad } from './bulk-load.js';
import { splitBatches, type Lane } from './classify.js';
import { Digests } from './digests.js';
import { addBatch, emptyReconcileResult, type ReconcileResult } from './reconcile-result.js';
import type { UniversalRecord } from './records.js';
import { resolveArrivedTargets } from './relationship-store.js';
import { analyzeInventory, findIdsByExternalId, findOutsideWritable, lockSource, type InventoryKey } from './store.js';
import { inTurn } from './turns.js';

// the write path's entry: its callers take the checks and the result's arithmetic from here too
export { newBulkLoad, type BulkLoad } from './bulk-load.js';
export { addReconcileResult, emptyReconcileResult, type ReconcileResult } from './reconcile-result.js';
export { assertSnapshot, assertStorable, unstorableText } from './snapshot-check.js';

export interface ReconcileInput {
  tenantId: string;
  sourceId: string;
  /** The instance inside the source these records come from (data scopes name it). */
  scopeId: string | null;
  /**
   * `snapshot`: the records are everything the source has now; objects left out are simply not
   * seen and age into `inactive` through the lifecycle sweep. `delta`: upserts plus explicit
   * `deletions`, which archive at once.
   */
  mode: 'snapshot' | 'delta';
  records: readonly UniversalRecord[];
  deletions?: readonly string[];
  /**
   * Whether `type_data` is computed from `raw_data`, as every collector type computes it: its
   * changes then only repeat raw_data's and are not recorded. Pushed type data (the default) is
   * the pusher's own and is recorded, but for a value that mirrors a raw_data change of the record.
   */
  typeDataDerived?: boolean;
  /**
   * The instances of the source the writer may write into (writableInstances), or undefined for
   * all of them: a collection, or a principal holding the whole source. A record or deletion naming
   * a CI stored in another instance is refused (403), and references resolve only inside them.
   */
  writable?: readonly string[];
}

export interface ReconcileOptions {
  now?: Date;
  batchSize?: number;
  /** How long to wait for another reconcile of the same source in this process (default 30 s). */
  turnWaitMs?: number;
  /** Statement timeout inside the batch transactions (CINV_BULK_STATEMENT_TIMEOUT); the session's otherwise. */
  statementTimeoutMs?: number;
  /** Called after each batch is committed, with the records reconciled so far and in all. */
  progress?: (done: number, total: number) => void;
  /**
   * Whether more than one batch's records are written in parallel lanes, one per part of the
   * source (parts.ts), each on a connection of its own (CINV_RECONCILE_LANES). The database's
   * work on a first load is most of its time, and one connection keeps one of its cores busy.
   */
  lanes?: boolean;
  /**
   * The write this reconcile is one part of, when a caller reconciles a long write in parts (a
   * collector's list page by page, an NDJSON push batch by batch): the planner statistics are
   * refreshed once per write, however it is cut up (see BulkLoad).
   */
  load?: BulkLoad;
}

/**
 * Brings the stored inventory of one source (and scope) in line with what a collector saw.
 * Works in batches, each one transaction holding the CI writes, their change records, outbox rows
 * and relationships; unchanged objects (equal content digest) only get `last_seen` moved. Every
 * batch is complete on its own, so an interrupted reconcile leaves a consistent inventory that
 * the next one completes. Reconciles of one source take turns: within a process as a whole,
 * across processes batch by batch (the source's transaction lock). On a PostgreSQL server a
 * reconcile of more than one batch may write in lanes (ReconcileOptions.lanes).
 */
export async function reconcile(
  sql: Sql,
  input: ReconcileInput,
  options: ReconcileOptions = {},
): Promise<ReconcileResult> {
  const release = holdHeapTight();
  try {
    return await inTurn(
      `${input.tenantId}:${input.sourceId}`,
      () => reconcileNow(sql, input, options),
      options.turnWaitMs,
    );
  } finally {
    release();
  }
}

async function reconcileNow(sql: Sql, input: ReconcileInput, options: ReconcileOptions): Promise<ReconcileResult> {
  const now = options.now ?? new Date();
  // an unset scope is null: an undefined parameter would fail inside the driver, mid-pipeline
  const key: InventoryKey = {
    tenantId: input.tenantId,
    sourceId: input.sourceId,
    scopeId: input.scopeId ?? null,
    writable: input.writable,
  };
  const { lanes, gone } = splitBatches(
    input.records,
    input.deletions ?? [],
    options.batchSize ?? 1000,
    options.lanes === true,
  );
  const result: ReconcileResult = { ...emptyReconcileResult(), received: input.records.length };
  const run: UpsertRun = {
    key,
    now,
    statementTimeoutMs: options.statementTimeoutMs,
    typeDataDerived: input.typeDataDerived === true,
    progress: options.progress,
    total: lanes.reduce((sum, lane) => sum + lane.batches.reduce((inLane, batch) => inLane + batch.length, 0), 0),
    done: 0,
    owners: new Set(),
    load: options.load ?? newBulkLoad(),
    failed: false,
  };
  if (key.writable !== undefined) {
    // refused whole before anything is written; each batch checks again under its lock
    const named = [...input.records.map((record) => record.external_id), ...(input.deletions ?? [])];
    const outside = await findOutsideWritable(sql, key, named, NAMED_REFUSALS);
    if (outside.length > 0) throw crossesInstances(outside.map((ci) => ci.external_id));
  }
  try {
    await inParallel(lanes.map((lane) => () => upsertLane(sql, lane, run, result)));
  } catch (error) {
    // what the lanes committed holds references between the parts: resolve them if the database
    // still answers, and report the lane's failure either way
    if (lanes.length > 1) await closeLanes(sql, run, result).catch(() => {});
    throw error;
  }
  if (lanes.length > 1) await closeLanes(sql, run, result);
  for (const batch of gone) {
    const archived = await archiveGone(sql, key, batch, now, options.statementTimeoutMs);
    result.archived += archived;
    result.changes += archived;
  }
  cisReconciled.inc({ outcome: 'created' }, result.created);
  cisReconciled.inc({ outcome: 'updated' }, result.updated);
  cisReconciled.inc({ outcome: 'unchanged' }, result.unchanged);
  cisReconciled.inc({ outcome: 'archived' }, result.archived);
  return result;
}

/** What the lanes of one reconcile share. */
interface UpsertRun {
  key: InventoryKey;
  now: Date;
  statementTimeoutMs: number | undefined;
  typeDataDerived: boolean;
  progress: ReconcileOptions['progress'];
  total: number;
  done: number;
  /** The relationship owners of this reconcile so far. */
  owners: Set<string>;
  load: BulkLoad;
  /** A lane failed: the others stop before their next batch. */
  failed: boolean;
}

/**
 * Runs every task at once and waits for all of them, failed or not, before it answers: a lane
 * still writing must not outlive the reconcile's turn at its source. Rejects with the first failure.
 */
async function inParallel(tasks: (() => Promise<void>)[]): Promise<void> {
  const settled = await Promise.allSettled(tasks.map((task) => task()));
  const failure = settled.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (failure) throw failure.reason;
}

async function upsertLane(sql: Sql, lane: Lane, run: UpsertRun, result: ReconcileResult): Promise<void> {
  const { key, now, statementTimeoutMs, typeDataDerived } = run;
  const { batches, part } = lane;
  // each batch's digests are computed while the batch before waits for the database
  let digests = new Digests(batches[0] ?? []);
  try {
    for (const [index, records] of batches.entries()) {
      if (run.failed) return;
      const hashes = digests.all();
      const next = new Digests(batches[index + 1] ?? []);
      const meanwhile = (answered: Promise<unknown>) => next.whileWaiting(answered);
      const { plan, written } = await reconcileBatch(sql, {
        key,
        now,
        statementTimeoutMs,
        records,
        hashes,
        meanwhile,
        typeDataDerived,
        lane: part,
      });
      digests = next;
      addBatch(result, run.owners, plan, written);
      run.done += records.length;
      run.progress?.(run.done, run.total);
      if (countCreated(run.load, plan.inserts.length)) await analyzeInventory(sql);
    }
  } catch (error) {
    run.failed = true;
    throw error;
  }
}

/**
 * After the lanes: the references from one part to CIs another lane created, which neither lane
 * could resolve, become relationships (see resolveArrivedTargets), also after a lane failed. A
 * reconcile that stops before this pass (the process killed, the database gone) leaves them
 * pending; the next reconcile in lanes resolves them.
 */
async function closeLanes(sql: Sql, run: UpsertRun, result: ReconcileResult): Promise<void> {
  const resolvedOwners = await sql.begin(async (tx) => {
    await lockSource(tx, run.key.tenantId, run.key.sourceId, run.statementTimeoutMs);
    return resolveArrivedTargets(tx, run.key, run.now);
  });
  result.relationships.written += resolvedOwners.length;
  result.relationships.unresolved -= resolvedOwners.filter((owner) => run.owners.has(owner)).length;
}

/** Archives one batch of a delta's deletions (by external id) with their `DELETED` changes; returns how many moved. */
async function archiveGone(
  sql: Sql,
  key: InventoryKey,
  externalIds: string[],
  now: Date,
  statementTimeoutMs: number | undefined,
): Promise<number> {
  const archived = await sql.begin(async (tx) => {
    await lockSource(tx, key.tenantId, key.sourceId, statementTimeoutMs);
    const outside = await findOutsideWritable(tx, key, externalIds, NAMED_REFUSALS);
    if (outside.length > 0) throw crossesInstances(outside.map((ci) => ci.external_id));
    const ids = (await findIdsByExternalId(tx, key, externalIds)).map((r) => r.ci_id);
    return archiveWithHistory(tx, key.tenantId, ids, now);
  });
  return archived.length;
}
