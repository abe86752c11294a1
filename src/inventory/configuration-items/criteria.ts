import type { Sql } from 'postgres';
import type { Principal } from '../../platform/auth/principal.js';
import { and, columnsOf, or, visibleTo, type Fragment } from '../../platform/auth/scope.js';
import { compileFilters, escapeLike, type ParsedFilter } from '../../platform/query/filters.js';

/* What narrows a list of CIs, as SQL fragments: the list's and the inventory diff's. */

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
  /** Free text: CIs whose name, namespace or type contains it, in any case (see `resolveText` in store.ts). */
  text?: ResolvedText;
  sourceId?: string;
  /** Read the inventory as it was at this moment (a valid timestamp, see checkedAsOf). */
  asOf?: string;
}

/** A keyset position: the sort value as exact text (null for a CI without namespace) and the CI id. */
export type CiPosition = readonly [sortValue: string | null, ciId: string];

export const TIME_SORTS: ReadonlySet<string> = new Set(['created_at', 'updated_at', 'last_seen']);

export function conditions(
  sql: Sql,
  principal: Principal,
  criteria: Pick<CiListCriteria, 'statuses' | 'filters' | 'text' | 'sourceId'>,
): Fragment {
  return and(sql, [visibleTo(sql, principal, columnsOf('ci')), narrowing(sql, criteria)]);
}

/** What narrows the list beyond the principal's scopes. `rebuilt`: on rows as they were (see textCondition). */
export function narrowing(
  sql: Sql,
  criteria: Pick<CiListCriteria, 'statuses' | 'filters' | 'text' | 'sourceId'>,
  rebuilt = false,
): Fragment {
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

/** The columns ci_versions keeps (sql/0022): filters and sorts on them are answered from it. */
export const VERSIONED = new Set(['name', 'namespace', 'scope_id', 'status', 'ci_type', 'created_at']);
