import type { Principal } from '../../platform/auth/principal.js';
import type { AppContext } from '../../context.js';
import { notFound, unprocessable, validationFailed } from '../../platform/errors.js';
import { decodeCursor, encodeCursor, type CursorBinding } from '../../platform/http/cursor.js';
import { isExactTime } from '../../platform/query/exact-time.js';
import { ciStateAt, exactSince, type CiState } from '../../history/records/as-of.js';
import { historyCoversSince } from '../../history/records/retention.js';
import { archiveWithHistory } from '../write-path/archive.js';
import { isUuid, parseFilters, type ParsedFilter } from '../../platform/query/filters.js';
import { TIME_SORTS, type CiPosition, type ResolvedText } from './criteria.js';
import { CI_FILTERS, type CiListQuery } from './schema.js';
import { listCis, resolveText, type CiPage } from './store.js';
import { findCiDetailJson, findSource, findVisibleCi, isCiVisible } from './detail-store.js';

export type { CiRow } from './page-store.js';
export type { CiPage } from './store.js';

export interface CiListing {
  page: CiPage;
  /** The cursor of the page that follows, null at the end of the walk. */
  nextCursor: string | null;
  /** Whether the rows carry type data instead of raw_data (`include_type_data` with a `ci_type` filter). */
  typeData: boolean;
  /** The moment shown, for a list of the past. */
  asOf?: string;
}

/**
 * The list rules: `status` defaults to `active` unless a `status` filter is given, and type data
 * replaces raw_data only when the list is narrowed to CI types.
 */
export async function listConfigurationItems(
  app: AppContext,
  principal: Principal,
  query: CiListQuery,
  shape: { itemsAsJson?: boolean } = {},
): Promise<CiListing> {
  const filters = parseFilters(query.filter, CI_FILTERS);
  const asOf = query.as_of === undefined ? undefined : await listMoment(app, query, filters);
  const statusFiltered = filters.some((f) => f.field === 'status');
  const status = query.status ?? (statusFiltered ? 'all' : 'active');
  const typeData = query.include_type_data && filters.some((f) => f.field === 'ci_type');
  const binding = listBinding(principal, query, status);
  const cursor = query.cursor ? decodeCursor(app.config.secret, query.cursor, binding) : undefined;
  const page = await listCis(
    app.sql,
    principal,
    {
      statuses: status === 'all' ? 'any' : [status],
      filters,
      sortBy: query.sort_by,
      sortOrder: query.sort_order,
      limit: query.limit,
      offset: query.offset,
      after: cursor ? positionOf(cursor.key, query.sort_by) : undefined,
      total: cursor?.total,
      withTypeData: typeData,
      asJson: shape.itemsAsJson === true && !typeData,
      text: await searchedText(app, principal, query.q),
      sourceId: query.source_id,
      asOf,
    },
    { countTimeoutMs: app.config.countTimeoutMs, embedded: app.database === 'embedded' },
  );
  // only an exact total travels on: an estimate is estimated again, so a page never claims exactness it lacks
  const carried = page.totalExact ? page.total : undefined;
  const nextCursor = page.last ? encodeCursor(app.config.secret, binding, [...page.last], carried) : null;
  return { page, typeData, nextCursor, asOf };
}

/** The free text (`q`) of a list or a diff, with the namespaces and CI types that contain it (none: undefined). */
export async function searchedText(
  app: AppContext,
  principal: Principal,
  q: string | undefined,
): Promise<ResolvedText | undefined> {
  const text = q?.trim();
  return text ? resolveText(app.sql, principal, text) : undefined;
}

/** The list's moment: last_seen is not history, so a list of the past is neither sorted nor filtered by it. */
async function listMoment(app: AppContext, query: CiListQuery, filters: readonly ParsedFilter[]): Promise<string> {
  const notHistory = [
    ...(query.sort_by === 'last_seen'
      ? [
          {
            field: 'sort_by',
            location: 'query' as const,
            message: 'last_seen is not history: a list as_of a moment cannot be sorted by it',
          },
        ]
      : []),
    ...(filters.some((f) => f.field === 'last_seen')
      ? [
          {
            field: 'filter',
            location: 'query' as const,
            message: 'last_seen is not history: a list as_of a moment cannot be filtered by it',
          },
        ]
      : []),
  ];
  if (notHistory.length > 0) throw validationFailed(notHistory);
  return checkedAsOf(app, query.as_of!);
}

/** Everything that shapes the list binds its cursor; `limit` and `include_attributes` may change between pages. */
function listBinding(principal: Principal, query: CiListQuery, status: string): CursorBinding {
  return {
    tenantId: principal.tenantId,
    reader: principal,
    scope: 'configuration-items',
    sort: `${query.sort_by}:${query.sort_order}`,
    filters: {
      status,
      filter: query.filter ?? [],
      q: query.q?.trim() ?? '',
      source_id: query.source_id ?? '',
      type_data: query.include_type_data,
      as_of: query.as_of ?? '',
    },
  };
}

/** The keyset position a signed cursor carries; anything else is a malformed cursor. */
function positionOf(key: unknown[], sortBy: string): CiPosition {
  const [value, ciId] = key;
  const valueFits = TIME_SORTS.has(sortBy)
    ? isExactTime(value)
    : typeof value === 'string' || (value === null && sortBy === 'namespace');
  if (key.length !== 2 || !valueFits || typeof ciId !== 'string' || !isUuid(ciId))
    throw unprocessable('Malformed cursor');
  return [value as string | null, ciId];
}

/** One CI as its detail shows it, as JSON text; 404 when it does not exist or lies outside the principal's data scopes. */
export async function ciDetailOr404(app: AppContext, principal: Principal, ciId: string): Promise<string> {
  const detail = await findCiDetailJson(app.sql, principal, ciId);
  if (detail === undefined) throw notFound('Configuration item not found', { ci_id: ciId });
  return detail;
}

/**
 * The earliest moment the inventory can be read as it was: the later of the upgrade that began
 * recording the way back (an installation that held CIs before it) and the retention horizon.
 * Null when every moment can be read.
 */
export async function earliestAsOf(app: AppContext): Promise<Date | null> {
  const since = [await exactSince(app.sql), historyCoversSince(app.config.changeRetention, app.now())].filter(
    (d): d is Date => d !== null,
  );
  return since.length === 0 ? null : new Date(Math.max(...since.map((d) => d.getTime())));
}

/**
 * A moment to read the past at, as given (the database reads it at its own, microsecond,
 * precision): a 422 for a moment the database cannot hold, and one naming the earliest moment
 * when it lies before it.
 */
export async function checkedAsOf(
  app: AppContext,
  asOf: string,
  field = 'as_of',
  location: 'query' | 'body' = 'query',
): Promise<string> {
  const ms = Date.parse(asOf);
  const year = new Date(ms).getUTCFullYear();
  if (Number.isNaN(ms) || year < 1 || year > 9999) {
    throw validationFailed([{ field, location, message: 'must be a moment between the years 1 and 9999 (ISO 8601)' }]);
  }
  const earliest = await earliestAsOf(app);
  if (earliest && Date.parse(asOf) < earliest.getTime()) {
    throw unprocessable(`${field} lies before the earliest moment the history covers (${earliest.toISOString()})`, {
      reason: 'before_history',
      field,
      earliest: earliest.toISOString(),
    });
  }
  return asOf;
}

export interface CiAsOf extends CiState {
  source: { id: number; name: string; collector_type: string } | null;
  as_of: string;
}

/** One CI as it was stored at `asOf`; 404 when it did not exist then (or lies outside the principal's scopes). */
export async function ciDetailAsOf(app: AppContext, principal: Principal, ciId: string, asOf: string): Promise<CiAsOf> {
  const at = await checkedAsOf(app, asOf);
  const state = await ciStateAt(app.sql, principal, ciId, at);
  if (!state) throw notFound('Configuration item not found at that moment', { ci_id: ciId, as_of: asOf });
  return { ...state, source: (await findSource(app.sql, state.source_id)) ?? null, as_of: at };
}

/** The CI as it was stored at a valid moment (see checkedAsOf); undefined when it did not exist then or is out of the principal's scopes. */
export function ciAt(app: AppContext, principal: Principal, ciId: string, at: string): Promise<CiState | undefined> {
  return ciStateAt(app.sql, principal, ciId, at);
}

/** Whether the CI existed at `asOf` and the principal may see it as it was then. */
export async function ciIsVisibleAt(
  app: AppContext,
  principal: Principal,
  ciId: string,
  asOf: string,
): Promise<boolean> {
  return (await ciStateAt(app.sql, principal, ciId, asOf)) !== undefined;
}

/** Whether the CI exists and the principal may see it: the question other features ask before reading around a CI. */
export function ciIsVisible(app: AppContext, principal: Principal, ciId: string): Promise<boolean> {
  return isCiVisible(app.sql, principal, ciId);
}

export interface ArchiveOutcome {
  ci_id: string;
  status_updated_at: Date;
  /** False when the CI was archived already (nothing changed). */
  archived: boolean;
}

/**
 * Archives a CI with its `DELETED` change record in one transaction; the row is locked so that a
 * concurrent reconcile cannot revive it in between. Archiving an archived CI changes nothing.
 */
export function archiveConfigurationItem(app: AppContext, principal: Principal, ciId: string): Promise<ArchiveOutcome> {
  return app.sql.begin(async (tx) => {
    const row = await findVisibleCi(tx, principal, ciId, true);
    if (!row) throw notFound('Configuration item not found', { ci_id: ciId });
    if (row.status === 'archived')
      return { ci_id: row.ci_id, status_updated_at: row.status_updated_at!, archived: false };
    const [archived] = await archiveWithHistory(tx, principal.tenantId, [row.ci_id], app.now());
    return { ci_id: row.ci_id, status_updated_at: archived!.status_updated_at, archived: true };
  });
}
