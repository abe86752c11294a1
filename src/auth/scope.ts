import type { PendingQuery, Row, Sql } from 'postgres';
import type { Principal } from './principal.js';

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
  if (principal.superadmin || principal.scopes === 'all') return tenant;
  const scopeParts = principal.scopes.map((scope) =>
    scope.scopeId === null
      ? sql`${sql(columns.source)} = ${scope.sourceId}`
      : sql`(${sql(columns.source)} = ${scope.sourceId} and ${sql(columns.scope)} = ${scope.scopeId})`,
  );
  return sql`${tenant} and ${or(sql, scopeParts)}`;
}
