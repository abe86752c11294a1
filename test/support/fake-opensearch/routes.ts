/** The REST endpoints the fake answers, and how a request's method and path reach one. */
import { getAliases, updateAliases } from './aliases.js';
import type { Cluster } from './cluster.js';
import { bulk } from './documents.js';
import { ok, unsupported, type Reply } from './errors.js';
import * as indices from './indices.js';
import { count, deleteByQuery, search } from './search.js';

interface RouteRequest {
  query: Record<string, string>;
  body: unknown;
}
/** Path parameters follow the request, in path order. */
type Handler = (cluster: Cluster, request: RouteRequest, ...params: string[]) => Reply;

const info = (): Reply =>
  ok({
    name: 'fake-node',
    cluster_name: 'fake',
    cluster_uuid: 'fake-cluster-uuid',
    version: { distribution: 'opensearch', number: '2.19.0', build_type: 'fake', lucene_version: '9.12.1' },
    tagline: 'The OpenSearch Project: https://opensearch.org/',
  });

const health = (cluster: Cluster): Reply => {
  const count = cluster.indices.size;
  const shards = { active_primary_shards: count, active_shards: count, unassigned_shards: 0 };
  return ok({
    cluster_name: 'fake',
    status: 'green',
    timed_out: false,
    number_of_nodes: 1,
    number_of_data_nodes: 1,
    ...shards,
  });
};

const template: Handler = (cluster, _request, name) => indices.getTemplates(cluster, name);
const putTemplateRoute: Handler = (cluster, request, name) => indices.putTemplate(cluster, name, request.body);
const bulkRoute: Handler = (cluster, request, index?: string) => bulk(cluster, request.body, index);
const refreshRoute: Handler = (cluster, _request, index?: string) => indices.refresh(cluster, index);
const countRoute: Handler = (cluster, request, index?: string) => count(cluster, index, request.body, request.query);
const searchRoute: Handler = (cluster, request, index?: string) => search(cluster, index, request.body, request.query);
const putMappingRoute: Handler = (cluster, request, index) => indices.putMapping(cluster, index, request.body);

const route = (path: string, methods: Record<string, Handler>) => ({
  pattern: path.split('/').filter(Boolean),
  methods,
});
/** An API both on the whole cluster and on the indices named before it. */
const clusterAndIndex = (api: string, methods: Record<string, Handler>) => [
  route(`/${api}`, methods),
  route(`/{index}/${api}`, methods),
];

const ROUTES = [
  // The client pings with HEAD / when it resurrects a connection it marked dead.
  route('/', { GET: info, HEAD: () => ok() }),
  route('/_cluster/health', { GET: health }),
  route('/_index_template/{name}', { GET: template, HEAD: template, PUT: putTemplateRoute, POST: putTemplateRoute }),
  route('/_aliases', { POST: (cluster, request) => updateAliases(cluster, request.body) }),
  route('/_alias/{name}', { GET: (cluster, _request, name) => getAliases(cluster, name) }),
  ...clusterAndIndex('_bulk', { POST: bulkRoute, PUT: bulkRoute }),
  ...clusterAndIndex('_refresh', { POST: refreshRoute, GET: refreshRoute }),
  ...clusterAndIndex('_count', { POST: countRoute, GET: countRoute }),
  ...clusterAndIndex('_search', { POST: searchRoute, GET: searchRoute }),
  route('/{index}/_delete_by_query', {
    POST: (cluster, request, index) => deleteByQuery(cluster, index, request.body, request.query),
  }),
  route('/{index}/_mapping', {
    PUT: putMappingRoute,
    POST: putMappingRoute,
    GET: (cluster, _request, index) => indices.getMapping(cluster, index),
  }),
  route('/{index}', {
    PUT: (cluster, request, index) => indices.createIndex(cluster, index, request.body),
    HEAD: (cluster, _request, index) => indices.indexExists(cluster, index),
    GET: (cluster, _request, index) => indices.getIndex(cluster, index),
    DELETE: (cluster, _request, index) => indices.deleteIndex(cluster, index),
  }),
];

/** Path parameters, or undefined if the path does not fit; `{index}` never takes an API name such as `_search`. */
function matchRoute(pattern: string[], segments: string[]): string[] | undefined {
  if (pattern.length !== segments.length) return undefined;
  const params: string[] = [];
  for (const [position, expected] of pattern.entries()) {
    const segment = segments[position] ?? '';
    if (expected === '{index}' && segment.startsWith('_') && segment !== '_all') return undefined;
    if (expected.startsWith('{')) params.push(segment);
    else if (expected !== segment) return undefined;
  }
  return params;
}

export function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

export function dispatch(cluster: Cluster, method: string, rawPath: string, request: RouteRequest): Reply {
  const segments = rawPath.split('/').filter(Boolean).map(safeDecode);
  for (const { pattern, methods } of ROUTES) {
    const params = matchRoute(pattern, segments);
    if (!params) continue;
    const handler = methods[method];
    if (handler) return handler(cluster, request, ...params);
    const error = `Incorrect HTTP method for uri [${rawPath}] and method [${method}], allowed: [${Object.keys(methods).join(', ')}]`;
    return { status: 405, body: { error, status: 405 } };
  }
  throw unsupported(`the endpoint [${method} ${rawPath}]`);
}
