import { uuidv7 } from 'uuidv7';
import { recordChanges, type NewChangeRecord } from './change-writer.js';
import type { Sql } from '../db/database.js';
import { validationFailed, type FieldError } from '../http/errors.js';
import { compileBody, MAX_JSON_DEPTH, nestsDeeperThan, toFieldErrors } from '../http/validation.js';
import { cisReconciled } from '../observability/metrics.js';
import { archiveWithHistory } from './archive.js';
import { contentHash, contentOf, metricsOf } from './content.js';
import { diffValues, type FieldChange } from './diff.js';
import { Snapshot, type UniversalRecord } from './records.js';
import {
  analyzeInventory,
  findIdsByExternalId,
  insertCis,
  loadContents,
  loadStates,
  lockSource,
  replaceRelationships,
  resolvePendingRelationships,
  touchLastSeen,
  updateCis,
  type CiWrite,
  type RelationshipWrite,
  type StoredContent,
} from './store.js';
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
  for (const key of ['received', 'created', 'updated', 'unchanged', 'reactivated', 'archived', 'changes'] as const) total[key] += part[key];
  total.relationships.written += part.relationships.written;
  total.relationships.removed += part.relationships.removed;
  total.relationships.unresolved += part.relationships.unresolved;
}

export interface ReconcileOptions {
  now?: Date;
  batchSize?: number;
  /** How long to wait for another reconcile of the same source in this process (default 30 s). */
  turnWaitMs?: number;
  /** Statement timeout inside the batch transactions (CINV_BULK_STATEMENT_TIMEOUT); the session's otherwise. */
  statementTimeoutMs?: number;
}

const validateSnapshot = compileBody(Snapshot);
const ANALYZE_AFTER_CREATED = 10_000;

const NUL = '\u0000';

/**
 * Whether any string or key inside a JSON value holds a NUL character. Documents reach this after
 * the depth check, so the recursion is bounded.
 */
export function containsNul(node: unknown): boolean {
  if (typeof node === 'string') return node.includes(NUL);
  if (typeof node !== 'object' || node === null) return false;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) if (containsNul(node[i])) return true;
    return false;
  }
  for (const key in node) {
    if (key.includes(NUL) || containsNul((node as Record<string, unknown>)[key])) return true;
  }
  return false;
}

/**
 * Refuses snapshots that could only fail midway, after earlier batches were committed: text with
 * NUL characters (jsonb and text cannot hold \u0000), and a delta naming one id both as an item and
 * as a deletion, which has no order to apply them in (and would not be idempotent on retry).
 */
export function assertStorable(snapshot: Snapshot): void {
  const errors: FieldError[] = [];
  const refuse = (field: string, message: string) => errors.push({ field, location: 'body', message });
  snapshot.items.forEach((item, index) => {
    if (containsNul(item)) refuse(`items.${index}`, 'must not contain NUL characters (\\u0000)');
  });
  if (snapshot.scope_id?.includes(NUL)) refuse('scope_id', 'must not contain NUL characters (\\u0000)');
  const itemIds = new Set(snapshot.items.map((item) => item.external_id));
  (snapshot.deletions ?? []).forEach((id, index) => {
    if (id.includes(NUL)) refuse(`deletions.${index}`, 'must not contain NUL characters (\\u0000)');
    else if (itemIds.has(id)) refuse(`deletions.${index}`, 'is also listed in items; send an id as an item or as a deletion, not both');
  });
  if (errors.length > 0) throw validationFailed(errors);
}

/** Validates a snapshot document (depth, schema, then storability) before anything is written. */
export function assertSnapshot(document: unknown): asserts document is Snapshot {
  if (nestsDeeperThan(document, MAX_JSON_DEPTH)) {
    throw validationFailed([{ field: '(root)', location: 'body', message: `must not nest deeper than ${MAX_JSON_DEPTH} levels` }]);
  }
  if (!validateSnapshot(document)) throw validationFailed(toFieldErrors(validateSnapshot.errors, 'body'));
  assertStorable(document as Snapshot);
}

function fieldChanges(before: StoredContent, record: UniversalRecord): FieldChange[] {
  const old = contentOf(before);
  const next = contentOf(record);
  const out: FieldChange[] = [];
  diffValues('name', old.name, next.name, out);
  diffValues('namespace', old.namespace, next.namespace, out);
  diffValues('ci_type', old.ci_type, next.ci_type, out);
  if (before.status !== 'active') out.push({ field: 'status', old_value: before.status, new_value: 'active' });
  diffValues('raw_data', old.raw, next.raw, out);
  diffValues('type_data', old.typeData, next.typeData, out);
  return out;
}

/** type_data as the CI row keeps it: metrics live beside last_seen. */
function withoutMetrics(typeData: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!typeData || !('metrics' in typeData)) return typeData ?? {};
  const { metrics: _metrics, ...rest } = typeData;
  return rest;
}

function createdChanges(record: UniversalRecord): FieldChange[] {
  return [
    { field: 'name', old_value: null, new_value: record.name },
    { field: 'namespace', old_value: null, new_value: record.namespace ?? null },
    { field: 'ci_type', old_value: null, new_value: record.ci_type },
    { field: 'status', old_value: null, new_value: 'active' },
  ];
}

function dedupe(records: readonly UniversalRecord[]): UniversalRecord[] {
  const byId = new Map<string, UniversalRecord>();
  for (const record of records) byId.set(record.external_id, record);
  return [...byId.values()];
}

interface BatchOutcome {
  created: number;
  updated: number;
  unchanged: number;
  reactivated: number;
  changes: number;
  relationships: { written: number; removed: number; pending: number };
  /** CIs of this batch whose outgoing relationships were replaced. */
  owners: string[];
  /** Owners (of this or an earlier reconcile) whose pending references resolved in this batch. */
  resolvedOwners: string[];
}

/**
 * `whileLookingUp` runs while the database works on the batch's lookup (the longest statement of
 * an unchanged re-collection); the caller hashes the next batch there, so Node and PostgreSQL
 * work at the same time instead of taking turns.
 */
async function reconcileBatch(
  sql: Sql,
  input: ReconcileInput,
  batch: UniversalRecord[],
  hashes: string[],
  now: Date,
  statementTimeoutMs: number | undefined,
  whileLookingUp: () => void,
): Promise<BatchOutcome> {
  const { tenantId, sourceId, scopeId } = input;
  return sql.begin(async (tx) => {
    await lockSource(tx, tenantId, sourceId, statementTimeoutMs);
    const metrics = batch.map(metricsOf);
    const lookup = loadStates(tx, input, { externalIds: batch.map((r) => r.external_id), hashes, metrics }, now);
    lookup.execute();
    // one turn of the event loop puts the query on the wire before the CPU-bound work starts
    await new Promise((resolve) => setImmediate(resolve));
    whileLookingUp();
    const states = new Map((await lookup).map((s) => [s.external_id, s]));
    const outcome: BatchOutcome = {
      created: 0,
      updated: 0,
      unchanged: 0,
      reactivated: 0,
      changes: 0,
      relationships: { written: 0, removed: 0, pending: 0 },
      owners: [],
      resolvedOwners: [],
    };
    const inserts: CiWrite[] = [];
    const updates: { write: CiWrite; record: UniversalRecord }[] = [];
    const touched: { ci_id: string; metrics: string | null }[] = [];
    const owners = outcome.owners;
    const relationships = new Map<string, RelationshipWrite>();
    const changes: NewChangeRecord[] = [];
    const change = (write: CiWrite, type: NewChangeRecord['change_type'], fields: FieldChange[]): NewChangeRecord => ({
      tenant_id: tenantId,
      ci_id: write.ci_id,
      source_id: sourceId,
      scope_id: scopeId,
      ci_name: write.name,
      ci_namespace: write.namespace,
      ci_type: write.ci_type,
      change_type: type,
      changed_at: now,
      changes: fields,
    });

    batch.forEach((record, index) => {
      const state = states.get(record.external_id);
      if (!state) {
        outcome.unchanged++;
        return;
      }
      const write: CiWrite = {
        ci_id: state.ci_id ?? uuidv7(),
        scope_id: scopeId,
        external_id: record.external_id,
        ci_type: record.ci_type,
        name: record.name,
        namespace: record.namespace ?? null,
        raw_data: record.raw_data,
        type_data: withoutMetrics(record.type_data),
        content_hash: hashes[index]!,
      };
      touched.push({ ci_id: write.ci_id, metrics: metrics[index]! });
      if (record.relationships) {
        owners.push(write.ci_id);
        for (const rel of record.relationships) {
          const row = { from_ci_id: write.ci_id, to_external_id: rel.target_external_id, type: rel.type };
          relationships.set(`${rel.type}\u0000${rel.target_external_id}\u0000${write.ci_id}`, row);
        }
      }
      if (state.ci_id) {
        updates.push({ write, record });
      } else {
        inserts.push(write);
        changes.push(change(write, 'CREATED', createdChanges(record)));
      }
    });

    const before = new Map((await loadContents(tx, updates.map((u) => u.write.ci_id))).map((c) => [c.ci_id, c]));
    for (const { write, record } of updates) {
      const old = before.get(write.ci_id)!;
      const fields = fieldChanges(old, record);
      if (old.status !== 'active') outcome.reactivated++;
      // the digest also covers relationships, which change no recorded field
      if (fields.length > 0) changes.push(change(write, 'UPDATED', fields));
    }
    outcome.created = inserts.length;
    outcome.updated = updates.length;

    await insertCis(tx, tenantId, sourceId, inserts, now);
    await updateCis(tx, updates.map((u) => u.write), now);
    await touchLastSeen(tx, tenantId, touched, now);
    outcome.changes = await recordChanges(tx, changes);
    // relationships land with their owners: a crash between batches cannot leave an owner stored
    // (and its digest saying so) without them
    outcome.relationships = await replaceRelationships(tx, input, owners, [...relationships.values()], now);
    outcome.resolvedOwners = await resolvePendingRelationships(tx, input, inserts.map((w) => w.external_id), now);
    return outcome;
  });
}

/**
 * Brings the stored inventory of one source (and scope) in line with what a collector saw.
 * Works in batches, each one transaction holding the CI writes, their change records, outbox rows
 * and relationships; unchanged objects (equal content digest) only get `last_seen` moved. Every
 * batch is complete on its own, so an interrupted reconcile leaves a consistent inventory that
 * the next one completes. Reconciles of one source take turns: within a process as a whole,
 * across processes batch by batch (the source's transaction lock).
 */
export function reconcile(sql: Sql, input: ReconcileInput, options: ReconcileOptions = {}): Promise<ReconcileResult> {
  return inTurn(`${input.tenantId}:${input.sourceId}`, () => reconcileNow(sql, input, options), options.turnWaitMs);
}

async function reconcileNow(sql: Sql, input: ReconcileInput, options: ReconcileOptions): Promise<ReconcileResult> {
  const now = options.now ?? new Date();
  const batchSize = options.batchSize ?? 1000;
  const records = dedupe(input.records);
  const result: ReconcileResult = {
    received: input.records.length,
    created: 0,
    updated: 0,
    unchanged: 0,
    reactivated: 0,
    archived: 0,
    changes: 0,
    relationships: { written: 0, removed: 0, unresolved: 0 },
  };
  const owners = new Set<string>();
  let analyzed = false;
  const batches: UniversalRecord[][] = [];
  for (let i = 0; i < records.length; i += batchSize) batches.push(records.slice(i, i + batchSize));
  // digests are computed outside the transactions (the source lock is held only for SQL), each
  // batch's while the previous batch's lookup runs in the database
  let hashes = batches[0]?.map(contentHash) ?? [];
  for (const [index, batch] of batches.entries()) {
    let next: string[] | undefined;
    const prepareNext = () => (next ??= batches[index + 1]?.map(contentHash));
    const outcome = await reconcileBatch(sql, input, batch, hashes, now, options.statementTimeoutMs, prepareNext);
    hashes = prepareNext() ?? [];
    result.created += outcome.created;
    result.updated += outcome.updated;
    result.unchanged += outcome.unchanged;
    result.reactivated += outcome.reactivated;
    result.changes += outcome.changes;
    result.relationships.written += outcome.relationships.written;
    result.relationships.removed += outcome.relationships.removed;
    result.relationships.unresolved += outcome.relationships.pending;
    for (const owner of outcome.owners) owners.add(owner);
    // references from this reconcile that a later batch resolved are no longer unresolved
    result.relationships.unresolved -= outcome.resolvedOwners.filter((owner) => owners.has(owner)).length;
    result.relationships.written += outcome.resolvedOwners.length;
    // a large first load leaves the planner believing the tables are nearly empty until
    // autovacuum catches up; the batches after this point are planned for the real size
    if (!analyzed && result.created >= ANALYZE_AFTER_CREATED) {
      await analyzeInventory(sql);
      analyzed = true;
    }
  }

  const deletions = [...new Set(input.deletions ?? [])];
  for (let i = 0; i < deletions.length; i += batchSize) {
    const batch = deletions.slice(i, i + batchSize);
    const archived = await sql.begin(async (tx) => {
      await lockSource(tx, input.tenantId, input.sourceId, options.statementTimeoutMs);
      const ids = (await findIdsByExternalId(tx, input.tenantId, input.sourceId, batch)).map((r) => r.ci_id);
      return archiveWithHistory(tx, input.tenantId, ids, now);
    });
    result.archived += archived.length;
    result.changes += archived.length;
  }

  cisReconciled.inc({ outcome: 'created' }, result.created);
  cisReconciled.inc({ outcome: 'updated' }, result.updated);
  cisReconciled.inc({ outcome: 'unchanged' }, result.unchanged);
  cisReconciled.inc({ outcome: 'archived' }, result.archived);
  return result;
}
