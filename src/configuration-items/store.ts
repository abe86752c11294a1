import type { Sql } from 'postgres';
import { seesAllData, type Principal } from '../auth/principal.js';
import { and, columnsOf, or, visibleTo, type Fragment } from '../auth/scope.js';
import type { Queryable } from '../db/database.js';
import { cisAt, visibleNow } from '../history/as-of.js';
import { countWithin, type CountSettings } from '../query/count.js';
import { API_TIME_FORMAT, exactTime } from '../query/exact-time.js';
import { compileFilters, escapeLike, type ParsedFilter } from '../query/filters.js';
import { countable, countCis } from './counts.js';
import { CI_STATUSES } from './schema.js';

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

export interface CiListCriteria {
  statuses: readonly string[] | 'any';
  filters: readonly ParsedFilter[];
  sortBy: string;
  sortOrder: 'asc' | 'desc';
  limit: number;
  offset: number;
  /** Continue after this position (a cursor walk) instead of skipping `offset` rows. */
  after?: CiPosition;
  withTypeData: boolean;
  /**
   * The page comes back as its items written as JSON by the database (`itemsJson`, the list's
   * item shape with raw_data) rather than as rows: decoding each CI's raw_data and serialising it
   * again cost the process more than the page's query.
   */
  asJson?: boolean;
  /** The walk's exact total, carried by its cursor: counted once, on the first page. */
  total?: number;
  /** Free text: CIs whose name, namespace or type contains it, in any case (see `resolveText`). */
  text?: ResolvedText;
  sourceId?: string;
  /** Read the inventory as it was at this moment (a valid timestamp, see checkedAsOf). */
  asOf?: string;
}

/** A keyset position: the sort value as exact text (null for a CI without namespace) and the CI id. */
export type CiPosition = readonly [sortValue: string | null, ciId: string];

export const TIME_SORTS: ReadonlySet<string> = new Set(['created_at', 'updated_at', 'last_seen']);

const SORT_COLUMNS: Record<string, string> = {
  created_at: 'ci.created_at',
  updated_at: 'ci.updated_at',
  last_seen: 'ls.last_seen',
  name: 'ci.name',
  namespace: 'ci.namespace',
  ci_type: 'ci.ci_type',
  status: 'ci.status',
};

function conditions(sql: Sql, principal: Principal, criteria: Pick<CiListCriteria, 'statuses' | 'filters' | 'text' | 'sourceId'>): Fragment {
  return and(sql, [visibleTo(sql, principal, columnsOf('ci')), narrowing(sql, criteria)]);
}

/** What narrows the list beyond the principal's scopes. `rebuilt`: on rows as they were (see textCondition). */
function narrowing(sql: Sql, criteria: Pick<CiListCriteria, 'statuses' | 'filters' | 'text' | 'sourceId'>, rebuilt = false): Fragment {
  const parts: Fragment[] = [sql`true`];
  // a single status as plain equality: with `= any(array)` the planner cannot walk the
  // (tenant_id, status, <sort column>) indexes in order and sorts the whole set instead
  if (criteria.statuses !== 'any') {
    parts.push(
      criteria.statuses.length === 1
        ? sql`ci.status = ${criteria.statuses[0]!}`
        : sql`ci.status = any(${criteria.statuses as string[]}::text[])`,
    );
  }
  parts.push(...compileFilters(sql, criteria.filters));
  if (criteria.sourceId !== undefined) parts.push(sql`ci.source_id = ${criteria.sourceId}::bigint`);
  if (criteria.text !== undefined) parts.push(textCondition(sql, criteria.text, rebuilt));
  return and(sql, parts);
}

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
    return order === 'asc' ? sql`(ci.namespace is null and ci.ci_id > ${ciId}::uuid)` : sql`(ci.namespace is not null or ci.ci_id < ${ciId}::uuid)`;
  }
  const inOrder = sql`(ci.namespace, ci.ci_id) ${beyond} (${value}, ${ciId}::uuid)`;
  return order === 'asc' ? sql`(${inOrder} or ci.namespace is null)` : inOrder;
}

/** Free text with the namespaces and CI types that contain it, looked up beforehand. */
export interface ResolvedText {
  text: string;
  namespaces: string[];
  ciTypes: string[];
}

/**
 * Every arm has an index (the name's trigrams, the namespace's and the type's b-trees), so the
 * planner can OR their bitmaps. Namespaces and types are matched as the values found to contain the
 * text: a substring match on their columns would have no index and read every CI.
 */
function textCondition(sql: Sql, { text, namespaces, ciTypes }: ResolvedText, rebuilt: boolean): Fragment {
  const pattern = `%${escapeLike(text)}%`;
  // a row as it was may hold a namespace or type no CI has now: matched as text, among the few rows rebuilt
  if (rebuilt) return sql`(ci.name ilike ${pattern} or ci.namespace ilike ${pattern} or ci.ci_type ilike ${pattern})`;
  const arms = [sql`ci.name ilike ${pattern}`];
  if (namespaces.length > 0) arms.push(sql`ci.namespace = any(${namespaces}::text[])`);
  if (ciTypes.length > 0) arms.push(sql`ci.ci_type = any(${ciTypes}::text[])`);
  return or(sql, arms);
}

/** More distinct namespaces than this are not walked for a free-text search: the name alone is searched beyond it. */
const NAMESPACE_WALK_LIMIT = 20_000;

/**
 * The tenant's namespaces and CI types that contain the text, in any case. Types come from the CI
 * counts (a few rows per instance and type); namespaces from a walk over the namespace index that
 * reads one entry per distinct namespace, not one per CI. Types are those of the instances the
 * principal may see; namespaces are walked over the tenant (the index has no instance column), which
 * widens no one's view: the rows found are scoped as every list's are.
 */
export async function resolveText(sql: Sql, principal: Principal, text: string): Promise<ResolvedText> {
  const tenantId = principal.tenantId;
  // the counts have the CI's source and instance columns under the same names: aliased `ci`, the
  // scope builder applies to them as to the CIs themselves
  const visible = visibleTo(sql, principal, columnsOf('ci'));
  const pattern = `%${escapeLike(text)}%`;
  const [namespaces, ciTypes] = await Promise.all([
    sql<{ namespace: string }[]>`
      with recursive walk(namespace, steps) as (
        (select namespace, 1 from configuration_items where tenant_id = ${tenantId} and namespace is not null order by namespace limit 1)
        union all
        select (select c.namespace from configuration_items c
                where c.tenant_id = ${tenantId} and c.namespace > walk.namespace order by c.namespace limit 1), steps + 1
        from walk where walk.namespace is not null and steps < ${NAMESPACE_WALK_LIMIT}
      )
      select namespace from walk where namespace ilike ${pattern}`,
    sql<{ ci_type: string }[]>`
      select ci.ci_type from ci_type_counts ci where ${visible} and ci.ci_type ilike ${pattern}
      union
      select ci.ci_type from ci_count_deltas ci where ${visible} and ci.ci_type ilike ${pattern}`,
  ]);
  return { text, namespaces: namespaces.map((r) => r.namespace), ciTypes: ciTypes.map((r) => r.ci_type) };
}

export interface CiPage {
  /** The page's CIs; empty when the criteria asked for `asJson`. */
  rows: CiRow[];
  /** With `asJson`: the page's items as a JSON array (see listedCisJson). */
  itemsJson?: string;
  /** The position of the page's last row, for the next page's cursor; absent when no rows follow. */
  last?: CiPosition;
  /** Whether rows follow this page (read as one more row than asked, not from the total). */
  hasMore: boolean;
  total: number;
  /** False when the total is the planner's estimate (see countWithin). */
  totalExact: boolean;
}

/** Below this many matches a free-text page sorts its matches instead of walking the sort order (see listCis). */
const SORT_MATCHES_UP_TO = 50_000;

/** How many CIs match: carried by a cursor, from the CI counts where they answer, else counted under the timeout. */
function countMatches(sql: Sql, principal: Principal, criteria: CiListCriteria, where: Fragment, counting: CountSettings): Promise<{ total: number; exact: boolean }> {
  if (criteria.total !== undefined) return Promise.resolve({ total: criteria.total, exact: true });
  if (criteria.asOf !== undefined) {
    const rows = fromVersions(criteria) ? sql`(${versionsAt(sql, principal, criteria)})` : thenRows(sql, principal, criteria);
    return countWithin(sql, sql`select 1 from ${rows} ci`, counting.countTimeoutMs, counting.embedded);
  }
  if (countable(criteria.filters) && criteria.text === undefined && criteria.sourceId === undefined) {
    return countCis(sql, principal, criteria.statuses, criteria.filters).then((total) => ({ total, exact: true }));
  }
  // the count joins last_seen only when a filter needs it: it is a 1:1 join that changes nothing else
  const join = criteria.filters.some((f) => f.field === 'last_seen') ? sql`join ci_last_seen ls on ls.ci_id = ci.ci_id` : sql``;
  return countWithin(sql, sql`select 1 from configuration_items ci ${join} where ${where}`, counting.countTimeoutMs, counting.embedded);
}

/**
 * One page of the CIs the principal may see, and how many match. A list filtered only by status
 * and type is counted from the CI counts, exactly, at the cost of a few rows; any other filter set
 * is counted under the count timeout, beyond which the planner's estimate is reported.
 *
 * A free-text search is counted first. Given a LIMIT, the planner likes to walk an index in the
 * sort order and test each CI against the text, expecting matches spread evenly; matches bunched
 * at the far end of the order (every `node-*` name when sorting by name descending) made that a
 * read of the whole inventory, 2.5 s at 1M CIs. A few thousand matches are cheaper found through
 * the text's indexes and sorted, so below SORT_MATCHES_UP_TO the sort key is written in a form no
 * index offers (20 ms for the same page); above it, matches are dense enough for the walk.
 */
export async function listCis(sql: Sql, principal: Principal, criteria: CiListCriteria, counting: CountSettings): Promise<CiPage> {
  const where = conditions(sql, principal, criteria);
  if (findsFewFirst(criteria)) {
    const first = await firstMatches(sql, criteria, where);
    const ids = first.slice(criteria.offset, criteria.offset + criteria.limit + 1);
    // the page's CIs read again by id, with the conditions: one changed since drops out rather than shows
    const byId = and(sql, [where, sql`ci.ci_id = any(${ids}::uuid[])`]);
    const counted = first.length > FEW_MATCHES ? countMatches(sql, principal, criteria, where, counting) : { total: first.length, exact: true };
    const [rows, count] = await Promise.all([readPage(sql, principal, { ...criteria, offset: 0 }, byId, false), counted]);
    return pageOf(criteria, rows, count);
  }
  const counted = countMatches(sql, principal, criteria, where, counting);
  const known = criteria.text === undefined || criteria.asOf !== undefined ? undefined : await counted;
  const sortMatches = known !== undefined && known.exact && known.total <= SORT_MATCHES_UP_TO;
  const [rows, count] = await Promise.all([readPage(sql, principal, criteria, where, sortMatches), counted]);
  return pageOf(criteria, rows, count);
}

/** A first page of a JSON filter reads the ids of up to this many matches (see firstMatches). */
const FEW_MATCHES = 1_000;

/**
 * Whether a first page is better served by reading the first FEW_MATCHES matches' ids before the
 * page: a filter on a raw_data or type_data path is answered through the JSON index, which is
 * lossy, so each match is read and tested again, once for the page and once more for its total
 * (the counts cannot answer it).
 */
function findsFewFirst(criteria: CiListCriteria): boolean {
  return (
    criteria.filters.some((f) => f.target === 'json') &&
    criteria.offset + criteria.limit < FEW_MATCHES &&
    criteria.total === undefined &&
    criteria.after === undefined &&
    criteria.asOf === undefined &&
    criteria.text === undefined &&
    criteria.sortBy !== 'last_seen' &&
    !criteria.filters.some((f) => f.field === 'last_seen')
  );
}

/**
 * The ids of the list's first FEW_MATCHES + 1 matches, in its order: the page is among them, and
 * when they are all, their number is the exact total, with no count. A node's pods at 1M CIs (700
 * matches) were read and tested twice, 3 ms each time, with last_seen joined to every match; now
 * once, and the page's 51 rows are fetched by key. More matches are counted as before.
 */
async function firstMatches(sql: Sql, criteria: CiListCriteria, where: Fragment): Promise<string[]> {
  const rows = await sql<{ ci_id: string }[]>`
    select ci.ci_id from configuration_items ci where ${where}
    ${listOrder(sql, criteria)}
    limit ${FEW_MATCHES + 1}`;
  return rows.map((row) => row.ci_id);
}

type PageRow = (CiRow & { position: string | null }) | { ci_id: string; position: string | null; item: string };

function readPage(sql: Sql, principal: Principal, criteria: CiListCriteria, where: Fragment, sortMatches: boolean): Promise<PageRow[]> {
  const query = pageRows(sql, principal, criteria, where, sortMatches);
  return criteria.asJson ? listedCisJson(sql, query as unknown as Fragment, criteria.sortOrder) : query;
}

function pageOf(criteria: CiListCriteria, rows: PageRow[], count: { total: number; exact: boolean }): CiPage {
  const hasMore = rows.length > criteria.limit;
  const kept = hasMore ? rows.slice(0, criteria.limit) : rows;
  const last = hasMore ? rows[criteria.limit - 1]! : undefined;
  const shown = criteria.asJson
    ? { rows: [], itemsJson: `[${(kept as { item: string }[]).map((row) => row.item).join(',')}]` }
    : { rows: (kept as (CiRow & { position: string | null })[]).map(({ position: _, ...row }) => row) };
  return {
    ...shown,
    hasMore,
    last: last ? [last.position, last.ci_id] : undefined,
    total: count.total,
    totalExact: count.exact,
  };
}

/** The columns ci_versions keeps (sql/0022): filters and sorts on them are answered from it. */
const VERSIONED = new Set(['name', 'namespace', 'scope_id', 'status', 'ci_type', 'created_at']);

/**
 * Whether a list of the past can be walked through the versions: its sort and filters are on
 * versioned columns, and no free text (matched against every CI's name, namespace and type then)
 * or raw_data path asks for more than they keep.
 */
function fromVersions(criteria: CiListCriteria): boolean {
  return (
    VERSIONED.has(criteria.sortBy) &&
    criteria.text === undefined &&
    criteria.filters.every((f) => f.target === 'column' && VERSIONED.has(f.field))
  );
}

/** The versions valid at the list's moment that match it (and follow `after`), aliased `ci`. */
function versionsAt(sql: Sql, principal: Principal, criteria: CiListCriteria, after?: Fragment): Fragment {
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
function thenRows(sql: Sql, principal: Principal, criteria: CiListCriteria, after?: Fragment): Fragment {
  return cisAt(sql, criteria.asOf!, 'ci', {
    visible: (row) => visibleTo(sql, principal, columnsOf(row)),
    where: (_row, rebuilt) => and(sql, after ? [narrowing(sql, criteria, rebuilt), after] : [narrowing(sql, criteria, rebuilt)]),
  });
}

/** The list's sort column, as `ci.<column>`. */
const sortColumnOf = (criteria: CiListCriteria): string => SORT_COLUMNS[criteria.sortBy] ?? 'ci.created_at';

/** The list's order: its sort column (or `key`, an expression of it), then the id, in the request's direction. */
function listOrder(sql: Sql, criteria: CiListCriteria, key?: Fragment): Fragment {
  const direction = criteria.sortOrder === 'asc' ? sql`asc` : sql`desc`;
  return sql`order by ${key ?? sql(sortColumnOf(criteria))} ${direction}, ci.ci_id ${direction}`;
}

/** The page's rows, with one more to tell whether more follow, each with its keyset position. */
function pageRows(sql: Sql, principal: Principal, criteria: CiListCriteria, where: Fragment, sortMatches: boolean) {
  const after = criteria.after ? following(sql, criteria.sortBy, criteria.sortOrder, criteria.after) : undefined;
  const sortColumn = sortColumnOf(criteria);
  const position = TIME_SORTS.has(criteria.sortBy) ? exactTime(sql, sortColumn) : sql`${sql(sortColumn)}::text`;
  // the same order, in a form no index has: `|| ''` and `+ interval '0'` change no value
  const unindexed = TIME_SORTS.has(criteria.sortBy) ? sql`(${sql(sortColumn)} + interval '0')` : sql`(${sql(sortColumn)} || '')`;
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

/** A time column as the API writes times, by the database. */
const apiTime = (sql: Sql, column: string) => sql`to_char(${sql(column)} at time zone 'UTC', ${API_TIME_FORMAT})`;

/** A value as JSON text written by the database (`null` for SQL null); jsonb as stored. */
const toJson = (sql: Sql, value: Fragment): Fragment => sql`coalesce(to_json(${value})::text, 'null')`;

/**
 * A JSON object of members already written as JSON text, in this order, with nothing between a
 * key and its colon: json_build_object writes `{"ci_id" : …, "name" : …}`, which every client
 * reads but nobody expects to see. The keys are this module's own constants.
 */
function jsonObject(sql: Sql, members: [string, Fragment][]): Fragment {
  const written = members.reduce<Fragment>(
    (text, [key, value], i) => sql`${text} || ${sql.unsafe(`'${i === 0 ? '{' : ','}${JSON.stringify(key)}:'`)} || ${value}`,
    sql`''`,
  );
  return sql`(${written} || '}')` as Fragment;
}

/**
 * A page's rows as list items (presentListedCi's shape), each written as JSON text by the database:
 * raw_data as stored, times in the API's form. The page's order is kept by its position and id.
 */
function listedCisJson(sql: Sql, page: Fragment, sortOrder: 'asc' | 'desc') {
  const direction = sortOrder === 'asc' ? sql`asc` : sql`desc`;
  return sql<{ ci_id: string; position: string | null; item: string }[]>`
    select p.ci_id, p.position, ${jsonObject(sql, [
      ['ci_id', toJson(sql, sql`p.ci_id`)], ['name', toJson(sql, sql`p.name`)], ['namespace', toJson(sql, sql`p.namespace`)],
      ['ci_type', toJson(sql, sql`p.ci_type`)], ['status', toJson(sql, sql`p.status`)],
      ['status_updated_at', toJson(sql, apiTime(sql, 'p.status_updated_at'))], ['last_seen', toJson(sql, apiTime(sql, 'p.last_seen'))],
      ['created_at', toJson(sql, apiTime(sql, 'p.created_at'))], ['updated_at', toJson(sql, apiTime(sql, 'p.updated_at'))],
      ['raw_data', toJson(sql, sql`p.raw_data`)], ['source_id', toJson(sql, sql`p.source_id::bigint`)], ['scope_id', toJson(sql, sql`p.scope_id`)],
    ])} as item
    from (${page}) p
    order by p.position ${direction}, p.ci_id ${direction}`;
}

/** type_data as stored plus the metrics kept beside last_seen (`ls`), as collectors sent it. */
const typeDataWithMetrics = (sql: Sql) =>
  sql`case when ls.metrics is null then ci.type_data else ci.type_data || jsonb_build_object('metrics', ls.metrics) end`;

/** One CI, if it exists and the principal may see it. `forUpdate` locks it for the transaction. */
export async function findVisibleCi(sql: Queryable, principal: Principal, ciId: string, forUpdate = false): Promise<CiRow | undefined> {
  const db = sql as Sql;
  const [row] = await db<CiRow[]>`
    select ci.ci_id, ci.name, ci.namespace, ci.ci_type, ci.status, ci.status_updated_at, ls.last_seen,
           ci.created_at, ci.updated_at, ci.raw_data
    from configuration_items ci join ci_last_seen ls on ls.ci_id = ci.ci_id
    where ci.ci_id = ${ciId} and ${visibleTo(db, principal, columnsOf('ci'))}
    ${forUpdate ? db`for update of ci` : db``}`;
  return row;
}

/**
 * One CI as its detail shows it (presentCiDetail's shape), written as JSON text by the database:
 * raw_data and type_data go out as stored instead of being decoded and encoded again. Undefined
 * when it does not exist or the principal may not see it.
 */
export async function findCiDetailJson(sql: Sql, principal: Principal, ciId: string): Promise<string | undefined> {
  const [row] = await sql<{ detail: string }[]>`
    select ${jsonObject(sql, [
      ['ci_id', toJson(sql, sql`ci.ci_id`)], ['name', toJson(sql, sql`ci.name`)], ['namespace', toJson(sql, sql`ci.namespace`)],
      ['ci_type', toJson(sql, sql`ci.ci_type`)], ['status', toJson(sql, sql`ci.status`)],
      ['status_updated_at', toJson(sql, apiTime(sql, 'ci.status_updated_at'))], ['last_seen', toJson(sql, apiTime(sql, 'ls.last_seen'))],
      ['created_at', toJson(sql, apiTime(sql, 'ci.created_at'))], ['updated_at', toJson(sql, apiTime(sql, 'ci.updated_at'))],
      ['raw_data', toJson(sql, sql`ci.raw_data`)], ['type_data', toJson(sql, typeDataWithMetrics(sql))],
      ['source', jsonObject(sql, [['id', toJson(sql, sql`s.id`)], ['name', toJson(sql, sql`s.name`)], ['collector_type', toJson(sql, sql`c.collector_type`)]])],
      ['scope_id', toJson(sql, sql`ci.scope_id`)],
    ])} as detail
    from configuration_items ci
    join ci_last_seen ls on ls.ci_id = ci.ci_id
    join sources s on s.id = ci.source_id
    join collectors c on c.id = s.collector_id
    where ci.ci_id = ${ciId} and ${visibleTo(sql, principal, columnsOf('ci'))}`;
  return row?.detail;
}

/** A source as a CI's detail names it. */
export async function findSource(sql: Sql, sourceId: string): Promise<{ id: number; name: string; collector_type: string } | undefined> {
  const [row] = await sql<{ id: number; name: string; collector_type: string }[]>`
    select s.id::int as id, s.name, c.collector_type from sources s join collectors c on c.id = s.collector_id where s.id = ${sourceId}`;
  return row;
}

/** Whether the CI exists and lies inside the principal's data scopes (no row is loaded). */
export async function isCiVisible(sql: Sql, principal: Principal, ciId: string): Promise<boolean> {
  const rows = await sql`select 1 from configuration_items ci where ci.ci_id = ${ciId} and ${visibleTo(sql, principal, columnsOf('ci'))}`;
  return rows.length > 0;
}

/** How the inventory differs between two moments, for one CI. */
export interface CiDifference {
  ci_id: string;
  kind: 'appeared' | 'disappeared' | 'changed';
  ci_type: string;
  name: string;
  namespace: string | null;
  /** The paths whose values differ (dotted: top-level fields, keys into raw_data and type_data). */
  changed_fields: string[];
}

export interface DiffCriteria extends Pick<CiListCriteria, 'statuses' | 'filters' | 'text' | 'sourceId'> {
  from: string;
  to: string;
  limit: number;
  /** Continue after this CI id. */
  after?: string;
  /** A page answers short once it has examined this many candidates (CINV_DIFF_PAGE_EXAMINE). */
  examine: number;
}

/** One page of differences; `resumeAfter` when it stopped short, examining no more candidates, where the next goes on. */
export interface DiffPage {
  rows: CiDifference[];
  resumeAfter?: string;
}

/** What a diff compares: a row as it was, without what every write moves (updated_at) and what is not the CI's (the digest). */
const comparable = (sql: Sql, alias: string) =>
  sql`case when ${sql(alias)}.ci_id is null then null else to_jsonb(${sql(alias)}) - 'updated_at' - 'content_hash' - 'tenant_id' end`;

/** The writes of the way back (alias u) between the two moments: a range of its (tenant, time) index. */
const writtenBetween = (sql: Queryable, principal: Principal, criteria: DiffCriteria) =>
  sql`u.tenant_id = ${principal.tenantId} and u.at > ${criteria.from}::text::timestamptz and u.at <= ${criteria.to}::text::timestamptz`;

/**
 * The CIs created or removed between two moments. Every status is named so that the created_at
 * index, which leads with the status, is read as three ranges rather than whole.
 */
function bornOrGone(sql: Sql, principal: Principal, criteria: DiffCriteria): Fragment {
  const tenant = principal.tenantId;
  const from = sql`${criteria.from}::text::timestamptz`;
  const to = sql`${criteria.to}::text::timestamptz`;
  return sql`
    select c.ci_id from configuration_items c
    where c.tenant_id = ${tenant} and c.status = any(${CI_STATUSES as unknown as string[]}::text[]) and c.created_at > ${from} and c.created_at <= ${to}
    union all
    select g.ci_id from ci_tombstones g
    where g.tenant_id = ${tenant} and ((g.removed_at > ${from} and g.removed_at <= ${to}) or (g.created_at > ${from} and g.created_at <= ${to}))`;
}

/**
 * The CIs that may differ between two moments: only a CI written, created or removed in between can
 * differ, so they come from the ways back and the tombstones of the interval, and the cost follows
 * the interval's changes, not the inventory.
 */
function candidates(sql: Sql, principal: Principal, criteria: DiffCriteria): Fragment {
  return sql`(
    select u.ci_id from ci_undo u
    where ${writtenBetween(sql, principal, criteria)}
    union
    select ci_id from (${bornOrGone(sql, principal, criteria)}) born
  )`;
}

/**
 * The next candidates after `after` in CI id order, at most about `size`: the written ones walked
 * along the way back's (tenant, CI, time) index from the cursor, so that a page reads the index
 * entries of the CIs it passes rather than the whole interval; the created and removed ones beside
 * them. `exhausted` when nothing follows the last.
 */
async function nextCandidates(sql: Sql, principal: Principal, criteria: DiffCriteria, after: string | undefined, size: number): Promise<{ ids: string[]; exhausted: boolean }> {
  const past = after ? sql`and ci_id > ${after}::uuid` : sql``;
  // walked in CI order along the (tenant, CI, time) index: the planner, which expects few writes in
  // the interval, would rather gather all of them by time and sort (the whole interval, for a page)
  const written = await sql.begin(async (tx) => {
    await tx`set local enable_sort = off`;
    return tx<{ ci_id: string }[]>`
      select distinct u.ci_id from ci_undo u
      where ${writtenBetween(tx, principal, criteria)}
        ${after ? tx`and u.ci_id > ${after}::uuid` : tx``}
      order by u.ci_id limit ${size}`;
  });
  const bornOrRemoved = await sql<{ ci_id: string }[]>`
    select distinct ci_id from (${bornOrGone(sql, principal, criteria)}) b where true ${past} order by ci_id limit ${size}`;
  // a full batch of either ends the window at its last id: the other may hold ids beyond it that the next window takes
  const edges = [written, bornOrRemoved].filter((rows) => rows.length === size).map((rows) => rows[rows.length - 1]!.ci_id);
  const edge = edges.length === 0 ? undefined : edges.reduce((a, b) => (a < b ? a : b));
  const ids = [...new Set([...written, ...bornOrRemoved].map((row) => row.ci_id))].filter((id) => edge === undefined || id <= edge).sort();
  return { ids, exhausted: edge === undefined };
}

/**
 * The CIs of `source` (a relation of ci_id), each as it was at both moments that matches the
 * criteria then (`b` before, `a` after; null when it did not exist or did not match).
 */
function compared(sql: Sql, principal: Principal, criteria: DiffCriteria, source: Fragment): Fragment {
  const at = (moment: string) =>
    cisAt(sql, moment, 'ci', {
      visible: (row) => visibleTo(sql, principal, columnsOf(row)),
      where: (_row, rebuilt) => narrowing(sql, criteria, rebuilt),
      key: (row) => sql`${sql(row)}.ci_id = m.ci_id`,
    });
  return sql`
    select m.ci_id, ${comparable(sql, 'b')} as before, ${comparable(sql, 'a')} as after
    from ${source} m
    left join lateral (select ci.* from ${at(criteria.from)} ci) b on true
    left join lateral (select ci.* from ${at(criteria.to)} ci) a on true
    where b.ci_id is not null or a.ci_id is not null`;
}

/** The differences as rows: what kind, and the changed paths (as cinv_jsonb_undo finds them, see src/history/diff.ts for the same rule). */
function differences(sql: Sql, rows: Fragment): Fragment {
  return sql`
    select d.ci_id,
           case when d.before is null then 'appeared' when d.after is null then 'disappeared' else 'changed' end as kind,
           coalesce(d.after, d.before) ->> 'ci_type' as ci_type,
           coalesce(d.after, d.before) ->> 'name' as name,
           coalesce(d.after, d.before) ->> 'namespace' as namespace,
           case when d.before is null or d.after is null then '{}'::text[]
                else array(select array_to_string(array(select jsonb_array_elements_text(op -> 'p')), '.')
                           from cinv_jsonb_undo(d.before, d.after, '{}') op order by 1) end as changed_fields
    from (${rows}) d
    where d.before is null or d.after is null or d.before <> d.after`;
}

/**
 * One page of the differences, in CI id order, with one more row to tell whether more follow. The
 * candidates come in windows from the cursor on (see nextCandidates), each compared at both
 * moments, until the page is full: a window whose candidates all changed and back, or fell outside
 * the criteria, is followed by a larger one. A page that has examined `criteria.examine`
 * candidates answers with what it found and where to go on, so that its cost stays bounded when
 * few of the interval's writes make a difference.
 */
export async function diffPage(sql: Sql, principal: Principal, criteria: DiffCriteria): Promise<DiffPage> {
  const wanted = criteria.limit + 1;
  const found: CiDifference[] = [];
  let after = criteria.after;
  let size = Math.min(2 * wanted, criteria.examine);
  let examined = 0;
  for (;;) {
    const window = await nextCandidates(sql, principal, criteria, after, size);
    if (window.ids.length > 0) {
      const source = sql`(select unnest(${window.ids}::uuid[]) as ci_id)`;
      found.push(
        ...(await sql<CiDifference[]>`
          select * from (${differences(sql, compared(sql, principal, criteria, source))}) x
          order by x.ci_id limit ${wanted - found.length}`),
      );
    }
    if (found.length >= wanted || window.exhausted) return { rows: found };
    after = window.ids[window.ids.length - 1];
    examined += window.ids.length;
    if (examined >= criteria.examine) return { rows: found, resumeAfter: after };
    size = Math.min(size * 4, 20_000, criteria.examine - examined);
  }
}

export interface DiffCount {
  ci_type: string;
  appeared: number;
  disappeared: number;
  changed: number;
}

/** Filters the quiet CIs of a diff can answer (beside the source): their type and status were the same at both moments. */
const QUIET_FIELDS = new Set(['ci_type', 'status']);

/**
 * Every CI written between the two moments, once, with what its writes in between tell: whether
 * all of them were quiet (started no version, sql/0023, and know their digests), the digest of its
 * state at `from` (the first write's before_digest) and at `to` (the last write's after_digest),
 * and its source, type and status as the last write left them. One range of the (tenant, time)
 * index, which covers these columns, so the heap of the way back is not read. The writes are put
 * in (CI, time) order once and each CI's last one kept, with the first's digest beside it: ordered
 * aggregates would sort every CI's writes again for each of the four, most of the counts' time.
 */
function writesBetween(sql: Sql, principal: Principal, criteria: DiffCriteria): Fragment {
  return sql`
    select ci_id, before_digest, after_digest, ci_type, status, source_id, quiet from (
      select u.ci_id,
             first_value(u.before_digest) over w as before_digest,
             u.after_digest, u.ci_type, u.status,
             min(u.source_id) over w as source_id,
             bool_and(u.versioned is not null and not u.versioned and u.before_digest is not null) over w as quiet,
             row_number() over w as n,
             count(*) over w as writes
      from ci_undo u
      where ${writtenBetween(sql, principal, criteria)}
      window w as (partition by u.ci_id order by u.at, u.id rows between unbounded preceding and unbounded following)
    ) u
    where n = writes`;
}

/**
 * The differences counted by CI type (the type at the later moment, else the earlier). Where the
 * criteria are on versioned columns, a candidate's presence and type at each moment come from its
 * versions and whether it changed from the digests of its two states (cinv_digest_at), so that
 * nothing is taken back; otherwise each candidate is taken back to both moments and compared.
 *
 * For a principal without data scopes and criteria on source, type and status alone, a CI whose
 * writes in between were all quiet and that was neither created nor removed in between existed at
 * both moments with one source, type and status, and differs when its two digests do: most CIs of a
 * busy day are such, and they are counted from writesBetween with no lookup per CI. Only the rest
 * is looked up.
 */
export function diffCounts(sql: Sql, principal: Principal, criteria: DiffCriteria): Promise<DiffCount[]> {
  const versioned = criteria.text === undefined && criteria.filters.every((f) => f.target === 'column' && VERSIONED.has(f.field));
  if (versioned) {
    const quiet = seesAllData(principal) && criteria.filters.every((f) => QUIET_FIELDS.has(f.field));
    const version = (moment: string) => sql`
      select ci.ci_type from ci_versions ci
      where ci.ci_id = m.ci_id and ci.valid_from <= ${moment}::text::timestamptz and ci.valid_to > ${moment}::text::timestamptz
        and ${conditions(sql, principal, criteria)} and ${visibleNow(sql, principal, sql`m.ci_id`)}`;
    // the first write after a moment holds the digest of the CI then; without one, the CI is as it is now
    const firstWrite = (moment: string) => sql`
      select u.id, u.before_digest from ci_undo u
      where u.tenant_id = ${principal.tenantId} and u.ci_id = m.ci_id and u.at > ${moment}::text::timestamptz order by u.at, u.id limit 1`;
    const digestAt = (write: string, moment: string) => sql`
      case when ${sql(write)}.id is null then coalesce(cinv_state_digest(to_jsonb(c)), cinv_state_digest(to_jsonb(g)))
           else coalesce(${sql(write)}.before_digest, cinv_digest_at(${principal.tenantId}, m.ci_id, ${moment}::text::timestamptz)) end`;
    const lookedUp = quiet ? sql`(select ci_id from w where not w.quiet union select ci_id from bg)` : candidates(sql, principal, criteria);
    return sql<DiffCount[]>`
      ${quiet ? sql`with w as materialized (${writesBetween(sql, principal, criteria)}), bg as materialized (${bornOrGone(sql, principal, criteria)})` : sql``}
      select ci_type,
             count(*) filter (where kind = 'appeared')::int as appeared,
             count(*) filter (where kind = 'disappeared')::int as disappeared,
             count(*) filter (where kind = 'changed')::int as changed
      from (
        select coalesce(a.ci_type, b.ci_type) as ci_type,
               case when b.ci_type is null then 'appeared' when a.ci_type is null then 'disappeared'
                    when ${digestAt('w1', criteria.from)} is distinct from ${digestAt('w2', criteria.to)} then 'changed' end as kind
        from ${lookedUp} m
        left join lateral (${version(criteria.from)}) b on true
        left join lateral (${version(criteria.to)}) a on true
        left join lateral (${firstWrite(criteria.from)}) w1 on true
        left join lateral (${firstWrite(criteria.to)}) w2 on true
        left join configuration_items c on c.ci_id = m.ci_id
        left join ci_tombstones g on g.ci_id = m.ci_id
        where b.ci_type is not null or a.ci_type is not null
        ${
          quiet
            ? sql`union all
                  select ci.ci_type, 'changed' from w ci
                  where ci.quiet and ci.before_digest <> ci.after_digest and ${narrowing(sql, criteria)}
                    and ci.ci_id not in (select bg.ci_id from bg)`
            : sql``
        }
      ) d
      where kind is not null
      group by 1 order by 1`;
  }
  return sql<DiffCount[]>`
    select coalesce(d.after, d.before) ->> 'ci_type' as ci_type,
           count(*) filter (where d.before is null)::int as appeared,
           count(*) filter (where d.after is null)::int as disappeared,
           count(*) filter (where d.before is not null and d.after is not null)::int as changed
    from (${compared(sql, principal, criteria, candidates(sql, principal, criteria))}) d
    where d.before is null or d.after is null or d.before <> d.after
    group by 1 order by 1`;
}
