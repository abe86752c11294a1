import type { Sql } from '../../platform/db/database.js';
import { validationFailed, type FieldError } from '../../platform/errors.js';
import { compileBody, MAX_JSON_DEPTH, nestsDeeperThan, toFieldErrors } from '../../platform/validation.js';
import { holdHeapTight } from '../../platform/observability/heap-growth.js';
import { cisReconciled } from '../../platform/observability/metrics.js';
import { archiveWithHistory } from './archive.js';
import { crossesInstances, NAMED_REFUSALS, reconcileBatch, type PlanWritten } from './batch.js';
import { splitBatches, type BatchPlan, type Lane } from './classify.js';
import { Digests } from './digests.js';
import { Snapshot, type UniversalRecord } from './records.js';
import { resolveArrivedTargets } from './relationship-store.js';
import { analyzeInventory, findIdsByExternalId, findOutsideWritable, lockSource, type InventoryKey } from './store.js';
import { inTurn } from './turns.js';

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

export interface ReconcileResult {
  received: number;
  created: number;
  updated: number;
  unchanged: number;
  reactivated: number;
  archived: number;
  changes: number;
  relationships: { written: number; removed: number; unresolved: number };
}

export const emptyReconcileResult = (): ReconcileResult => ({
  received: 0,
  created: 0,
  updated: 0,
  unchanged: 0,
  reactivated: 0,
  archived: 0,
  changes: 0,
  relationships: { written: 0, removed: 0, unresolved: 0 },
});

/** Adds what one reconcile did to a running total (pushes and collections reconcile in parts). */
export function addReconcileResult(total: ReconcileResult, part: ReconcileResult): void {
  for (const key of ['received', 'created', 'updated', 'unchanged', 'reactivated', 'archived', 'changes'] as const)
    total[key] += part[key];
  total.relationships.written += part.relationships.written;
  total.relationships.removed += part.relationships.removed;
  total.relationships.unresolved += part.relationships.unresolved;
}

const ANALYZE_AFTER_CREATED = 10_000;

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
 * What the reconciles of one write share: how many CIs they created, and whether the planner
 * statistics were refreshed for them. A large first load leaves the planner believing the tables
 * are nearly empty until autovacuum catches up, which may be minutes later or never; the write's
 * statements after ANALYZE_AFTER_CREATED creations are planned for the real size. Counted per
 * reconcile call, a collection of 185 200 objects in pages of 500 never reached it, and each page's
 * statements read the source's rows through an index that does not lead with the external id.
 */
export interface BulkLoad {
  created: number;
  analyzed: boolean;
  /** How many creations the refresh waits for. */
  analyzeAfter: number;
}

export const newBulkLoad = (analyzeAfter = ANALYZE_AFTER_CREATED): BulkLoad => ({
  created: 0,
  analyzed: false,
  analyzeAfter,
});

const validateSnapshot = compileBody(Snapshot);

const NUL = '\u0000';
const NUL_MESSAGE = 'must not contain NUL characters (\\u0000)';
const SURROGATE_MESSAGE = 'must be valid Unicode text: a surrogate (\\ud800-\\udfff) must be half of a high-low pair';

/** Whether a string is valid Unicode (no unpaired surrogate); String#isWellFormed is ES2024. */
const wellFormed = (text: string): boolean => (text as string & { isWellFormed(): boolean }).isWellFormed();

const TOO_DEEP = 1;
const HOLDS_NUL = 2;
const HOLDS_LONE_SURROGATE = 4;

const textFlags = (text: string): number =>
  (text.includes(NUL) ? HOLDS_NUL : 0) | (wellFormed(text) ? 0 : HOLDS_LONE_SURROGATE);

/**
 * What one walk of a JSON value finds: nesting deeper than `limit` (counting `depth` for the
 * value itself), and text, in keys or values, that PostgreSQL cannot store. Stops at the first
 * node too deep.
 */
function scan(node: unknown, depth: number, limit: number): number {
  if (typeof node === 'string') return textFlags(node);
  if (typeof node !== 'object' || node === null) return 0;
  if (depth > limit) return TOO_DEEP;
  let found = 0;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      found |= scan(node[i], depth + 1, limit);
      if (found & TOO_DEEP) return found;
    }
    return found;
  }
  for (const key in node) {
    found |= textFlags(key) | scan((node as Record<string, unknown>)[key], depth + 1, limit);
    if (found & TOO_DEEP) return found;
  }
  return found;
}

const messageOf = (found: number): string | undefined =>
  found & HOLDS_NUL ? NUL_MESSAGE : found & HOLDS_LONE_SURROGATE ? SURROGATE_MESSAGE : undefined;

/**
 * Why a JSON value cannot be stored (text and jsonb hold neither NUL characters nor unpaired
 * surrogates, which JSON's \u escapes can carry), or undefined. Documents reach this after the
 * depth check, so the recursion is bounded.
 */
export function unstorableText(node: unknown): string | undefined {
  return messageOf(scan(node, 1, Infinity));
}

/**
 * Refuses snapshots that could only fail midway, after earlier batches were committed: text that
 * cannot be stored (see unstorableText), and a delta naming one id both as an item and as a
 * deletion, which has no order to apply them in (and would not be idempotent on retry).
 * `unstorableItems`, when the caller has already looked, says why each refused item is refused.
 */
export function assertStorable(snapshot: Snapshot, unstorableItems?: ReadonlyMap<number, string>): void {
  const errors: FieldError[] = [];
  const refuse = (field: string, message: string) => errors.push({ field, location: 'body', message });
  snapshot.items.forEach((item, index) => {
    const message = unstorableItems ? unstorableItems.get(index) : unstorableText(item);
    if (message) refuse(`items.${index}`, message);
  });
  const scopeMessage = snapshot.scope_id == null ? undefined : messageOf(textFlags(snapshot.scope_id));
  if (scopeMessage) refuse('scope_id', scopeMessage);
  const deletions = snapshot.deletions ?? [];
  // only a delta with deletions needs the items' ids: a full collection skips a set of every id
  const itemIds = new Set(deletions.length > 0 ? snapshot.items.map((item) => item.external_id) : []);
  deletions.forEach((id, index) => {
    const message = messageOf(textFlags(id));
    if (message) refuse(`deletions.${index}`, message);
    else if (itemIds.has(id))
      refuse(`deletions.${index}`, 'is also listed in items; send an id as an item or as a deletion, not both');
  });
  if (errors.length > 0) throw validationFailed(errors);
}

/**
 * The depth check over a whole snapshot, which also notes on the way the items holding text that
 * cannot be stored: a bulk document is walked once instead of twice (the walks were a third of its
 * validation). `unstorableItems` is undefined when the document has no item list to walk item by
 * item.
 */
function scanSnapshot(document: unknown): { tooDeep: boolean; unstorableItems?: Map<number, string> } {
  const items =
    typeof document === 'object' && document !== null && !Array.isArray(document)
      ? (document as { items?: unknown }).items
      : undefined;
  if (!Array.isArray(items) || MAX_JSON_DEPTH < 2) return { tooDeep: nestsDeeperThan(document, MAX_JSON_DEPTH) };
  const root = document as Record<string, unknown>;
  for (const key in root) {
    // a member of the root sits at depth 2
    if (key !== 'items' && nestsDeeperThan(root[key], MAX_JSON_DEPTH - 1)) return { tooDeep: true };
  }
  const unstorableItems = new Map<number, string>();
  for (let i = 0; i < items.length; i++) {
    const found = scan(items[i], 3, MAX_JSON_DEPTH);
    if (found & TOO_DEEP) return { tooDeep: true };
    const message = messageOf(found);
    if (message) unstorableItems.set(i, message);
  }
  return { tooDeep: false, unstorableItems };
}

/** Validates a snapshot document (depth, schema, then storability) before anything is written. */
export function assertSnapshot(document: unknown): asserts document is Snapshot {
  const { tooDeep, unstorableItems } = scanSnapshot(document);
  if (tooDeep) {
    throw validationFailed([
      { field: '(root)', location: 'body', message: `must not nest deeper than ${MAX_JSON_DEPTH} levels` },
    ]);
  }
  if (!validateSnapshot(document)) throw validationFailed(toFieldErrors(validateSnapshot.errors, 'body'));
  assertStorable(document as Snapshot, unstorableItems);
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
      run.load.created += plan.inserts.length;
      if (!run.load.analyzed && run.load.created >= run.load.analyzeAfter) {
        run.load.analyzed = true;
        await analyzeInventory(sql);
      }
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

/** Adds one batch to the result; `owners` collects the relationship owners of this reconcile so far. */
function addBatch(result: ReconcileResult, owners: Set<string>, plan: BatchPlan, written: PlanWritten): void {
  result.created += plan.inserts.length;
  result.updated += plan.updates.length;
  result.unchanged += plan.unchanged;
  result.reactivated += plan.reactivated;
  result.changes += written.changes;
  result.relationships.written += written.relationships.written + written.resolvedOwners.length;
  result.relationships.removed += written.relationships.removed;
  result.relationships.unresolved += written.relationships.pending;
  for (const owner of plan.owners) owners.add(owner);
  // references from this reconcile that a later batch resolved are no longer unresolved
  result.relationships.unresolved -= written.resolvedOwners.filter((owner) => owners.has(owner)).length;
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
