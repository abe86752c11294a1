import type { Context } from 'koa';
import type { Readable } from 'node:stream';
import { auditChange } from '../../platform/audit/log.js';
import { requireMasterKeys, undecryptable } from '../../platform/auth/envelope.js';
import {
  coversScope,
  coversSource,
  coversWholeSource,
  writableInstances,
  type Principal,
} from '../../platform/auth/principal.js';
import type { CredentialDocument } from '../types/plugin.js';
import { collectorType, knownCollectorTypes } from '../types/registry.js';
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../platform/db/database.js';
import { AppError, conflict, forbidden, notFound } from '../../platform/errors.js';
import { bigintId } from '../../platform/http/schemas.js';
import { allowedHostsOf } from '../../platform/net/endpoint.js';
import {
  addReconcileResult,
  assertStorable,
  emptyReconcileResult,
  newBulkLoad,
  reconcile,
  type ReconcileResult,
} from '../../inventory/write-path/reconcile.js';
import type { Snapshot } from '../../inventory/write-path/records.js';
import { destroyCredentials, loadCredentials, MasterKeys, storeCredentials } from './credentials.js';
import { ndjsonBatches } from './ndjson.js';
import { holdHeapTight } from '../../platform/observability/heap-growth.js';
import type { HealthBody, NewCollectorSource, NewSource, SourceQuery, SourceUpdate } from './schema.js';
import { assertSourceSettings, requireCollectorType } from './settings.js';
import {
  cancelRunsOf,
  deleteSource,
  findSourceById,
  getSource,
  insertSource,
  listSources,
  provisionCollector,
  recordPush,
  setSourceHealth,
  updateSource,
  type SourceRow,
} from './store.js';

/** A live source the principal may see, or a 404 (a source outside its scopes is reported absent). */
export async function sourceOr404(app: AppContext, principal: Principal, rawId: string): Promise<SourceRow> {
  const id = bigintId(rawId);
  const source = id === undefined ? undefined : await getSource(app.sql, principal.tenantId, id);
  if (!source || !coversSource(principal, source.id)) throw notFound('Source not found', { source_id: rawId });
  return source;
}

/**
 * The source a refused request on it (a credential reveal) names in the audit log: the id as asked,
 * with the source's name when the tenant has it. The log is read by auditors, not by the refused
 * principal, so the name is given even when that principal may not see the source.
 */
export async function refusedSourceTarget(
  app: AppContext,
  principal: Principal,
  rawId: string,
): Promise<{ type: 'source'; id: string; name: string | null }> {
  const id = /^[0-9]+$/.test(rawId) ? bigintId(rawId) : undefined;
  const source = id === undefined ? undefined : await findSourceById(app.sql, principal.tenantId, id);
  return { type: 'source', id: source?.id ?? rawId, name: source?.name ?? null };
}

/** Creating or changing a source needs a principal whose scopes cover it: a scoped key could not see it afterwards. */
export function assertUnscoped(principal: Principal): void {
  if (!principal.superadmin && principal.scopes !== 'all')
    throw forbidden('Only a principal with access to all data may add sources', { reason: 'scoped' });
}

/** A page of the sources the principal may see; a collector id too large to exist matches nothing. */
export async function listSourcesPage(
  app: AppContext,
  principal: Principal,
  query: SourceQuery,
): Promise<{ rows: SourceRow[]; total: number }> {
  const status = query.status ?? (query.enabled === undefined ? undefined : query.enabled ? 'enabled' : 'disabled');
  const collectorId = query.collector_id === undefined ? undefined : bigintId(query.collector_id);
  if (query.collector_id !== undefined && collectorId === undefined) return { rows: [], total: 0 };
  return listSources(app.sql, principal, { collectorId, status, limit: query.limit, offset: query.offset });
}

/** Every source of a collector the principal may see, by id. */
export async function sourcesOfCollector(
  app: AppContext,
  principal: Principal,
  collectorId: string,
  status?: 'enabled',
): Promise<SourceRow[]> {
  return (await listSources(app.sql, principal, { collectorId, status, limit: 10_000, offset: 0 })).rows;
}

/**
 * Writes a new source into a collector; its settings were checked before the transaction began,
 * so that no transaction waits on the endpoint's name resolution.
 */
async function insertChecked(
  tx: Queryable,
  tenantId: string,
  collectorId: string,
  body: NewCollectorSource,
  now: Date,
): Promise<SourceRow> {
  const id = await insertSource(tx, tenantId, {
    collectorId,
    name: body.name,
    endpoint: body.endpoint ?? null,
    config: body.config ?? {},
    scheduleConfig: body.schedule_config ?? {},
  });
  if (!id) throw conflict('A source with this name exists already', { name: body.name });
  if (body.status === 'disabled') await updateSource(tx, tenantId, id, { status: 'disabled' }, now);
  return (await getSource(tx, tenantId, id))!;
}

/**
 * A source and the collector of its type and name, which is provisioned with its first source: one
 * transaction, so a taken name leaves no collector behind.
 */
export async function createSource(app: AppContext, principal: Principal, body: NewSource): Promise<SourceRow> {
  assertUnscoped(principal);
  const type = requireCollectorType(body.collector_type);
  const { collector_type: _type, collector_name: collectorName, ...fields } = body;
  await assertSourceSettings(
    type,
    { endpoint: fields.endpoint, config: fields.config ?? {} },
    allowedHostsOf(app.config),
  );
  return app.sql.begin(async (tx) => {
    const collectorId = await provisionCollector(tx, principal.tenantId, type.type, collectorName ?? type.type);
    return insertChecked(tx, principal.tenantId, collectorId, fields, app.now());
  });
}

/** A source added to an existing collector, checked against the collector's type (a 409 when this service does not know it). */
export async function addSourceTo(
  app: AppContext,
  principal: Principal,
  collector: { id: string; collector_type: string },
  body: NewCollectorSource,
): Promise<SourceRow> {
  const type = collectorType(collector.collector_type);
  if (!type)
    throw conflict(
      `Collector type ${collector.collector_type} is not known to this service; known: ${knownCollectorTypes().join(', ')}`,
    );
  await assertSourceSettings(type, { endpoint: body.endpoint, config: body.config ?? {} }, allowedHostsOf(app.config));
  return app.sql.begin((tx) => insertChecked(tx, principal.tenantId, collector.id, body, app.now()));
}

/**
 * A partial update, judged as the source will be after it (`config` merged, null values removed).
 * Disabling cancels the source's run in the same transaction.
 */
export async function changeSource(
  app: AppContext,
  principal: Principal,
  rawId: string,
  body: SourceUpdate,
): Promise<SourceRow> {
  const source = await sourceOr404(app, principal, rawId);
  assertUnscoped(principal);
  const type = collectorType(source.collector_type);
  const config = Object.fromEntries(
    Object.entries({ ...source.config, ...(body.config ?? {}) }).filter(([, v]) => v !== null),
  );
  if (type) await assertSourceSettings(type, { endpoint: body.endpoint, config }, allowedHostsOf(app.config));
  const changes = {
    name: body.name,
    endpoint: body.endpoint,
    status: body.status,
    config: body.config,
    scheduleConfig: body.schedule_config,
  };
  return app.sql.begin(async (tx) => {
    // a taken name aborts the transaction; nothing else runs in it after that
    if (!(await updateSource(tx, principal.tenantId, source.id, changes, app.now())))
      throw conflict('A source with this name exists already', { name: body.name });
    if (body.status === 'disabled') await cancelRunsOf(tx, source.id, app.now());
    return (await getSource(tx, principal.tenantId, source.id))!;
  });
}

/** Deletes a source with its credentials and cancels its run; its CIs and their history stay. */
export async function removeSource(app: AppContext, principal: Principal, rawId: string): Promise<SourceRow> {
  const source = await sourceOr404(app, principal, rawId);
  await app.sql.begin(async (tx) => {
    await deleteSource(tx, principal.tenantId, source.id, app.now());
    await destroyCredentials(tx, principal.tenantId, source.id);
    // a running collection stops at its worker's next lease renewal
    await cancelRunsOf(tx, source.id, app.now());
  });
  return source;
}

/** Records the health a collector reports for a source (one statement). */
export async function reportHealth(
  app: AppContext,
  principal: Principal,
  rawId: string,
  body: HealthBody,
): Promise<SourceRow> {
  const source = await sourceOr404(app, principal, rawId);
  // the health of a source is every instance's: a reporter of some instances would speak for the others
  if (!coversWholeSource(principal, source.id)) {
    throw forbidden("A source's health is reported by a principal holding the whole source", {
      reason: 'whole_source_required',
      source_id: source.id,
    });
  }
  const details: Record<string, string> = { message: body.message };
  if (body.duration !== undefined) details.duration = String(body.duration);
  if (body.consecutive_errors !== undefined) details.consecutive_errors = String(body.consecutive_errors);
  const lastCheck = new Date(Math.round(body.timestamp * 1000)).toISOString();
  await setSourceHealth(
    app.sql,
    principal.tenantId,
    source.id,
    { status: body.status, last_check: lastCheck, details },
    app.now(),
  );
  return source;
}

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

const masterKeys = (app: AppContext) => requireMasterKeys(app.config, 'Credentials cannot be stored or read');

/**
 * The decrypted credentials a collection of the source uses: none when it has none, or when this
 * server holds no master key to decrypt them.
 */
export async function collectionCredentials(
  app: AppContext,
  tenantId: string,
  source: SourceRow,
): Promise<CredentialDocument | undefined> {
  const { config } = app;
  if (!source.credentials || !config.masterKey) return undefined;
  return loadCredentials(app.sql, new MasterKeys(config.masterKey, config.previousMasterKey), tenantId, source.id);
}

/**
 * The source whose credentials the principal sets, removes or reveals: they serve every instance
 * of the source, so only a principal whose data scopes cover the whole source may handle them
 * (403 `whole_source_required`, audited as the other refusals are); a source it cannot see is a 404.
 */
async function credentialSourceOr403(app: AppContext, principal: Principal, rawId: string): Promise<SourceRow> {
  const source = await sourceOr404(app, principal, rawId);
  if (!coversWholeSource(principal, source.id)) {
    throw forbidden(
      'Credentials serve every instance of the source: only a principal holding the whole source may handle them',
      {
        reason: 'whole_source_required',
        source_id: source.id,
      },
    );
  }
  return source;
}

/** Encrypts and stores a source's credentials; the tenant's first data key is created in the same transaction. */
export async function setCredentials(
  app: AppContext,
  principal: Principal,
  rawId: string,
  document: CredentialDocument,
): Promise<void> {
  const source = await credentialSourceOr403(app, principal, rawId);
  const keys = masterKeys(app);
  await app.sql.begin((tx) => storeCredentials(tx, keys, principal.tenantId, source.id, document, app.now()));
}

/** Removes a source's credentials; a 404 when it has none. */
export async function removeCredentials(app: AppContext, principal: Principal, rawId: string): Promise<void> {
  const source = await credentialSourceOr403(app, principal, rawId);
  if (!(await destroyCredentials(app.sql, principal.tenantId, source.id)))
    throw notFound('This source has no credentials', { source_id: rawId });
}

/**
 * A source's credentials, decrypted, with the `credentials.revealed` audit event written in the
 * same transaction before they leave: a reveal that cannot be recorded does not happen.
 */
export async function revealCredentials(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  rawId: string,
): Promise<CredentialDocument> {
  const source = await credentialSourceOr403(app, principal, rawId);
  const keys = masterKeys(app);
  return app.sql.begin(async (tx) => {
    const document = await loadCredentials(tx, keys, principal.tenantId, source.id).catch(
      undecryptable('The credentials'),
    );
    if (!document) throw notFound('This source has no credentials', { source_id: rawId });
    await auditChange(
      tx,
      app.audit,
      ctx,
      principal,
      'credentials.revealed',
      { type: 'source', id: source.id, name: source.name },
      { credential_type: document.type },
    );
    return document;
  });
}

/**
 * What collectors and the demo read and write of a source inside their own transaction: a run reads
 * the source it collects, the demo provisions its sources beside the rest of its data.
 */
export { getSource, insertSource, listSources, provisionCollector, updateSource, type SourceRow } from './store.js';
