import type { PendingQuery, Row, Sql } from 'postgres';
import { dataScopesOf, type Principal } from './principal.js';

export type Fragment = PendingQuery<Row[]>;

/** Joins SQL fragments with `and`; no fragments means `true`. */
export function and(sql: Sql, parts: readonly Fragment[]): Fragment {
  if (parts.length === 0) return sql`true`;
  return parts.reduce((acc, part) => sql`${acc} and ${part}`);
}

/** Joins SQL fragments with `or` inside parentheses; no fragments means `false`. */
export function or(sql: Sql, parts: readonly Fragment[]): Fragment {
  if (parts.length === 0) return sql`false`;
  return sql`(${parts.reduce((acc, part) => sql`${acc} or ${part}`)})`;
}

export interface ScopedColumns {
  tenant: string;
  source: string;
  scope: string;
  /**
   * Change records only: the instance a CI moved out of (sql/0039). Such a record carries that
   * instance's values, so it is visible only when the principal may see that instance too.
   */
  movedFrom?: string;
}

export const columnsOf = (alias: string): ScopedColumns => ({
  tenant: `${alias}.tenant_id`,
  source: `${alias}.source_id`,
  scope: `${alias}.scope_id`,
});

/** The columns of a change record (`change_records` under `alias`), with the instance a move left. */
export const changeColumnsOf = (alias: string): ScopedColumns => ({
  ...columnsOf(alias),
  movedFrom: `${alias}.moved_from_scope_id`,
});

/**
 * The scope-aware query builder: the `WHERE` fragment that limits a table holding CI-owned rows
 * (CIs, change records, ...) to what the principal may see. Every read of such rows includes it;
 * nothing is filtered after fetching.
 */
export function visibleTo(sql: Sql, principal: Principal, columns: ScopedColumns): Fragment {
  const tenant = sql`${sql(columns.tenant)} = ${principal.tenantId}`;
  const scopes = dataScopesOf(principal);
  if (scopes === 'all') return tenant;
  const inScopes = (column: string) =>
    or(
      sql,
      scopes.map((scope) =>
        scope.scopeId === null
          ? sql`${sql(columns.source)} = ${scope.sourceId}`
          : sql`(${sql(columns.source)} = ${scope.sourceId} and ${sql(column)} = ${scope.scopeId})`,
      ),
    );
  const visible = sql`${tenant} and ${inScopes(columns.scope)}`;
  if (columns.movedFrom === undefined) return visible;
  return sql`${visible} and (${sql(columns.movedFrom)} is null or ${inScopes(columns.movedFrom)})`;
}

/**
 * The same rule for rows about sources themselves (sources, their collectors, collection runs),
 * which belong to no single instance: a source is visible when one of the principal's scopes names
 * it (any instance of it, or all of it).
 */
export function sourcesVisibleTo(
  sql: Sql,
  principal: Principal,
  columns: { tenant: string; source: string },
): Fragment {
  const tenant = sql`${sql(columns.tenant)} = ${principal.tenantId}`;
  const scopes = dataScopesOf(principal);
  if (scopes === 'all') return tenant;
  const named = [...new Set(scopes.map((scope) => scope.sourceId).filter((id): id is string => id !== null))];
  return sql`${tenant} and ${sql(columns.source)} = any(${named}::bigint[])`;
}

/** An OpenSearch query clause (a JSON object of the query DSL). */
export type SearchClause = Record<string, unknown>;

/**
 * The same scope rule as `visibleTo`, for OpenSearch: filter clauses on the `tenant_id`,
 * `source_id` and `scope_id` keyword fields of the indexed documents, from the same principal.
 */
export function visibleToOpenSearch(principal: Principal): SearchClause[] {
  const tenant = { term: { tenant_id: principal.tenantId } };
  const held = dataScopesOf(principal);
  if (held === 'all') return [tenant];
  if (held.length === 0) return [tenant, { bool: { must_not: [{ match_all: {} }] } }];
  const inScopes = (field: 'scope_id' | 'moved_from_scope_id') =>
    held.map((scope) =>
      scope.scopeId === null
        ? { term: { source_id: scope.sourceId } }
        : { bool: { filter: [{ term: { source_id: scope.sourceId } }, { term: { [field]: scope.scopeId } }] } },
    );
  // a move's record also needs the instance the CI left (see ScopedColumns.movedFrom)
  const moveSeen = [
    { bool: { must_not: [{ exists: { field: 'moved_from_scope_id' } }] } },
    ...inScopes('moved_from_scope_id'),
  ];
  return [
    tenant,
    { bool: { should: inScopes('scope_id'), minimum_should_match: 1 } },
    { bool: { should: moveSeen, minimum_should_match: 1 } },
  ];
}
