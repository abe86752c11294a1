/** The read path: _search (hits, paging, totals and aggregations), _count and _delete_by_query. */
import { parseAggregations, runAggregations, type Aggregation } from './aggregations.js';
import type { Cluster, IndexState } from './cluster.js';
import { badRequest, ok, searchPhaseFailure, shards, unsupported, type Reply } from './errors.js';
import type { SearchDoc } from './fields.js';
import { hitsSection, parseHitsOptions, type Hit, type HitsOptions } from './hits.js';
import type { Json } from './json.js';
import { objectParams } from './params.js';
import { compileQuery, type Query } from './query.js';

type UrlParams = Record<string, string>;

interface SearchRequest extends HitsOptions {
  query: Query;
  aggregations: Map<string, Aggregation>;
}

// `timeout` is accepted and never reached: the fake answers every search in full (timed_out: false).
const SEARCH_KEYS = ['query', 'from', 'size', 'sort', 'track_total_hits', '_source', 'aggs', 'aggregations', 'timeout'];

/** Validates the whole request before touching documents, so unsupported clauses fail even on empty indices. */
function parseSearchRequest(body: unknown, params: UrlParams): SearchRequest {
  const request = objectParams(body ?? {}, 'search request', SEARCH_KEYS);
  if (params.q !== undefined) throw unsupported('the [q] URL parameter');
  if (request.aggs !== undefined && request.aggregations !== undefined)
    throw badRequest('parsing_exception', 'Found two aggregation definitions');
  return {
    ...parseHitsOptions(request, params),
    query: compileQuery(request.query ?? { match_all: {} }),
    aggregations: parseAggregations(request.aggs ?? request.aggregations),
  };
}

function checkResultWindow(index: IndexState, window: number): void {
  const limit = Number(index.settings.max_result_window ?? 10_000);
  if (window <= limit) return;
  const cause = badRequest(
    'illegal_argument_exception',
    `Result window is too large, from + size must be less than or equal to: [${limit}] but was [${window}]. ` +
      'See the scroll api for a more efficient way to request large data sets. ' +
      'This limit can be set by changing the [index.max_result_window] index level setting.',
  );
  throw searchPhaseFailure(cause, index.name);
}

function matchDocuments(targets: IndexState[], query: Query): Hit[] {
  const hits: Hit[] = [];
  for (const index of targets) {
    for (const [id, stored] of index.docs) {
      const routing = stored.routing !== undefined ? { routing: stored.routing } : {};
      const doc: SearchDoc = { index: index.name, id, source: stored.source, mappings: index.mappings, ...routing };
      const score = query(doc);
      if (score !== undefined) hits.push({ doc, score });
    }
  }
  return hits;
}

export function search(cluster: Cluster, expression: string | undefined, body: unknown, params: UrlParams): Reply {
  const started = Date.now();
  const request = parseSearchRequest(body, params);
  const targets = cluster.resolve(expression);
  for (const index of targets) checkResultWindow(index, request.from + request.size);
  const hits = matchDocuments(targets, request.query);
  const response: Json = {
    took: Date.now() - started,
    timed_out: false,
    _shards: shards(targets.length),
    hits: hitsSection(hits, request),
  };
  const docs = hits.map((hit) => hit.doc);
  if (request.aggregations.size > 0) response.aggregations = runAggregations(request.aggregations, docs);
  return ok(response);
}

export function count(cluster: Cluster, expression: string | undefined, body: unknown, params: UrlParams): Reply {
  const request = objectParams(body ?? {}, 'count request', ['query']);
  if (params.q !== undefined) throw unsupported('the [q] URL parameter');
  const query = compileQuery(request.query ?? { match_all: {} });
  const targets = cluster.resolve(expression);
  return ok({ count: matchDocuments(targets, query).length, _shards: shards(targets.length) });
}

const DELETE_BY_QUERY_PARAMS = ['conflicts', 'refresh', 'wait_for_completion', 'slices'];

/** Deletes what the query matches, as OpenSearch's _delete_by_query does (synchronously, one batch). */
export function deleteByQuery(cluster: Cluster, expression: string, body: unknown, params: UrlParams): Reply {
  const started = Date.now();
  const request = objectParams(body, 'delete by query request', ['query']);
  const unknown = Object.keys(params).find((name) => !DELETE_BY_QUERY_PARAMS.includes(name));
  if (unknown !== undefined) throw unsupported(`the [${unknown}] URL parameter`);
  if (params.wait_for_completion === 'false') throw unsupported('wait_for_completion=false (tasks)');
  const query = compileQuery(request.query ?? { match_all: {} });
  const targets = cluster.resolve(expression);
  const hits = matchDocuments(targets, query);
  for (const hit of hits) cluster.indices.get(hit.doc.index)?.docs.delete(hit.doc.id);
  const deleted = hits.length;
  const counts = { total: deleted, deleted, batches: deleted > 0 ? 1 : 0, version_conflicts: 0, noops: 0 };
  return ok({ took: Date.now() - started, timed_out: false, ...counts, failures: [] });
}
