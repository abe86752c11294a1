import { isDeepStrictEqual } from 'node:util';
import { uuidv7 } from 'uuidv7';
import { changeRecord, createdRecord, type ChangedCi, type NewChangeRecord } from '../../history/records/writer.js';
import { contentOf } from './content.js';
import { diffValues, type FieldChange } from '../../history/records/diff.js';
import { ALL_PARTS, partOf } from './parts.js';
import type { UniversalRecord } from './records.js';
import type { RelationshipWrite } from './relationship-store.js';
import type { CiWrite, InventoryKey, SeenCi, StoredContent, StoredState } from './store.js';

/** One batch of records beside what the database holds for them. */
export interface ClassifyInput {
  key: InventoryKey;
  now: Date;
  /** See ReconcileInput.typeDataDerived: type_data changes are then not recorded. */
  typeDataDerived?: boolean;
  records: readonly UniversalRecord[];
  /** The content digest of each record (contentHash), by position. */
  hashes: readonly string[];
  /** The metrics of each record (metricsOf), by position. */
  metrics: readonly (string | null)[];
  /**
   * The lookup's answer (loadStates), by external id: a state for each record that is new (no
   * `ci_id`) or whose stored row must be written again. A record without one is unchanged: its
   * digest matched an active row of the same scope, and the lookup itself moved its `last_seen`
   * and metrics (all a metrics-only collection needs).
   */
  states: ReadonlyMap<string, StoredState>;
}

/** Every write of one batch, decided before the first one is made. */
export interface BatchPlan {
  key: InventoryKey;
  now: Date;
  /** New CIs. */
  inserts: CiWrite[];
  /** Stored CIs written again: changed, seen again while inactive or archived, or moved to this scope. */
  updates: CiWrite[];
  /** `last_seen` and metrics of every inserted and updated CI. */
  seen: SeenCi[];
  /** `CREATED` changes in batch order, then `UPDATED` ones. */
  changes: NewChangeRecord[];
  /** CIs whose outgoing relationships are replaced (the records that carry `relationships`). */
  owners: string[];
  /** What the owners name, once each. */
  relationships: RelationshipWrite[];
  /** Records the lookup found unchanged. */
  unchanged: number;
  /** Updated CIs that were inactive or archived. */
  reactivated: number;
}

/** type_data as the CI row keeps it: metrics live beside last_seen. */
function withoutMetrics(typeData: Record<string, unknown> | undefined): Record<string, unknown> {
  if (!typeData || !('metrics' in typeData)) return typeData ?? {};
  const { metrics: _metrics, ...rest } = typeData;
  return rest;
}

/**
 * The recorded changes between a stored CI and the record that replaces it; volatile paths and
 * metrics are not among them. `type_data` is recorded only where it says something raw_data does
 * not: never when it is derived from raw_data, and otherwise not for a value that moved exactly as
 * a raw_data value of the same record did (a copy of it).
 */
export function fieldChanges(before: StoredContent, record: UniversalRecord, typeDataDerived = false): FieldChange[] {
  const old = contentOf(before);
  const next = contentOf(record);
  const out: FieldChange[] = [];
  diffValues('name', old.name, next.name, out);
  diffValues('namespace', old.namespace, next.namespace, out);
  diffValues('ci_type', old.ci_type, next.ci_type, out);
  if (before.status !== 'active') out.push({ field: 'status', old_value: before.status, new_value: 'active' });
  const rawFrom = out.length;
  diffValues('raw_data', old.raw, next.raw, out);
  if (typeDataDerived) return out;
  const raw = out.slice(rawFrom);
  const mirrors = (change: FieldChange) =>
    raw.some(
      (r) => isDeepStrictEqual(r.old_value, change.old_value) && isDeepStrictEqual(r.new_value, change.new_value),
    );
  out.push(...diffValues('type_data', old.typeData, next.typeData).filter((change) => !mirrors(change)));
  return out;
}

function ciWrite(key: InventoryKey, record: UniversalRecord, ciId: string, hash: string): CiWrite {
  return {
    ci_id: ciId,
    scope_id: key.scopeId,
    external_id: record.external_id,
    ci_type: record.ci_type,
    name: record.name,
    namespace: record.namespace ?? null,
    raw_data: record.raw_data,
    type_data: withoutMetrics(record.type_data),
    content_hash: hash,
  };
}

/**
 * Decides what one batch writes, without touching the database: which records are new, which
 * stored CIs are written again and with which change records, which were unchanged, and whose
 * relationships are replaced. New CIs get their UUIDv7 `ci_id` here.
 */
export function classifyBatch(input: ClassifyInput): BatchPlan {
  const { key, now } = input;
  const plan: BatchPlan = {
    key,
    now,
    inserts: [],
    updates: [],
    seen: [],
    changes: [],
    owners: [],
    relationships: [],
    unchanged: 0,
    reactivated: 0,
  };
  const updated: NewChangeRecord[] = [];
  const relationships = new Map<string, RelationshipWrite>();
  input.records.forEach((record, index) => {
    const state = input.states.get(record.external_id);
    if (!state) {
      plan.unchanged++;
      return;
    }
    const write = ciWrite(key, record, state.ci_id ?? uuidv7(), input.hashes[index]!);
    const ci: ChangedCi = { ...write, tenant_id: key.tenantId, source_id: key.sourceId };
    plan.seen.push({ ci_id: write.ci_id, metrics: input.metrics[index]! });
    if (record.relationships) {
      plan.owners.push(write.ci_id);
      for (const rel of record.relationships) {
        const row = { from_ci_id: write.ci_id, to_external_id: rel.target_external_id, type: rel.type };
        relationships.set(`${rel.type}\u0000${rel.target_external_id}\u0000${write.ci_id}`, row);
      }
    }
    if (!state.ci_id) {
      plan.inserts.push(write);
      plan.changes.push(createdRecord(ci, now));
      return;
    }
    plan.updates.push(write);
    const before = state.stored!;
    if (before.status !== 'active') plan.reactivated++;
    const fields = fieldChanges(before, record, input.typeDataDerived);
    const movedFrom = before.scope_id !== key.scopeId;
    if (movedFrom) fields.unshift({ field: 'scope_id', old_value: before.scope_id, new_value: key.scopeId });
    // the digest also covers relationships, which change no recorded field
    if (fields.length > 0) {
      const change = changeRecord(ci, 'UPDATED', fields, now);
      // its old values are the other instance's: only readers of both see it (sql/0039)
      if (movedFrom) change.moved_from_scope_id = before.scope_id;
      updated.push(change);
    }
  });
  plan.changes.push(...updated);
  plan.relationships = [...relationships.values()];
  return plan;
}

/** A reconcile's work in batches: records (the last one of an external id wins) and deletions, each once. */
export function splitBatches(
  records: readonly UniversalRecord[],
  deletions: readonly string[],
  batchSize: number,
  inLanes = false,
): { lanes: Lane[]; gone: string[][] } {
  const byId = new Map<string, UniversalRecord>();
  for (const record of records) byId.set(record.external_id, record);
  const upserts = [...byId.values()];
  const gone = chunks([...new Set(deletions)], batchSize);
  // what fits one batch is one transaction either way: lanes would only add a closing pass
  if (!inLanes || upserts.length <= batchSize) return { lanes: [{ batches: chunks(upserts, batchSize) }], gone };
  const parts = ALL_PARTS.map((): UniversalRecord[] => []);
  for (const record of upserts) parts[partOf(record.external_id)]!.push(record);
  return { lanes: parts.map((held, part) => ({ part, batches: chunks(held, batchSize) })), gone };
}

/** The batches one lane writes, in order; `part` is the source's part they hold, or undefined for any part. */
export interface Lane {
  part?: number;
  batches: UniversalRecord[][];
}

function chunks<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
