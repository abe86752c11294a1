import type { Sql } from '../../src/platform/db/database.js';

/**
 * The counts (folded and not) per key, and the CIs counted directly: they must be equal, with the
 * namespace (ci_counts) and without it (ci_type_counts).
 */
export async function countsAgainstTable(sql: Sql): Promise<{ kept: unknown; counted: unknown }> {
  const [namespaces, types, counted, countedTypes] = await Promise.all([
    sql`
      select tenant_id, source_id::text, scope_id, status, ci_type, namespace, sum(n)::int as cis from (
        select tenant_id, source_id, scope_id, status, ci_type, namespace, cis as n from ci_counts
        union all
        select tenant_id, source_id, scope_id, status, ci_type, namespace, delta from ci_count_deltas
      ) c group by 1, 2, 3, 4, 5, 6 having sum(n) <> 0 order by 2, 3, 4, 5, 6`,
    sql`
      select tenant_id, source_id::text, scope_id, status, ci_type, sum(n)::int as cis from (
        select tenant_id, source_id, scope_id, status, ci_type, cis as n from ci_type_counts
        union all
        select tenant_id, source_id, scope_id, status, ci_type, delta from ci_count_deltas
      ) c group by 1, 2, 3, 4, 5 having sum(n) <> 0 order by 2, 3, 4, 5`,
    sql`
      select tenant_id, source_id::text, scope_id, status, ci_type, namespace, count(*)::int as cis
      from configuration_items group by 1, 2, 3, 4, 5, 6 order by 2, 3, 4, 5, 6`,
    sql`
      select tenant_id, source_id::text, scope_id, status, ci_type, count(*)::int as cis
      from configuration_items group by 1, 2, 3, 4, 5 order by 2, 3, 4, 5`,
  ]);
  return {
    kept: { namespaces: [...namespaces], types: [...types] },
    counted: { namespaces: [...counted], types: [...countedTypes] },
  };
}
