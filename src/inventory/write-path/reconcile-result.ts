import type { PlanWritten } from './batch.js';
import type { BatchPlan } from './classify.js';

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

/** Adds one batch to the result; `owners` collects the relationship owners of this reconcile so far. */
export function addBatch(result: ReconcileResult, owners: Set<string>, plan: BatchPlan, written: PlanWritten): void {
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
