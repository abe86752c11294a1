import type { Sql } from 'postgres';
import type { Principal } from '../../platform/auth/principal.js';
import { and, columnsOf, visibleTo, type Fragment } from '../../platform/auth/scope.js';
import { cisAt, visibleNow } from '../../history/records/as-of.js';
import { exactTime } from '../../platform/query/exact-time.js';
import { typeDataWithMetrics } from './ci-json.js';
import { conditions, narrowing, TIME_SORTS, VERSIONED, type CiListCriteria, type CiPosition } from './criteria.js';

/* The statements of a list page (planned in store.ts): its rows in order, now or as they were. */

export interface CiRow {
  ci_id: string;
  name: string;
  namespace: string | null;
  ci_type: string;
  status: 'active' | 'inactive' | 'archived';
  status_updated_at: Date | null;
  /** Null in a view of the past: it is not history. */
  last_seen: Date | null;
  created_at: Date;
  updated_at: Date;
  raw_data: Record<string, unknown>;
  type_data?: Record<string, unknown>;
  /** On list rows: the source that collected the CI and its instance inside it. */
  source_id?: string;
  scope_id?: string | null;
}

const SORT_COLUMNS: Record<string, string> = {
  created_at: 'ci.created_at',
  updated_at: 'ci.updated_at',
  last_seen: 'ls.last_seen',
  name: 'ci.name',
  namespace: 'ci.namespace',
  ci_type: 'ci.ci_type',
  status: 'ci.status',
};
/**
 * The rows that follow a position in the list's order. PostgreSQL puts nulls last ascending and
 * first descending; only the namespace can be null, so only it needs the longer form.
 */
function following(sql: Sql, sortBy: string, order: 'asc' | 'desc', [value, ciId]: CiPosition): Fragment {
  const column = sql(SORT_COLUMNS[sortBy]!);
  const beyond = order === 'asc' ? sql`>` : sql`<`;
  const position = TIME_SORTS.has(sortBy) ? sql`${value}::timestamptz` : sql`${value}`;
  if (sortBy !== 'namespace') return sql`(${column}, ci.ci_id) ${beyond} (${position}, ${ciId}::uuid)`;
  if (value === null) {
    return order === 'asc'
      ? sql`(ci.namespace is null and ci.ci_id > ${ciId}::uuid)`
      : sql`(ci.namespace is not null or ci.ci_id < ${ciId}::uuid)`;
  }
  const inOrder = sql`(ci.namespace, ci.ci_id) ${beyond} (${value}, ${ciId}::uuid)`;
  return order === 'asc' ? sql`(${inOrder} or ci.namespace is null)` : inOrder;
}

/**
 * Whether a list of the past can be walked through the versions: its sort and filters are on
 * versioned columns, and no free text (matched against every CI's name, namespace and type then)
 * or raw_data path asks for more than they keep.
 */
export function fromVersions(criteria: CiListCriteria): boolean {
  return (
    VERSIONED.has(criteria.sortBy) &&
    criteria.text === undefined &&
    criteria.filters.every((f) => f.target === 'column' && VERSIONED.has(f.field))
  );
}

/** The versions valid at the list's moment that match it (and follow `after`), aliased `ci`. */
export function versionsAt(sql: Sql, principal: Principal, criteria: CiListCriteria, after?: Fragment): Fragment {
  const moment = sql`${criteria.asOf!}::text::timestamptz`;
  return sql`
    select ci.ci_id, ci.created_at, ci.name, ci.namespace, ci.ci_type, ci.status, ci.scope_id from ci_versions ci
    where ${conditions(sql, principal, criteria)} and ci.valid_from <= ${moment} and ci.valid_to > ${moment}
      and ${visibleNow(sql, principal, sql`ci.ci_id`)}
      ${after ? sql`and ${after}` : sql``}`;
}

/**
 * The CIs as they were at the list's moment that match it (and follow `after`): last_seen is not
 * history, so the list at a moment neither sorts nor filters by it (see the service).
 */
export function thenRows(sql: Sql, principal: Principal, criteria: CiListCriteria, after?: Fragment): Fragment {
  return cisAt(sql, criteria.asOf!, 'ci', {
    visible: (row) => visibleTo(sql, principal, columnsOf(row)),
    where: (_row, rebuilt) =>
      and(sql, after ? [narrowing(sql, criteria, rebuilt), after] : [narrowing(sql, criteria, rebuilt)]),
  });
}

/** The list's sort column, as `ci.<column>`. */
const sortColumnOf = (criteria: CiListCriteria): string => SORT_COLUMNS[criteria.sortBy] ?? 'ci.created_at';

/** The list's order: its sort column (or `key`, an expression of it), then the id, in the request's direction. */
export function listOrder(sql: Sql, criteria: CiListCriteria, key?: Fragment): Fragment {
  const direction = criteria.sortOrder === 'asc' ? sql`asc` : sql`desc`;
  return sql`order by ${key ?? sql(sortColumnOf(criteria))} ${direction}, ci.ci_id ${direction}`;
}

/** The page's rows, with one more to tell whether more follow, each with its keyset position. */
export function pageRows(
  sql: Sql,
  principal: Principal,
  criteria: CiListCriteria,
  where: Fragment,
  sortMatches: boolean,
) {
  const after = criteria.after ? following(sql, criteria.sortBy, criteria.sortOrder, criteria.after) : undefined;
  const sortColumn = sortColumnOf(criteria);
  const position = TIME_SORTS.has(criteria.sortBy) ? exactTime(sql, sortColumn) : sql`${sql(sortColumn)}::text`;
  // the same order, in a form no index has: `|| ''` and `+ interval '0'` change no value
  const unindexed = TIME_SORTS.has(criteria.sortBy)
    ? sql`(${sql(sortColumn)} + interval '0')`
    : sql`(${sql(sortColumn)} || '')`;
  if (criteria.asOf !== undefined && fromVersions(criteria)) {
    // the page's CIs found through the versions valid then, then taken back in full
    return sql<(CiRow & { position: string | null })[]>`
      select ci.ci_id, ci.name, ci.namespace, ci.ci_type, ci.status, ci.status_updated_at, null::timestamptz as last_seen,
             ci.created_at, ci.updated_at, ci.source_id::text as source_id, ci.scope_id,
             ${criteria.withTypeData ? sql`ci.type_data` : sql`ci.raw_data`}, ${position} as position
      from (${versionsAt(sql, principal, criteria, after)} ${listOrder(sql, criteria)}
            limit ${criteria.limit + 1} offset ${after ? 0 : criteria.offset}) v
      cross join lateral (
        select ci.* from ${cisAt(sql, criteria.asOf, 'ci', {
          visible: (row) => visibleTo(sql, principal, columnsOf(row)),
          key: (row) => sql`${sql(row)}.ci_id = v.ci_id`,
        })} ci) ci
      ${listOrder(sql, criteria)}`;
  }
  if (criteria.asOf !== undefined) {
    return sql<(CiRow & { position: string | null })[]>`
      select ci.ci_id, ci.name, ci.namespace, ci.ci_type, ci.status, ci.status_updated_at, null::timestamptz as last_seen,
             ci.created_at, ci.updated_at, ci.source_id::text as source_id, ci.scope_id,
             ${criteria.withTypeData ? sql`ci.type_data` : sql`ci.raw_data`}, ${position} as position
      from ${thenRows(sql, principal, criteria, after)} ci
      ${listOrder(sql, criteria)}
      limit ${criteria.limit + 1} offset ${after ? 0 : criteria.offset}`;
  }
  const columns = sql`ci.ci_id, ci.name, ci.namespace, ci.ci_type, ci.status, ci.status_updated_at, ls.last_seen,
           ci.created_at, ci.updated_at, ci.source_id::text as source_id, ci.scope_id,
           ${criteria.withTypeData ? sql`${typeDataWithMetrics(sql)} as type_data` : sql`ci.raw_data`}`;
  const order = sortMatches ? listOrder(sql, criteria, unindexed) : listOrder(sql, criteria);
  const window = sql`limit ${criteria.limit + 1} offset ${after ? 0 : criteria.offset}`;
  if (criteria.sortBy === 'last_seen' || criteria.filters.some((f) => f.field === 'last_seen')) {
    return sql<(CiRow & { position: string | null })[]>`
      select ${columns}, ${position} as position
      from configuration_items ci join ci_last_seen ls on ls.ci_id = ci.ci_id
      where ${after ? and(sql, [where, after]) : where}
      ${order} ${window}`;
  }
  // last_seen joined, and the position written, for the page's rows only: a filter answered
  // through a bitmap (a raw_data containment, a few hundred matches to sort) would otherwise probe
  // last_seen and format a time for every match (13 of the 22 ms of a node's pods at 1M CIs)
  return sql<(CiRow & { position: string | null })[]>`
    select ${columns}, ${position} as position
    from (select ci.* from configuration_items ci
          where ${after ? and(sql, [where, after]) : where}
          ${order} ${window}) ci
    join ci_last_seen ls on ls.ci_id = ci.ci_id
    ${order}`;
}
