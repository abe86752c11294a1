import type { Readable } from 'node:stream';
import type { Principal } from '../../platform/auth/principal.js';
import { ciIsVisible } from '../../inventory/configuration-items/service.js';
import type { AppContext } from '../../context.js';
import { notFound, unprocessable, validationFailed } from '../../platform/errors.js';
import {
  countCiChangesBetween,
  listChanges,
  pageChanges,
  pageCiHistory,
  type ChangeCriteria,
  type ChangeRow,
  type Position,
} from '../records/store.js';
import { decodeCursor, encodeCursor, type CursorBinding } from '../../platform/http/cursor.js';
import { dateWindow } from '../../platform/query/date-window.js';
import { parseFilters, type ParsedFilter } from '../../platform/query/filters.js';
import { radiusOf } from '../../inventory/relationships/graph.js';
import { parseQuery } from '../../platform/query/text-query.js';
import { SEARCH_WINDOW, type SearchResult } from '../search/backend.js';
import { openChangeExport } from './csv.js';
import { CHANGE_FILTERS, type ChangeListQuery, type CiChangesQuery } from './schema.js';
import type { SearchQuery, StatsQuery } from './search-schema.js';
import { isExactTime } from '../../platform/query/exact-time.js';
import { historyCoversSince } from '../records/retention.js';
import { rolledUpTimeline } from './timeline.js';
import type { TimelineEntry } from './rollup.js';
import type { OwnedRecord } from './rollup-store.js';

export type { ChangeRow } from '../records/store.js';

const historyBinding = (principal: Principal, ciId: string, query: CiChangesQuery): CursorBinding => ({
  tenantId: principal.tenantId,
  reader: principal,
  scope: `ci-changes:${ciId}`,
  sort: null,
  filters: { fold: query.fold, include_ignored: query.include_ignored },
});

/** The keyset position a signed cursor carries; anything else is a malformed cursor. */
function positionOf(key: unknown[]): Position {
  const [at, id] = key;
  if (key.length !== 2 || !isExactTime(at) || typeof id !== 'string' || !/^\d{1,19}$/.test(id)) {
    throw unprocessable('Malformed cursor');
  }
  return [at, id];
}

export interface CiHistoryWalk {
  rows: ChangeRow[];
  /** A rolled-up read: its exact records (fold=false) or its lines. */
  owned?: OwnedRecord[];
  lines?: TimelineEntry[];
  total: number;
  hasMore: boolean;
  nextCursor: string | null;
}

/**
 * One page of a CI's change history. The walk's total is counted on its first page and travels in
 * the cursor from there; an id with neither a visible CI nor visible history is a 404 (history
 * outlives a CI removed for good).
 */
export async function ciHistory(
  app: AppContext,
  principal: Principal,
  ciId: string,
  query: CiChangesQuery,
): Promise<CiHistoryWalk> {
  if (query.rollup) return rolledUpHistory(app, principal, ciId, query);
  const stray = (['start_date', 'end_date'] as const).filter((name) => query[name] !== undefined);
  if (stray.length > 0)
    throw validationFailed(
      stray.map((field) => ({ field, location: 'query', message: 'applies only with rollup=true' })),
    );
  const binding = historyBinding(principal, ciId, query);
  const cursor = query.cursor ? decodeCursor(app.config.secret, query.cursor, binding) : undefined;
  const after = cursor ? positionOf(cursor.key) : undefined;
  const page = await pageCiHistory(
    app.sql,
    principal,
    ciId,
    { limit: query.limit, offset: query.offset, after, total: cursor?.total },
    { fold: query.fold, ignored: query.include_ignored },
  );
  if (page.total === 0 && !(await ciIsVisible(app, principal, ciId))) {
    throw notFound('No configuration item or change history with this id', { ci_id: ciId });
  }
  return {
    rows: page.items,
    total: page.total,
    hasMore: page.hasMore,
    nextCursor: page.last ? encodeCursor(app.config.secret, binding, [...page.last], page.total) : null,
  };
}

async function rolledUpHistory(
  app: AppContext,
  principal: Principal,
  ciId: string,
  query: CiChangesQuery,
): Promise<CiHistoryWalk> {
  const page = await rolledUpTimeline(app, principal, [ciId], query, `ci-changes:${ciId}`);
  if (page.total === 0 && !(await ciIsVisible(app, principal, ciId)))
    throw notFound('No configuration item or change history with this id', { ci_id: ciId });
  return {
    rows: [],
    ...(query.fold ? { lines: page.entries } : { owned: page.records }),
    total: page.total,
    hasMore: page.hasMore,
    nextCursor: page.nextCursor,
  };
}

/**
 * The CI ids of `related_to`'s radius (undefined without it); `depth` and `direction` mean nothing
 * without it and are refused.
 */
async function radiusOfQuery(
  app: AppContext,
  principal: Principal,
  query: Pick<ChangeListQuery, 'related_to' | 'depth' | 'direction'>,
): Promise<string[] | undefined> {
  if (query.related_to === undefined) {
    const stray = (['depth', 'direction'] as const).filter((name) => query[name] !== undefined);
    if (stray.length > 0)
      throw validationFailed(
        stray.map((field) => ({ field, location: 'query', message: 'applies only together with related_to' })),
      );
    return undefined;
  }
  return radiusOf(app, principal, query.related_to, { depth: query.depth, direction: query.direction });
}

/** A filter on the records' ci_id, as `ci_id:in:...` would parse, for a set the service worked out. */
const amongCis = (raw: string, ids: readonly string[]): ParsedFilter => ({
  raw,
  field: 'ci_id',
  op: 'in',
  value: ids.join(','),
  target: 'column',
  def: CHANGE_FILTERS.fields.ci_id!,
});

/** The radius as one more filter on the records' ci_id. */
async function radiusFilter(app: AppContext, principal: Principal, query: ChangeListQuery): Promise<ParsedFilter[]> {
  const ids = await radiusOfQuery(app, principal, query);
  if (ids === undefined) return [];
  return [amongCis(`related_to:${query.related_to}`, ids)];
}

/** Turns the list parameters into criteria. */
async function criteriaOf(app: AppContext, principal: Principal, query: ChangeListQuery): Promise<ChangeCriteria> {
  return {
    ...dateWindow(query.start_date, query.end_date),
    filters: [...parseFilters(query.filter, CHANGE_FILTERS), ...(await radiusFilter(app, principal, query))],
    search: query.search === undefined ? undefined : parseQuery(query.search, 'search'),
    sortBy: query.sort_by,
    sortOrder: query.sort_order,
    fold: query.fold,
    ignored: query.include_ignored,
  };
}

/** A rolled-up page of the radius: its records on their owners, exact or as lines (timeline.ts). */
export async function rolledUpChangePage(app: AppContext, principal: Principal, query: ChangeListQuery) {
  const stray: string[] = (['filter', 'search'] as const).filter((name) => query[name] !== undefined);
  if (query.sort_by !== 'changed_at' || query.sort_order !== 'desc') stray.push('sort_by');
  if (query.related_to === undefined)
    throw validationFailed([{ field: 'rollup', location: 'query', message: 'applies only together with related_to' }]);
  if (stray.length > 0)
    throw validationFailed(stray.map((field) => ({ field, location: 'query', message: 'does not apply with rollup' })));
  const owners = (await radiusOfQuery(app, principal, query))!;
  const window = dateWindow(query.start_date, query.end_date);
  const page = await rolledUpTimeline(
    app,
    principal,
    owners,
    {
      limit: query.limit,
      offset: query.offset,
      fold: query.fold,
      include_ignored: query.include_ignored,
      start_date: window.from,
      end_date: window.until,
    },
    `changes:${query.related_to}`,
  );
  const rolled: { lines?: TimelineEntry[]; owned?: OwnedRecord[]; total: number } = { total: page.total };
  if (query.fold) rolled.lines = page.entries;
  else rolled.owned = page.records;
  return rolled;
}

/** One offset page of the global history; totals as `listChanges` counts them. */
export async function listChangePage(app: AppContext, principal: Principal, query: ChangeListQuery) {
  const counting = { countTimeoutMs: app.config.countTimeoutMs, embedded: app.database === 'embedded' };
  return listChanges(
    app.sql,
    principal,
    await criteriaOf(app, principal, query),
    { limit: query.limit, offset: query.offset },
    counting,
  );
}

/**
 * The CSV export of the global history with the list's filters, search, dates, sort and scopes;
 * every match unless `limit` was given explicitly.
 */
export async function exportChanges(
  app: AppContext,
  principal: Principal,
  query: ChangeListQuery,
  explicitLimit: number | undefined,
): Promise<Readable> {
  const readings = (['rollup', 'fold'] as const).filter((name) => query[name]);
  if (readings.length > 0)
    throw validationFailed(
      readings.map((field) => ({
        field,
        location: 'query',
        message: 'the CSV export holds the exact records: leave it out',
      })),
    );
  return openChangeExport(
    { sql: app.sql, logger: app.logger, principal, statementTimeoutMs: app.config.bulkStatementTimeoutMs },
    await criteriaOf(app, principal, query),
    { offset: query.offset, limit: explicitLimit },
  );
}

/** A full-text search of the change history, through whichever backend serves search. */
export async function searchChanges(
  app: AppContext,
  principal: Principal,
  query: SearchQuery,
): Promise<SearchResult & { tookMs: number }> {
  const text = query.query.trim();
  if (text.length < 2)
    throw validationFailed([
      { field: 'query', location: 'query', message: 'must have at least 2 characters besides spaces' },
    ]);
  if (query.offset + query.limit > SEARCH_WINDOW) {
    throw validationFailed([
      { field: 'offset', location: 'query', message: `offset + limit must not exceed ${SEARCH_WINDOW}` },
    ]);
  }
  const request = {
    ...dateWindow(query.start_date, query.end_date),
    query: parseQuery(text),
    filters: parseFilters(query.filter, CHANGE_FILTERS),
    limit: query.limit,
    offset: query.offset,
  };
  const started = performance.now();
  const result = await app.search.search(principal, request);
  return { ...result, tookMs: Math.round(performance.now() - started) };
}

/**
 * Statistics of a window (the pre-aggregate's default window, or the full history of the one asked).
 * A window reaching back before the retained history says so: `time_range` starts where history does.
 */
export async function changeStatistics(app: AppContext, principal: Principal, query: StatsQuery) {
  const ciIds = await radiusOfQuery(app, principal, query);
  const stats = await app.search.stats(principal, {
    ...dateWindow(query.start_date, query.end_date),
    groupBy: query.group_by,
    ...(ciIds ? { ciIds } : {}),
  });
  const since = historyCoversSince(app.config.changeRetention, app.now());
  if (since === null || Date.parse(stats.time_range.start) >= since.getTime()) return stats;
  const start = since.getTime() > Date.parse(stats.time_range.end) ? stats.time_range.end : since.toISOString();
  return { ...stats, time_range: { ...stats.time_range, start } };
}

/** Folds the change records written since the last refresh into the statistics pre-aggregate. */
export function refreshChangeStatistics(app: AppContext) {
  return app.search.refresh();
}

/** The change records of a CI between two moments of a diff (after `from`, up to `to`). */
export function ciChangesBetween(
  app: AppContext,
  principal: Principal,
  ciId: string,
  from: string,
  to: string,
): Promise<number> {
  return countCiChangesBetween(app.sql, principal, ciId, from, to);
}

/**
 * The latest change records (with field changes) of a set of CIs, newest first, up to a moment
 * when given: what changed last around a CI, for the on-call summary.
 */
export async function latestChangesOf(
  app: AppContext,
  principal: Principal,
  ciIds: readonly string[],
  limit: number,
  until?: string,
): Promise<ChangeRow[]> {
  if (ciIds.length === 0) return [];
  const criteria: ChangeCriteria = {
    ...dateWindow(undefined, until),
    filters: [amongCis('ci_id', ciIds)],
    search: undefined,
    sortBy: 'changed_at',
    sortOrder: 'desc',
  };
  return pageChanges(app.sql, principal, criteria, { limit, offset: 0 });
}
