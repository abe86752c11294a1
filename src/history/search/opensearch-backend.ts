import type { Client } from '@opensearch-project/opensearch';
import type { Principal } from '../../platform/auth/principal.js';
import { visibleToOpenSearch, type SearchClause } from '../../platform/auth/scope.js';
import { unavailable } from '../../platform/errors.js';
import { compileOpenSearchFilters } from '../../platform/query/opensearch-filters.js';
import type { BackendHealth, SearchBackend, SearchRequest, SearchResult, TimeWindow } from './backend.js';
import type { Horizon } from '../records/retention.js';
import { matchesOf } from './highlight.js';
import type { ChangeDocument } from './opensearch-index.js';
import { toOpenSearch } from '../../platform/query/text-query.js';
import { statsWindowTooWide, type ChangeStatistics } from '../records/statistics.js';
import { STATS_TYPE, type ChangeStats, type RefreshResult, type StatsRequest } from '../records/stats-model.js';
import { TOP_CI_TYPES } from '../records/stats-figures.js';

export interface OpenSearchBackendOptions {
  alias: string;
  /** Limit of one explicit-window aggregation (CINV_STATS_TIMEOUT). */
  statsTimeoutMs: number;
}

interface Hit {
  _id: string;
  _score: number | null;
  _source: ChangeDocument;
}

interface Bucket {
  key: string | number;
  key_as_string?: string;
  doc_count: number;
}

/** Exact distinct counts come from the cardinality aggregation up to this many values. */
const EXACT_CARDINALITY = 40_000;
const COMPOSITE_PAGE = 10_000;

function timeFilter(window: TimeWindow): SearchClause[] {
  const range: Record<string, string> = {};
  if (window.from) range.gte = window.from;
  if (window.until) range[window.untilExclusive ? 'lt' : 'lte'] = window.until;
  return Object.keys(range).length > 0 ? [{ range: { changed_at: range } }] : [];
}

const statusOf = (error: unknown): number | undefined => (error as { meta?: { statusCode?: number } }).meta?.statusCode;

/**
 * An OpenSearch failure as the API reports it: the cluster down, overloaded or slow is a 503 to
 * retry; anything else (OpenSearch refusing a query cinv built) is cinv's fault, a 500 with the
 * cause in the log. Either way the client error of the upstream response is not passed on as if
 * it were the caller's.
 */
function clusterFailure(error: unknown): Error {
  const status = statusOf(error);
  const name = (error as { name?: string }).name;
  if (
    name === 'ConnectionError' ||
    name === 'NoLivingConnectionsError' ||
    name === 'TimeoutError' ||
    status === 429 ||
    (status ?? 0) >= 500
  ) {
    return unavailable('The search cluster is unavailable; retry shortly', 'search_unavailable', 5);
  }
  const body = (error as { meta?: { body?: { error?: { type?: string; reason?: string } } } }).meta?.body?.error;
  return new Error(
    `OpenSearch refused a request (${status ?? name}): ${body?.type ?? ''} ${body?.reason ?? (error as Error).message}`,
  );
}

/**
 * Change search on OpenSearch, over the documents the outbox indexer keeps there: every query is
 * filtered by the principal's tenant and scopes (term filters built from the same principal as
 * the SQL reads), routed to the tenant's shard. Statistics of explicit windows are aggregations;
 * the default window and the refresh stay with the PostgreSQL pre-aggregate, which is exact.
 */
export class OpenSearchBackend implements SearchBackend {
  readonly name = 'opensearch' as const;

  constructor(
    private readonly client: Client,
    private readonly statistics: ChangeStatistics,
    private readonly options: OpenSearchBackendOptions,
  ) {}

  private baseFilter(
    principal: Principal,
    request: TimeWindow & { filters?: SearchRequest['filters'] },
  ): SearchClause[] {
    return [
      ...visibleToOpenSearch(principal),
      { term: { has_changes: true } },
      // records an ignore rule hid, as the PostgreSQL reads leave them out (documents indexed before the field: not ignored)
      { bool: { must_not: [{ term: { ignored: true } }] } },
      ...timeFilter(request),
      ...compileOpenSearchFilters(request.filters ?? []),
    ];
  }

  async search(principal: Principal, request: SearchRequest): Promise<SearchResult> {
    const { must, must_not } = toOpenSearch(request.query);
    const body = {
      from: request.offset,
      size: request.limit,
      track_total_hits: true,
      query: { bool: { filter: this.baseFilter(principal, request), must, must_not } },
      sort: ['_score', { changed_at: 'desc' }, { id: 'desc' }],
    };
    const response = await this.client
      .search({ index: this.options.alias, routing: principal.tenantId, body: body as never })
      .catch((error: unknown) => {
        throw clusterFailure(error);
      });
    const hits = response.body.hits as unknown as { total: { value: number }; hits: Hit[] };
    const items = hits.hits.map((hit) => {
      const source = hit._source;
      return {
        id: source.id,
        ci_id: source.ci_id,
        ci_name: source.ci_name,
        ci_namespace: source.ci_namespace,
        ci_type: source.ci_type,
        changed_at: new Date(source.changed_at),
        change_type: source.change_type as 'CREATED' | 'UPDATED' | 'DELETED',
        changes: source.changes,
        kind: source.kind ?? null,
        severity: source.severity ?? null,
        ignored: source.ignored ?? false,
        score: Math.round((hit._score ?? 0) * 1e6) / 1e6,
        matched: matchesOf(source, request.query),
      };
    });
    return { items, total: hits.total.value, totalExact: true };
  }

  async stats(principal: Principal, request: StatsRequest): Promise<ChangeStats> {
    if (request.from === undefined && request.until === undefined && request.ciIds === undefined)
      return this.statistics.defaultWindow(principal, request.groupBy);
    const { from, until, untilExclusive } = this.statistics.window(request);
    const filter = [
      ...this.baseFilter(principal, { from, until, untilExclusive }),
      ...(request.ciIds ? [{ terms: { ci_id: request.ciIds } }] : []),
    ];
    const timeout = `${this.options.statsTimeoutMs}ms`;
    const body = {
      size: 0,
      timeout,
      track_total_hits: true,
      query: { bool: { filter } },
      aggs: {
        by_type: { terms: { field: 'change_type', size: 3 } },
        by_kind: { terms: { field: 'kind', size: 100, missing: 'other' } },
        top_types: { terms: { field: 'ci_type', size: TOP_CI_TYPES } },
        affected: { cardinality: { field: 'ci_id', precision_threshold: EXACT_CARDINALITY } },
        series: {
          date_histogram: { field: 'changed_at', calendar_interval: request.groupBy, min_doc_count: 1 },
          aggs: { by_type: { terms: { field: 'change_type', size: 3 } } },
        },
      },
    };
    const response = await this.client
      .search({ index: this.options.alias, routing: principal.tenantId, body: body as never })
      .catch((error: unknown) => {
        throw clusterFailure(error);
      });
    const result = response.body as unknown as {
      timed_out: boolean;
      aggregations: {
        by_type: { buckets: Bucket[] };
        by_kind?: { buckets: Bucket[] };
        top_types: { buckets: Bucket[] };
        affected: { value: number };
        series: { buckets: (Bucket & { by_type: { buckets: Bucket[] } })[] };
      };
    };
    if (result.timed_out) throw statsWindowTooWide();
    const aggs = result.aggregations;
    const changesByType = { created: 0, updated: 0, archived: 0 };
    for (const bucket of aggs.by_type.buckets) changesByType[STATS_TYPE[String(bucket.key)]!] += bucket.doc_count;
    const affected =
      aggs.affected.value < EXACT_CARDINALITY
        ? aggs.affected.value
        : await this.countDistinctCis(principal, filter, timeout);
    return {
      total_changes: changesByType.created + changesByType.updated + changesByType.archived,
      affected_cis: affected,
      changes_by_type: changesByType,
      changes_by_kind: (aggs.by_kind?.buckets ?? []).map((bucket) => ({
        kind: String(bucket.key),
        count: bucket.doc_count,
      })),
      top_changed_ci_types: aggs.top_types.buckets.map((bucket) => ({
        ci_type: String(bucket.key),
        count: bucket.doc_count,
      })),
      time_range: { start: new Date(from).toISOString(), end: new Date(until).toISOString() },
      series: aggs.series.buckets.map((bucket) => {
        const counts = { created: 0, updated: 0, archived: 0 };
        for (const inner of bucket.by_type.buckets) counts[STATS_TYPE[String(inner.key)]!] += inner.doc_count;
        return { bucket_start: new Date(Number(bucket.key)).toISOString(), ...counts };
      }),
    };
  }

  /**
   * The cardinality aggregation is approximate beyond its precision threshold; above it the
   * distinct CIs are counted exactly by paging a composite aggregation, within the stats timeout.
   */
  private async countDistinctCis(principal: Principal, filter: SearchClause[], timeout: string): Promise<number> {
    const deadline = performance.now() + this.options.statsTimeoutMs;
    let count = 0;
    let after: Record<string, unknown> | undefined;
    for (;;) {
      if (performance.now() > deadline) throw statsWindowTooWide();
      const body = {
        size: 0,
        timeout,
        query: { bool: { filter } },
        aggs: {
          cis: {
            composite: {
              size: COMPOSITE_PAGE,
              sources: [{ ci: { terms: { field: 'ci_id' } } }],
              ...(after ? { after } : {}),
            },
          },
        },
      };
      const response = await this.client
        .search({ index: this.options.alias, routing: principal.tenantId, body: body as never })
        .catch((error: unknown) => {
          throw clusterFailure(error);
        });
      const page = (
        response.body as unknown as {
          aggregations: { cis: { after_key?: Record<string, unknown>; buckets: unknown[] } };
        }
      ).aggregations.cis;
      count += page.buckets.length;
      if (page.buckets.length < COMPOSITE_PAGE || !page.after_key) return count;
      after = page.after_key;
    }
  }

  refresh(): Promise<RefreshResult> {
    return this.statistics.refresh();
  }

  async health(): Promise<BackendHealth> {
    try {
      const { body } = await this.client.cluster.health({ timeout: '2s' } as never);
      const status = (body as { status: string }).status;
      if (status === 'red') return { backend: 'opensearch', status: 'unavailable', detail: 'cluster status red' };
      return {
        backend: 'opensearch',
        status: status === 'green' ? 'ok' : 'degraded',
        detail: `cluster status ${status}`,
      };
    } catch (error) {
      return { backend: 'opensearch', status: 'unavailable', detail: (error as Error).name };
    }
  }

  /**
   * Deletes the documents past the retention horizons by query, as the sweep trims the records:
   * one request for every tenant and horizon, conflicts with the indexer's writes skipped (an
   * expired record is not written again).
   */
  async expire(horizons: readonly Horizon[]): Promise<number> {
    if (horizons.length === 0) return 0;
    const should = horizons.map((horizon) => ({
      bool: {
        filter: [
          { range: { changed_at: { lt: horizon.before.toISOString() } } },
          ...(horizon.ciType === undefined ? [] : [{ term: { ci_type: horizon.ciType } }]),
        ],
        must_not: horizon.except.length > 0 ? [{ terms: { ci_type: horizon.except } }] : [],
      },
    }));
    const response = await this.client
      .deleteByQuery({
        index: this.options.alias,
        conflicts: 'proceed',
        refresh: true,
        body: { query: { bool: { should, minimum_should_match: 1 } } } as never,
      })
      .catch((error: unknown) => {
        throw clusterFailure(error);
      });
    return (response.body as { deleted?: number }).deleted ?? 0;
  }
}
