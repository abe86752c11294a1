import { recordChanges } from '../history/writer.js';
import type { Queryable, Sql } from '../db/database.js';
import { classifyBatch, type BatchPlan } from './classify.js';
import { metricsOf } from './content.js';
import type { UniversalRecord } from './records.js';
import {
  insertCis,
  loadContents,
  loadStates,
  lockSource,
  replaceRelationships,
  resolvePendingRelationships,
  touchLastSeen,
  updateCis,
  type InventoryKey,
  type RelationshipOutcome,
} from './store.js';

export interface PlanWritten {
  changes: number;
  relationships: RelationshipOutcome;
  /** Owners (of this or an earlier reconcile) whose pending references resolved in this batch, one entry per relationship. */
  resolvedOwners: string[];
}

/**
 * Makes every write of one batch in the caller's transaction, each kind in one set-based
 * statement: the CIs, their `last_seen` rows, the change records (with their outbox and
 * statistics queue rows), then the relationships.
 */
export async function writePlan(tx: Queryable, plan: BatchPlan): Promise<PlanWritten> {
  const { key, now } = plan;
  await insertCis(tx, key.tenantId, key.sourceId, plan.inserts, now);
  await updateCis(tx, plan.updates, now);
  await touchLastSeen(tx, key.tenantId, plan.seen, now);
  const changes = await recordChanges(tx, plan.changes);
  // relationships land with their owners: a crash between batches cannot leave an owner stored
  // (and its digest saying so) without them
  const relationships = await replaceRelationships(tx, key, plan.owners, plan.relationships, now);
  const resolvedOwners = await resolvePendingRelationships(tx, key, plan.inserts.map((write) => write.external_id), now);
  return { changes, relationships, resolvedOwners };
}

export interface BatchRun {
  key: InventoryKey;
  now: Date;
  /** See ReconcileInput.typeDataDerived. */
  typeDataDerived: boolean;
  /** Statement timeout inside the transaction; the session's when undefined. */
  statementTimeoutMs: number | undefined;
  records: UniversalRecord[];
  /** The content digest of each record, by position. */
  hashes: string[];
  /**
   * Runs while the database works on the batch's lookup (the longest statement of an unchanged
   * re-collection); the caller hashes the next batch there, so Node and PostgreSQL work at the
   * same time instead of taking turns.
   */
  whileLookingUp: () => void;
}

/**
 * Reconciles one batch in one transaction under the source's lock: the lookup (which also moves
 * `last_seen` and metrics of the unchanged records), the stored rows of the others, classifyBatch,
 * writePlan.
 */
export function reconcileBatch(sql: Sql, run: BatchRun): Promise<{ plan: BatchPlan; written: PlanWritten }> {
  const { key, now, records, hashes } = run;
  return sql.begin(async (tx) => {
    await lockSource(tx, key.tenantId, key.sourceId, run.statementTimeoutMs);
    const metrics = records.map(metricsOf);
    const lookup = loadStates(tx, key, { externalIds: records.map((r) => r.external_id), hashes, metrics }, now);
    lookup.execute();
    // one turn of the event loop puts the query on the wire before the CPU-bound work starts
    await new Promise((resolve) => setImmediate(resolve));
    run.whileLookingUp();
    const states = new Map((await lookup).map((s) => [s.external_id, s]));
    const storedIds = records.flatMap((r) => states.get(r.external_id)?.ci_id ?? []);
    const stored = new Map((await loadContents(tx, storedIds)).map((c) => [c.ci_id, c]));
    const plan = classifyBatch({ key, now, records, hashes, metrics, states, stored, typeDataDerived: run.typeDataDerived });
    return { plan, written: await writePlan(tx, plan) };
  });
}
