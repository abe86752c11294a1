import { Type } from '@sinclair/typebox';
import { UNKNOWN_TYPE_CAPABILITIES } from '../collector-types/plugin.js';
import { collectorType } from '../collector-types/registry.js';
import { AppError, conflict, notFound } from '../http/errors.js';
import { defineRoute, type AnyRoute, type Method } from '../http/route.js';
import { ErrorEnvelope, Limit, Nullable, NumericId, Offset, Timestamp } from '../http/schemas.js';
import { listSources, type SourceRow } from '../sources/store.js';
import { enqueueManual, getRun, listRuns, type RunRow } from './runs.js';
import { collectorOr404 } from './service.js';
import { listCollectors, type CollectorRow } from './store.js';

const TAGS = ['Collectors'];
const read = { resource: 'collectors', action: 'read' } as const;

const Capabilities = Type.Object({ supports_universal_format: Type.Boolean(), supports_multi_source: Type.Boolean() });

const CollectorView = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  collector_type: Type.String(),
  status: Type.String(),
  capabilities: Capabilities,
  sources_total: Type.Integer(),
  last_collection: Nullable(Timestamp('The latest collection of any of its sources.')),
});

const capabilitiesOf = (row: CollectorRow) => {
  const { supports_universal_format, supports_multi_source } = collectorType(row.collector_type)?.capabilities ?? UNKNOWN_TYPE_CAPABILITIES;
  return { supports_universal_format, supports_multi_source };
};

const present = (row: CollectorRow) => ({
  id: Number(row.id),
  name: row.name,
  collector_type: row.collector_type,
  status: row.status,
  capabilities: capabilitiesOf(row),
  sources_total: row.sources_total,
  last_collection: row.last_collection?.toISOString() ?? null,
});

const CollectorParams = Type.Object({ collector_id: NumericId('The collector identifier') });

const list = defineRoute({
  method: 'GET',
  path: '/api/v1/collectors',
  operationId: 'listCollectors',
  summary: 'List collectors',
  description: 'Collectors with at least one source the caller may see (all of them with access to all data). `type` is an alias of `collector_type`.',
  tags: TAGS,
  access: read,
  query: Type.Object({
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Exact name.' })),
    collector_type: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    type: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Alias of `collector_type`.' })),
    status: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
    limit: Limit(50, 500),
    offset: Offset,
  }),
  responses: {
    200: {
      description: 'A page of collectors.',
      schema: Type.Object({ items: Type.Array(CollectorView), total: Type.Integer(), offset: Type.Integer(), limit: Type.Integer() }),
    },
  },
  async handler({ app, principal, query }) {
    const { rows, total } = await listCollectors(app.sql, principal, {
      name: query.name,
      collectorType: query.collector_type ?? query.type,
      status: query.status,
      limit: query.limit,
      offset: query.offset,
    });
    return { items: rows.map(present), total, offset: query.offset, limit: query.limit };
  },
});

const get = defineRoute({
  method: 'GET',
  path: '/api/v1/collectors/{collector_id}',
  operationId: 'getCollector',
  summary: 'Get a collector',
  tags: TAGS,
  access: read,
  params: CollectorParams,
  responses: { 200: { description: 'The collector.', schema: CollectorView } },
  async handler({ app, principal, params }) {
    return present(await collectorOr404(app, principal, params.collector_id));
  },
});

const Subsystem = Type.Object({ status: Type.String(), last_collection: Type.Optional(Timestamp()), last_error: Type.Optional(Type.String()) });

const CollectorHealth = Type.Object({
  status: Type.Union([Type.Literal('healthy'), Type.Literal('degraded')]),
  message: Type.String(),
  timestamp: Timestamp(),
  capabilities: Capabilities,
  subsystems: Type.Record(Type.String(), Subsystem, { description: 'One entry per source, keyed by its name.' }),
});

/** A source is healthy unless its last report or collection says otherwise. */
function sourceHealthy(source: SourceRow): boolean {
  const reported = source.health_status?.status;
  if (typeof reported === 'string') return ['healthy', 'ok', 'up'].includes(reported.toLowerCase());
  return source.last_error === null;
}

function subsystemOf(source: SourceRow) {
  const reported = source.health_status?.status;
  const entry: { status: string; last_collection?: string; last_error?: string } = {
    status: typeof reported === 'string' ? reported : sourceHealthy(source) ? 'healthy' : 'degraded',
  };
  if (source.last_collection) entry.last_collection = source.last_collection.toISOString();
  if (source.last_error) entry.last_error = source.last_error;
  return entry;
}

const health = defineRoute({
  method: 'GET',
  path: '/api/v1/collectors/{collector_id}/health',
  operationId: 'getCollectorHealth',
  summary: 'Health of one collector',
  description: '`healthy` when every enabled source is; otherwise `degraded`, with each source\'s state under `subsystems`.',
  tags: TAGS,
  access: read,
  params: CollectorParams,
  responses: { 200: { description: 'The collector\'s health.', schema: CollectorHealth } },
  async handler({ app, principal, params }) {
    const collector = await collectorOr404(app, principal, params.collector_id);
    const { rows } = await listSources(app.sql, principal, { collectorId: collector.id, limit: 10_000, offset: 0 });
    const enabled = rows.filter((s) => s.status === 'enabled');
    const unhealthy = enabled.filter((s) => !sourceHealthy(s));
    return {
      status: unhealthy.length === 0 ? ('healthy' as const) : ('degraded' as const),
      message:
        unhealthy.length === 0
          ? `${enabled.length} enabled source(s) healthy`
          : `${unhealthy.length} of ${enabled.length} enabled source(s) unhealthy: ${unhealthy.map((s) => s.name).join(', ')}`,
      timestamp: app.now().toISOString(),
      capabilities: capabilitiesOf(collector),
      subsystems: Object.fromEntries(rows.map((s) => [s.name, subsystemOf(s)])),
    };
  },
});

const healthAll = defineRoute({
  method: 'GET',
  path: '/api/v1/collectors/health/all',
  operationId: 'getAllCollectorsHealth',
  summary: 'Health of every collector',
  tags: TAGS,
  access: read,
  responses: {
    200: {
      description: 'One entry per collector.',
      schema: Type.Object({
        timestamp: Timestamp(),
        collectors: Type.Array(
          Type.Object({
            id: Type.Integer(),
            name: Type.String(),
            status: Type.Union([Type.Literal('healthy'), Type.Literal('degraded')]),
            sources_total: Type.Integer(),
            sources_healthy: Type.Integer(),
            error: Type.Optional(Type.String()),
          }),
        ),
      }),
    },
  },
  async handler({ app, principal }) {
    const [{ rows: collectors }, { rows: sources }] = await Promise.all([
      listCollectors(app.sql, principal, { limit: 10_000, offset: 0 }),
      listSources(app.sql, principal, { limit: 100_000, offset: 0 }),
    ]);
    return {
      timestamp: app.now().toISOString(),
      collectors: collectors.map((collector) => {
        const own = sources.filter((s) => s.collector_id === collector.id && s.status === 'enabled');
        const healthy = own.filter(sourceHealthy);
        const entry: { id: number; name: string; status: 'healthy' | 'degraded'; sources_total: number; sources_healthy: number; error?: string } = {
          id: Number(collector.id),
          name: collector.name,
          status: healthy.length === own.length ? 'healthy' : 'degraded',
          sources_total: collector.sources_total,
          sources_healthy: healthy.length,
        };
        const failing = own.find((s) => s.last_error);
        if (failing?.last_error) entry.error = `${failing.name}: ${failing.last_error}`;
        return entry;
      }),
    };
  },
});

const RunView = Type.Object({
  id: Type.String({ format: 'uuid' }),
  collector_id: Type.Integer(),
  source_id: Type.Integer(),
  source_name: Type.String(),
  status: Type.Union(['queued', 'running', 'succeeded', 'partial', 'failed', 'cancelled'].map((s) => Type.Literal(s)), {
    description: '`partial`: some components (a kind of object, a database) failed and the rest was collected; see the source\'s `health_status.components`.',
  }),
  trigger: Type.Union([Type.Literal('schedule'), Type.Literal('manual')]),
  queued_at: Timestamp(),
  started_at: Nullable(Timestamp()),
  finished_at: Nullable(Timestamp()),
  attempts: Type.Integer({ description: 'Claims of the run; more than one when a worker died and another took it over.' }),
  counts: Nullable(Type.Record(Type.String(), Type.Unknown(), { description: 'What the reconcile did with the collected batches.' })),
  error: Nullable(Type.String()),
  watching_since: Nullable(Timestamp('A hybrid run that finished its list and is watching for changes: since when (null otherwise).')),
});

const presentRun = (row: RunRow) => ({
  id: row.id,
  collector_id: Number(row.collector_id),
  source_id: Number(row.source_id),
  source_name: row.source_name,
  status: row.status,
  trigger: row.trigger,
  queued_at: row.queued_at.toISOString(),
  started_at: row.started_at?.toISOString() ?? null,
  finished_at: row.finished_at?.toISOString() ?? null,
  attempts: row.attempts,
  counts: row.counts,
  error: row.error,
  watching_since: row.watching_since?.toISOString() ?? null,
});

const trigger = defineRoute({
  method: 'POST',
  path: '/api/v1/collectors/{collector_id}/trigger',
  operationId: 'triggerCollection',
  summary: 'Collect now',
  description:
    'Queues a run of each enabled source of the collector (or only `source_id`), whether or not its schedule is on; a ' +
    'source with a run queued or running keeps that one. 202 with `run_id` (the first source\'s run) and each source\'s ' +
    'run. A hybrid source whose run is watching lists everything again within that run, then watches on. A push-only type (such as `universal`) is a 409: its data arrives through `POST /api/v1/sources/{id}/ingest`.',
  tags: TAGS,
  access: { resource: 'collectors', action: 'write' },
  params: CollectorParams,
  query: Type.Object({ source_id: Type.Optional(Type.String({ pattern: '^[0-9]{1,19}$', description: 'Only this source (an integer).' })) }),
  responses: {
    202: {
      description: 'Queued.',
      schema: Type.Object({
        run_id: Nullable(Type.String({ format: 'uuid' })),
        status: Type.Literal('queued'),
        sources: Type.Array(Type.Object({ source_id: Type.Integer(), name: Type.String(), run_id: Type.String({ format: 'uuid' }) })),
      }),
    },
    409: { description: 'The collector\'s type does not collect by itself (`HTTP_409`).', schema: ErrorEnvelope },
  },
  async handler({ ctx, app, principal, params, query }) {
    const collector = await collectorOr404(app, principal, params.collector_id);
    const type = collectorType(collector.collector_type);
    if (!type?.collect) {
      throw conflict(`The ${collector.collector_type} type does not collect by itself: push its data to POST /api/v1/sources/{id}/ingest`, {
        collector_type: collector.collector_type,
      });
    }
    const { rows } = await listSources(app.sql, principal, { collectorId: collector.id, status: 'enabled', limit: 10_000, offset: 0 });
    const wanted = query.source_id === undefined ? rows : rows.filter((s) => s.id === query.source_id);
    if (query.source_id !== undefined && wanted.length === 0) throw notFound('No enabled source with this id in the collector', { source_id: query.source_id });
    const now = app.now();
    const sources = [];
    for (const source of wanted) sources.push({ source_id: Number(source.id), name: source.name, run_id: await enqueueManual(app.sql, principal.tenantId, source, now) });
    ctx.status = 202;
    return { run_id: sources[0]?.run_id ?? null, status: 'queued' as const, sources };
  },
});

const runs = defineRoute({
  method: 'GET',
  path: '/api/v1/collectors/{collector_id}/runs',
  operationId: 'listCollectionRuns',
  summary: 'Recent collection runs of a collector',
  description: 'Newest first, of the sources the caller may see.',
  tags: TAGS,
  access: read,
  params: CollectorParams,
  query: Type.Object({ limit: Limit(50, 500) }),
  responses: { 200: { description: 'The runs.', schema: Type.Object({ items: Type.Array(RunView) }) } },
  async handler({ app, principal, params, query }) {
    const collector = await collectorOr404(app, principal, params.collector_id);
    return { items: (await listRuns(app.sql, principal, collector.id, query.limit)).map(presentRun) };
  },
});

const run = defineRoute({
  method: 'GET',
  path: '/api/v1/collection-runs/{run_id}',
  operationId: 'getCollectionRun',
  summary: 'One collection run',
  tags: TAGS,
  access: read,
  params: Type.Object({ run_id: Type.String({ format: 'uuid', description: 'The run identifier' }) }),
  responses: { 200: { description: 'The run.', schema: RunView } },
  async handler({ app, principal, params }) {
    const found = await getRun(app.sql, principal, params.run_id);
    if (!found) throw notFound('Collection run not found', { run_id: params.run_id });
    return presentRun(found);
  },
});

/** Collectors are managed through their sources; the old write routes say where to go. */
function gone(method: Method, path: string) {
  return defineRoute({
    method,
    path,
    operationId: `${method.toLowerCase()}${path.endsWith('}') ? 'Collector' : 'Collectors'}Gone`,
    summary: 'Removed: collectors are managed through their sources',
    description:
      'Answers 410 `HTTP_410` with `details.replacement`: a collector is provisioned with its first source ' +
      '(`POST /api/v1/sources` with `collector_type`, or `POST /api/v1/collectors/{collector_id}/sources`) and changed ' +
      'through them. The error envelope is kept (instead of a bare `{detail}`) so that every error has one shape.',
    tags: TAGS,
    access: 'authenticated',
    responses: { 410: { description: 'Gone.', schema: ErrorEnvelope } },
    async handler() {
      throw new AppError(410, 'HTTP_410', 'Collectors are managed through their sources: use the sources endpoints', {
        replacement: ['POST /api/v1/sources', 'POST /api/v1/collectors/{collector_id}/sources', 'PUT /api/v1/sources/{source_id}', 'DELETE /api/v1/sources/{source_id}'],
      });
    },
  });
}

export const collectorRoutes: AnyRoute[] = [
  list,
  healthAll,
  get,
  health,
  trigger,
  runs,
  run,
  gone('POST', '/api/v1/collectors'),
  gone('PUT', '/api/v1/collectors'),
  gone('PATCH', '/api/v1/collectors'),
  gone('DELETE', '/api/v1/collectors'),
  gone('POST', '/api/v1/collectors/{collector_id}'),
  gone('PUT', '/api/v1/collectors/{collector_id}'),
  gone('PATCH', '/api/v1/collectors/{collector_id}'),
  gone('DELETE', '/api/v1/collectors/{collector_id}'),
];
