import type { AppContext } from '../../../context.js';
import {
  addReconcileResult,
  emptyReconcileResult,
  reconcile,
  type BulkLoad,
  type ReconcileResult,
} from '../../../inventory/write-path/reconcile.js';
import type { UniversalRecord } from '../../../inventory/write-path/records.js';

/** What a run reconciled, over all its batches. */
export type Counts = ReconcileResult & {
  batches: number;
  lists: number;
  watch_events: number;
  watch_reconnects: number;
  reconcile_ms: number;
};

export const emptyCounts = (): Counts => ({
  ...emptyReconcileResult(),
  batches: 0,
  lists: 0,
  watch_events: 0,
  watch_reconnects: 0,
  reconcile_ms: 0,
});

/** Where a run's batches go: its source, and what the reconciles of one list and the watch after it share. */
export interface WriteTarget {
  tenantId: string;
  sourceId: string;
  load: BulkLoad;
}

/** One batch of a run: a page (or part) of a list, or the changes a watch delivered. */
export interface RunBatch {
  scopeId: string | null;
  mode: 'snapshot' | 'delta';
  records: readonly UniversalRecord[];
  deletions: readonly string[];
}

/** Reconciles one batch of a run and adds what it did, and how long it took, to the run's counts. */
export async function reconcileBatch(
  app: AppContext,
  counts: Counts,
  target: WriteTarget,
  batch: RunBatch,
): Promise<void> {
  const { config } = app;
  const started = performance.now();
  const result = await reconcile(
    app.sql,
    // every collector type computes type_data from raw_data
    {
      tenantId: target.tenantId,
      sourceId: target.sourceId,
      scopeId: batch.scopeId,
      mode: batch.mode,
      records: batch.records,
      deletions: batch.deletions,
      typeDataDerived: true,
    },
    {
      now: app.now(),
      batchSize: config.reconcileBatchSize,
      statementTimeoutMs: config.bulkStatementTimeoutMs,
      lanes: config.reconcileLanes,
      load: target.load,
    },
  );
  addReconcileResult(counts, result);
  counts.reconcile_ms += Math.round(performance.now() - started);
}
