import type { Sql } from 'postgres';
import type { Principal } from '../../platform/auth/principal.js';
import { and, columnsOf, visibleTo } from '../../platform/auth/scope.js';
import type { Queryable } from '../../platform/db/database.js';
import { compileFilters, type ParsedFilter } from '../../platform/query/filters.js';

// Any constant works as long as every cinv process uses the same one.
const FOLD_LOCK = 0x63696e79;

/**
 * The CI columns the counts are kept by (sql/0029): a filter on them is answered from the counts.
 * ci_counts keeps them all; ci_type_counts (sql/0030) all but the namespace, in far fewer rows.
 */
const COUNTED = new Set(['status', 'ci_type', 'namespace', 'scope_id']);

/** Filters the CI counts can answer: on the columns they are kept by, with any operator but text matching. */
export function countable(filters: readonly ParsedFilter[]): boolean {
  return filters.every(
    (filter) =>
      filter.target === 'column' && COUNTED.has(filter.field) && !['like', 'ilike', 'startswith'].includes(filter.op),
  );
}

/**
 * The number of CIs with the given statuses and filters (see `countable`) that the principal may
 * see, from the counts and the deltas not folded in yet: exact, and read from a few rows per
 * instance, type and namespace whatever the inventory's size.
 */
export async function countCis(
  sql: Sql,
  principal: Principal,
  statuses: readonly string[] | 'any',
  filters: readonly ParsedFilter[],
): Promise<number> {
  // the counts have the CI's status, type, namespace and instance columns under the same names:
  // aliased `ci`, the scope builder and the filter compiler apply to them as to the CIs themselves
  const where = and(sql, [
    visibleTo(sql, principal, columnsOf('ci')),
    statuses === 'any' ? sql`true` : sql`ci.status = any(${statuses as string[]}::text[])`,
    ...compileFilters(sql, filters),
  ]);
  const counts = filters.some((filter) => filter.field === 'namespace') ? sql`ci_counts` : sql`ci_type_counts`;
  const [row] = await sql<{ total: string }[]>`
    select coalesce(sum(n), 0)::bigint as total from (
      select ci.cis as n from ${counts} ci where ${where}
      union all
      select ci.delta from ci_count_deltas ci where ${where}
    ) counted`;
  return Number(row?.total ?? 0);
}

/**
 * Adds the deltas written since the last fold into both counts (with and without the namespace);
 * replicas folding at once take turns.
 */
export async function foldCiCounts(sql: Queryable): Promise<number> {
  const folded = await (sql as Sql).begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${FOLD_LOCK})`;
    const [row] = await tx<{ deltas: number }[]>`
      with folded as (
        delete from ci_count_deltas returning tenant_id, source_id, scope_id, status, ci_type, namespace, delta
      ), summed as (
        insert into ci_counts (tenant_id, source_id, scope_id, status, ci_type, namespace, cis)
        select tenant_id, source_id, scope_id, status, ci_type, namespace, sum(delta) from folded
        group by 1, 2, 3, 4, 5, 6 order by 1, 4, 5, 2, 3, 6
        on conflict (tenant_id, status, ci_type, source_id, scope_id, namespace) do update set cis = ci_counts.cis + excluded.cis
      ), by_type as (
        insert into ci_type_counts (tenant_id, source_id, scope_id, status, ci_type, cis)
        select tenant_id, source_id, scope_id, status, ci_type, sum(delta) from folded
        group by 1, 2, 3, 4, 5 order by 1, 4, 5, 2, 3
        on conflict (tenant_id, status, ci_type, source_id, scope_id) do update set cis = ci_type_counts.cis + excluded.cis
      )
      select count(*)::int as deltas from folded`;
    await tx`delete from ci_counts where cis = 0`;
    await tx`delete from ci_type_counts where cis = 0`;
    return row?.deltas ?? 0;
  });
  return folded;
}
