import { Type } from '@sinclair/typebox';
import { AppError } from '../../platform/errors.js';
import { defineRoute, type AnyRoute } from '../../context.js';
import { type Method } from '../../platform/http/route.js';
import { conflictResponse, ErrorEnvelope, Limit } from '../../platform/http/schemas.js';
import { presentDetail, presentSource } from '../sources/presenter.js';
import { NewCollectorSource, SourceDetail, SourceView } from '../sources/schema.js';
import { presentCollector, presentRun } from './presenter.js';
import {
  AllCollectorsHealth,
  CollectorHealth,
  CollectorPage,
  CollectorParams,
  CollectorQuery,
  CollectorView,
  RunParams,
  RunView,
  Triggered,
  TriggerQuery,
} from './schema.js';
import {
  addCollectorSource,
  allCollectorsHealth,
  collectorHealth,
  collectorOr404,
  collectorRuns,
  collectorSources,
  listCollectorsPage,
  runOr404,
  triggerCollection,
} from './service.js';

const TAGS = ['Collectors'];
/** A collector's sources are documented with the sources. */
const SOURCE_TAGS = ['Sources'];
const read = { resource: 'collectors', action: 'read' } as const;

const listSources = defineRoute({
  method: 'GET',
  path: '/api/v1/collectors/{collector_id}/sources',
  operationId: 'listCollectorSources',
  summary: "A collector's sources (a bare array)",
  tags: SOURCE_TAGS,
  access: { resource: 'sources', action: 'read' },
  params: CollectorParams,
  responses: { 200: { description: 'The sources, by id.', schema: Type.Array(SourceView) } },
  async handler({ app, principal, params }) {
    return (await collectorSources(app, principal, params.collector_id)).map(presentSource);
  },
});

const addSource = defineRoute({
  method: 'POST',
  path: '/api/v1/collectors/{collector_id}/sources',
  operationId: 'addCollectorSource',
  summary: 'Add a source to a collector',
  description: 'As `POST /api/v1/sources`, with the collector given by the path.',
  tags: SOURCE_TAGS,
  access: { resource: 'sources', action: 'write' },
  params: CollectorParams,
  body: NewCollectorSource,
  responses: {
    201: { description: 'The source.', schema: SourceDetail },
    ...conflictResponse("A live source has this name, or the collector's type is not known to this service"),
  },
  async handler({ ctx, app, principal, params, body }) {
    const created = await addCollectorSource(app, principal, params.collector_id, body);
    ctx.status = 201;
    return presentDetail(created);
  },
});

const list = defineRoute({
  method: 'GET',
  path: '/api/v1/collectors',
  operationId: 'listCollectors',
  summary: 'List collectors',
  description:
    'Collectors with at least one source the caller may see (all of them with access to all data). `type` is an alias of `collector_type`.',
  tags: TAGS,
  access: read,
  query: CollectorQuery,
  responses: { 200: { description: 'A page of collectors.', schema: CollectorPage } },
  async handler({ app, principal, query }) {
    const { rows, total } = await listCollectorsPage(app, principal, query);
    return { items: rows.map(presentCollector), total, offset: query.offset, limit: query.limit };
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
    return presentCollector(await collectorOr404(app, principal, params.collector_id));
  },
});

const health = defineRoute({
  method: 'GET',
  path: '/api/v1/collectors/{collector_id}/health',
  operationId: 'getCollectorHealth',
  summary: 'Health of one collector',
  description:
    "`healthy` when every enabled source is; otherwise `degraded`, with each source's state under `subsystems`.",
  tags: TAGS,
  access: read,
  params: CollectorParams,
  responses: { 200: { description: "The collector's health.", schema: CollectorHealth } },
  async handler({ app, principal, params }) {
    return collectorHealth(app, principal, params.collector_id);
  },
});

const healthAll = defineRoute({
  method: 'GET',
  path: '/api/v1/collectors/health/all',
  operationId: 'getAllCollectorsHealth',
  summary: 'Health of every collector',
  tags: TAGS,
  access: read,
  responses: { 200: { description: 'One entry per collector.', schema: AllCollectorsHealth } },
  async handler({ app, principal }) {
    return allCollectorsHealth(app, principal);
  },
});

const trigger = defineRoute({
  method: 'POST',
  path: '/api/v1/collectors/{collector_id}/trigger',
  operationId: 'triggerCollection',
  summary: 'Collect now',
  description:
    'Queues a run of each enabled source of the collector (or only `source_id`), whether or not its schedule is on; a ' +
    "source with a run queued or running keeps that one. 202 with `run_id` (the first source's run) and each source's " +
    'run. A hybrid source whose run is watching lists everything again within that run, then watches on. A push-only type (such as `universal`) is a 409: its data arrives through `POST /api/v1/sources/{id}/ingest`. ' +
    'A collection writes every instance of its source, so a caller whose data scopes hold only some instances of a source it would run is refused (403, `details.reason` `whole_source_required`).',
  tags: TAGS,
  access: { resource: 'collectors', action: 'write' },
  params: CollectorParams,
  query: TriggerQuery,
  responses: {
    202: { description: 'Queued.', schema: Triggered },
    409: { description: "The collector's type does not collect by itself (`HTTP_409`).", schema: ErrorEnvelope },
  },
  async handler({ ctx, app, principal, params, query }) {
    const queued = await triggerCollection(app, principal, params.collector_id, query.source_id);
    ctx.status = 202;
    return queued;
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
    return { items: (await collectorRuns(app, principal, params.collector_id, query.limit)).map(presentRun) };
  },
});

const run = defineRoute({
  method: 'GET',
  path: '/api/v1/collection-runs/{run_id}',
  operationId: 'getCollectionRun',
  summary: 'One collection run',
  tags: TAGS,
  access: read,
  params: RunParams,
  responses: { 200: { description: 'The run.', schema: RunView } },
  async handler({ app, principal, params }) {
    return presentRun(await runOr404(app, principal, params.run_id));
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
        replacement: [
          'POST /api/v1/sources',
          'POST /api/v1/collectors/{collector_id}/sources',
          'PUT /api/v1/sources/{source_id}',
          'DELETE /api/v1/sources/{source_id}',
        ],
      });
    },
  });
}

// a collector's sources come first: the OpenAPI document lists them right after the sources routes
export const collectorRoutes: AnyRoute[] = [
  listSources,
  addSource,
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
