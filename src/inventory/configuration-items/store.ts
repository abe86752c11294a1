import type { Sql } from 'postgres';
import type { Principal } from '../../platform/auth/principal.js';
import { and, columnsOf, visibleTo, type Fragment } from '../../platform/auth/scope.js';
import { countWithin, type CountSettings } from '../../platform/query/count.js';
import { escapeLike } from '../../platform/query/filters.js';
import { listedCisJson } from './ci-json.js';
import { countable, countCis } from './counts.js';
import { conditions, type CiListCriteria, type CiPosition, type ResolvedText } from './criteria.js';
import { fromVersions, listOrder, pageRows, thenRows, versionsAt, type CiRow } from './page-store.js';

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
function countMatches(
  sql: Sql,
  principal: Principal,
  criteria: CiListCriteria,
  where: Fragment,
  counting: CountSettings,
): Promise<{ total: number; exact: boolean }> {
  if (criteria.total !== undefined) return Promise.resolve({ total: criteria.total, exact: true });
  if (criteria.asOf !== undefined) {
    const rows = fromVersions(criteria)
      ? sql`(${versionsAt(sql, principal, criteria)})`
      : thenRows(sql, principal, criteria);
    return countWithin(sql, sql`select 1 from ${rows} ci`, counting.countTimeoutMs, counting.embedded);
  }
  if (countable(criteria.filters) && criteria.text === undefined && criteria.sourceId === undefined) {
    return countCis(sql, principal, criteria.statuses, criteria.filters).then((total) => ({ total, exact: true }));
  }
  // the count joins last_seen only when a filter needs it: it is a 1:1 join that changes nothing else
  const join = criteria.filters.some((f) => f.field === 'last_seen')
    ? sql`join ci_last_seen ls on ls.ci_id = ci.ci_id`
    : sql``;
  return countWithin(
    sql,
    sql`select 1 from configuration_items ci ${join} where ${where}`,
    counting.countTimeoutMs,
    counting.embedded,
  );
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
export async function listCis(
  sql: Sql,
  principal: Principal,
  criteria: CiListCriteria,
  counting: CountSettings,
): Promise<CiPage> {
  const where = conditions(sql, principal, criteria);
  if (findsFewFirst(criteria)) {
    const first = await firstMatches(sql, criteria, where);
    const ids = first.slice(criteria.offset, criteria.offset + criteria.limit + 1);
    // the page's CIs read again by id, with the conditions: one changed since drops out rather than shows
    const byId = and(sql, [where, sql`ci.ci_id = any(${ids}::uuid[])`]);
    const counted =
      first.length > FEW_MATCHES
        ? countMatches(sql, principal, criteria, where, counting)
        : { total: first.length, exact: true };
    const [rows, count] = await Promise.all([
      readPage(sql, principal, { ...criteria, offset: 0 }, byId, false),
      counted,
    ]);
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

function readPage(
  sql: Sql,
  principal: Principal,
  criteria: CiListCriteria,
  where: Fragment,
  sortMatches: boolean,
): Promise<PageRow[]> {
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
