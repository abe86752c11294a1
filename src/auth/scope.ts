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
}

export const columnsOf = (alias: string): ScopedColumns => ({
  tenant: `${alias}.tenant_id`,
  source: `${alias}.source_id`,
  scope: `${alias}.scope_id`,
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
  const scopeParts = scopes.map((scope) =>
    scope.scopeId === null
      ? sql`${sql(columns.source)} = ${scope.sourceId}`
      : sql`(${sql(columns.source)} = ${scope.sourceId} and ${sql(columns.scope)} = ${scope.scopeId})`,
  );
  return sql`${tenant} and ${or(sql, scopeParts)}`;
}

/**
 * The same rule for rows about sources themselves (sources, their collectors, collection runs),
 * which belong to no single instance: a source is visible when one of the principal's scopes names
 * it (any instance of it, or all of it).
 */
export function sourcesVisibleTo(sql: Sql, principal: Principal, columns: { tenant: string; source: string }): Fragment {
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
  const scopes = held.map((scope) =>
    scope.scopeId === null
      ? { term: { source_id: scope.sourceId } }
      : { bool: { filter: [{ term: { source_id: scope.sourceId } }, { term: { scope_id: scope.scopeId } }] } },
  );
  return [tenant, { bool: { should: scopes, minimum_should_match: 1 } }];
}
