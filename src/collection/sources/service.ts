import { coversWholeSource, type Principal } from '../../platform/auth/principal.js';
import { collectorType, knownCollectorTypes } from '../types/registry.js';
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../platform/db/database.js';
import { conflict, forbidden } from '../../platform/errors.js';
import { bigintId } from '../../platform/http/schemas.js';
import { allowedHostsOf } from '../../platform/net/endpoint.js';
import { assertUnscoped, sourceOr404 } from './access.js';
import { destroyCredentials } from './credentials.js';
import type { HealthBody, NewCollectorSource, NewSource, SourceQuery, SourceUpdate } from './schema.js';
import { assertSourceSettings, requireCollectorType } from './settings.js';
import {
  cancelRunsOf,
  deleteSource,
  getSource,
  insertSource,
  listSources,
  provisionCollector,
  setSourceHealth,
  updateSource,
  type SourceRow,
} from './store.js';

/** Routes and other features reach sources through this one module, whichever of its neighbours does the work. */
export { assertUnscoped, refusedSourceTarget, sourceOr404 } from './access.js';
export { ingest, type Push } from './ingest.js';
export { collectionCredentials, removeCredentials, revealCredentials, setCredentials } from './credential-access.js';

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
 * What collectors, the demo and the command line read and write of a source inside their own
 * transaction: a run reads the source it collects, the demo provisions its sources beside the rest
 * of its data, `cinv ingest` makes its push source and records the push, `cinv keys create` names
 * sources in scopes.
 */
export {
  ensureSource,
  findSourceByName,
  getSource,
  insertSource,
  listSources,
  provisionCollector,
  recordPush,
  updateSource,
  type SourceRow,
} from './store.js';
