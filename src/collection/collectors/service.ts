import { coversWholeSource, type Principal } from '../../platform/auth/principal.js';
import { capabilitiesOf, collectorType } from '../types/registry.js';
import type { AppContext } from '../../context.js';
import { conflict, forbidden, notFound } from '../../platform/errors.js';
import { bigintId } from '../../platform/http/schemas.js';
import type { NewCollectorSource } from '../sources/schema.js';
import { addSourceTo, assertUnscoped, sourcesOfCollector } from '../sources/service.js';
import { listSources, type SourceRow } from '../sources/service.js';
import { enqueueManual, getRun, listRuns, type RunRow } from './runs/runs.js';
import type { CollectorHealthEntry, CollectorQuery, Triggered } from './schema.js';
import { listCollectors, type CollectorRow } from './store.js';

/** The live collector a principal may see, or a 404. */
export async function collectorOr404(app: AppContext, principal: Principal, rawId: string): Promise<CollectorRow> {
  const id = bigintId(rawId);
  const found =
    id === undefined ? undefined : (await listCollectors(app.sql, principal, { id, limit: 1, offset: 0 })).rows[0];
  if (!found) throw notFound('Collector not found', { collector_id: rawId });
  return found;
}

/** A source added to a collector the principal may see (as `POST /api/v1/sources` would, with the collector known). */
export async function addCollectorSource(
  app: AppContext,
  principal: Principal,
  rawId: string,
  body: NewCollectorSource,
): Promise<SourceRow> {
  assertUnscoped(principal);
  const collector = await collectorOr404(app, principal, rawId);
  return addSourceTo(app, principal, collector, body);
}

/** Every source of a collector the principal may see, by id. */
export async function collectorSources(app: AppContext, principal: Principal, rawId: string): Promise<SourceRow[]> {
  const collector = await collectorOr404(app, principal, rawId);
  return sourcesOfCollector(app, principal, collector.id);
}

/** A page of the collectors the principal may see; `type` is an alias of `collector_type`. */
export function listCollectorsPage(
  app: AppContext,
  principal: Principal,
  query: CollectorQuery,
): Promise<{ rows: CollectorRow[]; total: number }> {
  return listCollectors(app.sql, principal, {
    name: query.name,
    collectorType: query.collector_type ?? query.type,
    status: query.status,
    limit: query.limit,
    offset: query.offset,
  });
}

/** A source that has neither reported its health nor been collected or pushed to, nor failed. */
const awaitingData = (source: SourceRow): boolean =>
  !source.health_status?.status && !source.last_collection && source.last_error === null;

/** A source is healthy unless its last report or collection says otherwise. */
function sourceHealthy(source: SourceRow): boolean {
  const reported = source.health_status?.status;
  if (typeof reported === 'string') return ['healthy', 'ok', 'up'].includes(reported.toLowerCase());
  return source.last_error === null;
}

/** One source's entry under a collector's `subsystems`: what it reported, else what its collections say. */
function subsystemOf(source: SourceRow) {
  const reported = source.health_status?.status;
  const entry: { status: string; last_collection?: string; last_error?: string } = {
    status: typeof reported === 'string' ? reported : sourceHealthy(source) ? 'healthy' : 'degraded',
  };
  if (source.last_collection) entry.last_collection = source.last_collection.toISOString();
  if (source.last_error) entry.last_error = source.last_error;
  return entry;
}

/** A collector is healthy when every enabled source of it the principal may see is. */
export async function collectorHealth(app: AppContext, principal: Principal, rawId: string) {
  const collector = await collectorOr404(app, principal, rawId);
  const rows = await sourcesOfCollector(app, principal, collector.id);
  const enabled = rows.filter((s) => s.status === 'enabled');
  const unhealthy = enabled.filter((s) => !sourceHealthy(s));
  return {
    status: unhealthy.length === 0 ? ('healthy' as const) : ('degraded' as const),
    message:
      unhealthy.length === 0
        ? `${enabled.length} enabled source(s) healthy`
        : `${unhealthy.length} of ${enabled.length} enabled source(s) unhealthy: ${unhealthy.map((s) => s.name).join(', ')}`,
    timestamp: app.now().toISOString(),
    capabilities: capabilitiesOf(collector.collector_type),
    subsystems: Object.fromEntries(rows.map((s) => [s.name, subsystemOf(s)])),
  };
}

/** Every collector the principal may see, healthy or not by its enabled sources, with the first failing one's error. */
export async function allCollectorsHealth(
  app: AppContext,
  principal: Principal,
): Promise<{ timestamp: string; collectors: CollectorHealthEntry[] }> {
  const [{ rows: collectors }, { rows: sources }] = await Promise.all([
    listCollectors(app.sql, principal, { limit: 10_000, offset: 0 }),
    listSources(app.sql, principal, { limit: 100_000, offset: 0 }),
  ]);
  return {
    timestamp: app.now().toISOString(),
    collectors: collectors.map((collector) => {
      const own = sources.filter((s) => s.collector_id === collector.id && s.status === 'enabled');
      const healthy = own.filter(sourceHealthy);
      const entry: CollectorHealthEntry = {
        id: Number(collector.id),
        name: collector.name,
        status: healthy.length === own.length ? 'healthy' : 'degraded',
        sources_total: collector.sources_total,
        sources_healthy: healthy.length,
        sources_awaiting_data: own.filter(awaitingData).length,
      };
      const failing = own.find((s) => s.last_error);
      if (failing?.last_error) entry.error = `${failing.name}: ${failing.last_error}`;
      return entry;
    }),
  };
}

/**
 * Queues a manual run of each enabled source of a collector (or of one), in one transaction. A
 * push-only type is a 409: nothing would take the run.
 */
export async function triggerCollection(
  app: AppContext,
  principal: Principal,
  rawId: string,
  sourceId: string | undefined,
): Promise<Triggered> {
  const collector = await collectorOr404(app, principal, rawId);
  const rows = await sourcesOfCollector(app, principal, collector.id, 'enabled');
  const wanted = sourceId === undefined ? rows : rows.filter((s) => s.id === sourceId);
  // a collection writes every instance of its source
  const partial = wanted.filter((source) => !coversWholeSource(principal, source.id));
  if (partial.length > 0) {
    throw forbidden(
      'A collection writes every instance of its source: triggering it needs data scopes that hold the whole source',
      {
        reason: 'whole_source_required',
        source_ids: partial.map((source) => source.id),
      },
    );
  }
  if (!collectorType(collector.collector_type)?.collect) {
    throw conflict(
      `The ${collector.collector_type} type does not collect by itself: push its data to POST /api/v1/sources/{id}/ingest`,
      {
        collector_type: collector.collector_type,
      },
    );
  }
  if (sourceId !== undefined && wanted.length === 0)
    throw notFound('No enabled source with this id in the collector', { source_id: sourceId });
  const now = app.now();
  const sources = await app.sql.begin(async (tx) => {
    const queued = [];
    for (const source of wanted)
      queued.push({
        source_id: Number(source.id),
        name: source.name,
        run_id: await enqueueManual(tx, principal.tenantId, source, now),
      });
    return queued;
  });
  return { run_id: sources[0]?.run_id ?? null, status: 'queued', sources };
}

/** A collector's recent runs, newest first, of the sources the principal may see. */
export async function collectorRuns(
  app: AppContext,
  principal: Principal,
  rawId: string,
  limit: number,
): Promise<RunRow[]> {
  const collector = await collectorOr404(app, principal, rawId);
  return listRuns(app.sql, principal, collector.id, limit);
}

/** One run of a source the principal may see, or a 404. */
export async function runOr404(app: AppContext, principal: Principal, runId: string): Promise<RunRow> {
  const found = await getRun(app.sql, principal, runId);
  if (!found) throw notFound('Collection run not found', { run_id: runId });
  return found;
}
