import { recordChanges } from '../../history/records/writer.js';
import type { Queryable, Sql } from '../../platform/db/database.js';
import { forbidden } from '../../platform/errors.js';
import { onTheWire, queued } from '../../platform/db/pipeline.js';
import { classifyBatch, type BatchPlan } from './classify.js';
import { metricsOf } from './content.js';
import type { UniversalRecord } from './records.js';
import { replaceRelationships, resolvePendingRelationships, type RelationshipOutcome } from './relationship-store.js';
import { insertCis, loadStates, lockSource, touchLastSeen, updateCis, type InventoryKey } from './store.js';

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
 *
 * The statements go out one after another without waiting for each answer. Each store function
 * queues its statement on the connection when it is called (`.execute()`, not at the first
 * `await`), and a transaction's statements run in the order queued, so the database inserts the
 * CIs while the process builds the change records' search documents and the relationships, and
 * `meanwhile` (the next batch's digests) runs until the database has answered the rest: both cores
 * work instead of taking turns. A failing statement fails the ones after it and the transaction.
 */
export async function writePlan(
  tx: Queryable,
  plan: BatchPlan,
  meanwhile?: (answered: Promise<unknown>) => Promise<void>,
  lane?: number,
): Promise<PlanWritten> {
  const { key, now } = plan;
  const sent: Promise<unknown>[] = [];
  const send = <T>(statement: Promise<T>): Promise<T> => {
    sent.push(queued(statement));
    return statement;
  };
  send(insertCis(tx, key.tenantId, key.sourceId, plan.inserts, now));
  send(updateCis(tx, plan.updates, now));
  send(touchLastSeen(tx, key.tenantId, plan.seen, now));
  await onTheWire();
  const changes = send(recordChanges(tx, plan.changes));
  // relationships land with their owners: a crash between batches cannot leave an owner stored
  // (and its digest saying so) without them
  const relationships = send(replaceRelationships(tx, key, plan.owners, plan.relationships, now));
  const resolvedOwners = send(
    resolvePendingRelationships(
      tx,
      key,
      plan.inserts.map((write) => write.external_id),
      now,
      lane,
    ),
  );
  // after a failure the later statements fail as aborted; sql.begin reports the first failure
  const answered = Promise.all(sent);
  await meanwhile?.(answered);
  await answered;
  return { changes: await changes, relationships: await relationships, resolvedOwners: await resolvedOwners };
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
   * Work for the next batch (its digests), done while this batch waits for the database: given
   * each answer awaited (the lookup's, then the writes'), it works until that answer is in.
   */
  meanwhile: (answered: Promise<unknown>) => Promise<void>;
  /**
   * The part (parts.ts) every record of the batch is in, when the reconcile runs in lanes: the
   * batch then locks that part only (lockSource). Undefined: the batch may hold any part and locks
   * the whole source.
   */
  lane?: number;
}

/**
 * Reconciles one batch in one transaction under the source's lock (or its part's, in a lane): the lookup (which also moves
 * `last_seen` and metrics of the unchanged records, and returns the stored rows of the others),
 * classifyBatch, writePlan.
 */
export function reconcileBatch(sql: Sql, run: BatchRun): Promise<{ plan: BatchPlan; written: PlanWritten }> {
  const { key, now, records, hashes } = run;
  return sql.begin(async (tx) => {
    // the lookup is sent behind the lock without waiting for it: it runs once the lock is held
    const locked = queued(lockSource(tx, key.tenantId, key.sourceId, run.statementTimeoutMs, run.lane));
    const metrics = records.map(metricsOf);
    const lookup = loadStates(tx, key, { externalIds: records.map((r) => r.external_id), hashes, metrics }, now);
    lookup.execute();
    await run.meanwhile(Promise.all([locked, lookup]));
    await locked;
    const states = new Map((await lookup).map((s) => [s.external_id, s]));
    assertWritable(key, states.values());
    const plan = classifyBatch({ key, now, records, hashes, metrics, states, typeDataDerived: run.typeDataDerived });
    return { plan, written: await writePlan(tx, plan, run.meanwhile, run.lane) };
  });
}

/** How many of the refused external ids a refusal names. */
export const NAMED_REFUSALS = 20;

/**
 * The refusal of a write that names CIs stored in instances the writer may not write (the write
 * rule, auth/principal.ts writableInstances). Named by external id, which the writer sent itself.
 */
export const crossesInstances = (externalIds: readonly string[]) =>
  forbidden(
    'These records name CIs stored in instances of the source this principal may not write into; nothing was written',
    {
      reason: 'outside_data_scope',
      external_ids: externalIds.slice(0, NAMED_REFUSALS),
    },
  );

/**
 * Inside the batch's transaction, under the source's lock: no stored CI of the batch lies outside
 * the instances the writer may write, so no write moves or rewrites one. Whatever a caller checked
 * beforehand, this check is the one that holds against a concurrent move.
 */
function assertWritable(
  key: InventoryKey,
  states: Iterable<{ external_id: string; stored: { scope_id: string | null } | null }>,
): void {
  const writable = key.writable;
  if (writable === undefined) return;
  const outside: string[] = [];
  for (const state of states) {
    if (state.stored && (state.stored.scope_id === null || !writable.includes(state.stored.scope_id)))
      outside.push(state.external_id);
  }
  if (outside.length > 0) throw crossesInstances(outside);
}
