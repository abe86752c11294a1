import type { Readable } from 'node:stream';
import { coversScope, coversSource, writableInstances, type Principal } from '../../platform/auth/principal.js';
import type { AppContext } from '../../context.js';
import { AppError, conflict, forbidden, notFound } from '../../platform/errors.js';
import { bigintId } from '../../platform/http/schemas.js';
import {
  addReconcileResult,
  assertStorable,
  emptyReconcileResult,
  newBulkLoad,
  reconcile,
  type ReconcileResult,
} from '../../inventory/write-path/reconcile.js';
import type { Snapshot } from '../../inventory/write-path/records.js';
import { holdHeapTight } from '../../platform/observability/heap-growth.js';
import { ndjsonBatches } from './ndjson.js';
import { findSourceById, recordPush } from './store.js';

/**
 * A push: a validated JSON body, or an NDJSON stream with its mode and scope from the query. The
 * stream is opened only once the source and scope are known to be writable, so those refusals come
 * before one about the body's encoding.
 */
export type Push =
  | { body: typeof Snapshot.static }
  | { open: () => Readable; mode: 'snapshot' | 'delta' | undefined; scopeId: string | undefined };

/**
 * Reconciles a push into a source the principal may write into. The reconciler writes each batch
 * in its own transaction: a large push is never one transaction, and a push stopped by a bad line
 * keeps the batches before it.
 */
export async function ingest(
  app: AppContext,
  principal: Principal,
  rawId: string,
  push: Push,
): Promise<ReconcileResult> {
  const sourceId = bigintId(rawId);
  const source = sourceId === undefined ? undefined : await findSourceById(app.sql, principal.tenantId, sourceId);
  const scopeId = ('body' in push ? push.body.scope_id : push.scopeId) ?? null;
  // a source outside every scope of the key is reported as absent, not as forbidden
  if (!source || !coversSource(principal, source.id)) throw notFound('Source not found', { source_id: rawId });
  if (source.status === 'disabled')
    throw conflict(
      'This source is disabled: enable it (PUT /api/v1/sources/{id} with status enabled) to push into it',
      { source_id: source.id },
    );
  if (!coversScope(principal, source.id, scopeId)) {
    throw forbidden('This key may not write into that instance of the source', { scope_id: scopeId });
  }
  const started = performance.now();
  const outcome = (told: { result?: ReconcileResult; error?: string }) =>
    recordPush(app.sql, principal.tenantId, source.id, app.now(), {
      ...told,
      durationMs: Math.round(performance.now() - started),
    });
  try {
    const held = writableInstances(principal, source.id);
    const target = {
      tenantId: principal.tenantId,
      sourceId: source.id,
      scopeId,
      writable: held === 'all' ? undefined : held,
    };
    const result = await reconcilePush(app, target, push);
    await outcome({ result });
    return result;
  } catch (error) {
    // a refused body is the pusher's to fix: the source shows it until a push succeeds; a refusal
    // for the server's own reasons (busy, unavailable) says nothing about the source
    if (error instanceof AppError && error.status < 500) await outcome({ error: error.message });
    throw error;
  }
}

async function reconcilePush(
  app: AppContext,
  target: { tenantId: string; sourceId: string; scopeId: string | null; writable: readonly string[] | undefined },
  push: Push,
): Promise<ReconcileResult> {
  const options = {
    now: app.now(),
    batchSize: app.config.reconcileBatchSize,
    statementTimeoutMs: app.config.bulkStatementTimeoutMs,
    lanes: app.config.reconcileLanes,
  };
  if ('body' in push) {
    // the route has validated the schema already
    assertStorable(push.body);
    return reconcile(
      app.sql,
      { ...target, mode: push.body.mode ?? 'snapshot', records: push.body.items, deletions: push.body.deletions },
      options,
    );
  }
  const mode = push.mode ?? 'snapshot';
  const total = emptyReconcileResult();
  const load = newBulkLoad();
  // between batches too: reading the next one allocates as fast as writing the last
  const release = holdHeapTight({ large: true });
  try {
    for await (const batch of ndjsonBatches(push.open(), {
      mode,
      batchSize: app.config.reconcileBatchSize,
      maxLineBytes: app.config.bodyLimitBytes,
    })) {
      addReconcileResult(
        total,
        await reconcile(
          app.sql,
          { ...target, mode, records: batch.records, deletions: batch.deletions },
          { ...options, load },
        ),
      );
    }
  } finally {
    release();
  }
  return total;
}
