import type { Sql } from 'postgres';
import type { Principal } from '../../platform/auth/principal.js';
import { historyConditions, recordColumns, type ChangeRow } from '../records/store.js';
import { and } from '../../platform/auth/scope.js';
import { countWithin } from '../../platform/query/count.js';
import {
  SEARCH_WINDOW,
  type BackendHealth,
  type SearchBackend,
  type SearchRequest,
  type SearchResult,
} from './backend.js';
import { matchesOf } from './highlight.js';
import { toTsquery } from '../../platform/query/text-query.js';
import { TermFrequencies } from './selectivity.js';
import type { ChangeStatistics } from '../records/statistics.js';
import type { ChangeStats, RefreshResult, StatsRequest } from '../records/stats-model.js';

export interface PostgresBackendOptions {
  /** Limit of an exact count of matches before an estimate is reported (CINV_COUNT_TIMEOUT). */
  countTimeoutMs: number;
  /** The embedded database cannot interrupt a statement: counts there are exact, however long. */
  embedded: boolean;
}

/** Change search with PostgreSQL full text (tsvector, GIN); statistics counted in PostgreSQL too. */
export class PostgresSearchBackend implements SearchBackend {
  readonly name = 'postgres' as const;
  private readonly frequencies: TermFrequencies;

  constructor(
    private readonly sql: Sql,
    private readonly statistics: ChangeStatistics,
    private readonly options: PostgresBackendOptions,
  ) {
    this.frequencies = new TermFrequencies(sql);
  }

  /**
   * Matches are ranked by `ts_rank` over the weighted document (name above namespace and type,
   * above field paths, above values). A query with more than SEARCH_WINDOW matches ranks its most
   * recent SEARCH_WINDOW, so its cost stays bounded however common the words are; its total is
   * then counted under the count timeout, or estimated.
   */
  async search(principal: Principal, request: SearchRequest): Promise<SearchResult> {
    const { sql } = this;
    const where = historyConditions(sql, principal, { ...request, search: undefined });
    const query = sql`${toTsquery(request.query)}::tsquery`;
    // the index answers the rare words; common ones are checked on the rows it (or the time order) yields
    const { indexed, checked } = await this.frequencies.split(request.query);
    const matching = and(sql, [
      where,
      ...(indexed.length > 0 ? [sql`cr.search_vector @@ ${toTsquery(indexed)}::tsquery`] : []),
      ...(checked.length > 0 ? [sql`ts_match_vq(cr.search_vector, ${toTsquery(checked)}::tsquery)`] : []),
    ]);
    const [row] = await sql<{ candidates: number; items: (ChangeRow & { score: number })[] | null }[]>`
      with candidates as materialized (
        select cr.id, cr.changed_at, ts_rank(cr.search_vector, ${query}) as score
        from change_records cr
        where ${matching}
        order by cr.changed_at desc, cr.id desc
        limit ${SEARCH_WINDOW + 1}
      ), page as (
        select id, score, changed_at from candidates
        order by score desc, changed_at desc, id desc
        limit ${request.limit} offset ${request.offset}
      )
      select (select count(*) from candidates)::int as candidates,
             (select json_agg(hit order by hit.score desc, hit.changed_at desc, hit.id::bigint desc) from (
                select page.score, ${recordColumns(sql)}
                -- one lookup per hit, in the month of its time
                from page cross join lateral (select * from change_records r where r.id = page.id and r.changed_at = page.changed_at offset 0) cr
             ) hit) as items`;
    const candidates = row?.candidates ?? 0;
    const total =
      candidates <= SEARCH_WINDOW
        ? { total: candidates, exact: true }
        : // counted (or estimated) in the plain form, whose selectivity the statistics know
          await countWithin(
            sql,
            sql`select 1 from change_records cr where ${where} and cr.search_vector @@ ${query}`,
            this.options.countTimeoutMs,
            this.options.embedded,
          );
    const items = (row?.items ?? []).map((hit) => ({
      ...hit,
      changed_at: new Date(hit.changed_at),
      score: Math.round(hit.score * 1e6) / 1e6,
      matched: matchesOf(hit, request.query),
    }));
    return { items, total: total.total, totalExact: total.exact };
  }

  stats(principal: Principal, request: StatsRequest): Promise<ChangeStats> {
    return this.statistics.answer(principal, request);
  }

  refresh(): Promise<RefreshResult> {
    return this.statistics.refresh();
  }

  async health(): Promise<BackendHealth> {
    return { backend: 'postgres', status: 'ok' };
  }

  /** The records are the search documents here: the sweep's trim has removed them already. */
  async expire(): Promise<number> {
    return 0;
  }
}
