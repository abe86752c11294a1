import type { Sql } from 'postgres';
import type { Principal } from '../../platform/auth/principal.js';
import { and, columnsOf, visibleTo, type Fragment } from '../../platform/auth/scope.js';
import type { Queryable } from '../../platform/db/database.js';

// Any constant works as long as every cinv process uses the same one.
const FOLD_LOCK = 0x63697179;

export type Counted = 'cis' | 'incomplete' | 'completeness' | 'orphans' | 'duplicates' | 'stale' | 'unseen';

export interface CountRow extends Record<Counted, number> {
  source_id: string;
  scope_id: string | null;
  ci_type: string;
  owner: string | null;
}

export interface RuleCountRow {
  rule_id: string;
  source_id: string;
  scope_id: string | null;
  ci_type: string;
  owner: string | null;
  applies: number;
  passes: number;
}

export interface CountFilters {
  ciType?: string;
  sourceId?: string;
  owner?: string;
}

/** What the principal may see of the quality rows under alias `q` (ci_quality, its counters, rule results), filtered. */
export function narrowed(sql: Sql, principal: Principal, filters: CountFilters): Fragment {
  return and(sql, [
    visibleTo(sql, principal, columnsOf('q')),
    filters.ciType === undefined ? sql`true` : sql`q.ci_type = ${filters.ciType}`,
    filters.sourceId === undefined ? sql`true` : sql`q.source_id = ${filters.sourceId}::bigint`,
    filters.owner === undefined ? sql`true` : sql`q.owner = ${filters.owner}`,
  ]);
}

/**
 * The counters the principal may see, per source, instance, type and owner: the folded counts and
 * the deltas since, summed. A few rows per group, whatever the inventory's size.
 */
export async function qualityCounts(sql: Sql, principal: Principal, filters: CountFilters): Promise<CountRow[]> {
  const where = narrowed(sql, principal, filters);
  return sql<CountRow[]>`
    select source_id::text, scope_id, ci_type, owner, sum(cis)::float8 as cis, sum(incomplete)::float8 as incomplete,
           sum(completeness)::float8 as completeness, sum(orphans)::float8 as orphans,
           sum(duplicates)::float8 as duplicates, sum(stale)::float8 as stale, sum(unseen)::float8 as unseen
    from (
      select source_id, scope_id, ci_type, owner, cis, incomplete, completeness, orphans, duplicates, stale, unseen
      from quality_counts q where ${where}
      union all
      select source_id, scope_id, ci_type, owner, cis, incomplete, completeness, orphans, duplicates, stale, unseen
      from quality_count_deltas q where ${where}
    ) counted
    group by 1, 2, 3, 4 having sum(cis) <> 0`;
}

/** The rules' counters the principal may see, as qualityCounts. */
export async function ruleCounts(sql: Sql, principal: Principal, filters: CountFilters): Promise<RuleCountRow[]> {
  // a deleted rule's counts went with it; deltas its results left on the way out do not count
  const where = and(sql, [
    narrowed(sql, principal, filters),
    sql`exists (select 1 from quality_rules r where r.id = q.rule_id)`,
  ]);
  return sql<RuleCountRow[]>`
    select rule_id, source_id::text, scope_id, ci_type, owner, sum(applies)::float8 as applies,
           sum(passes)::float8 as passes
    from (
      select rule_id, source_id, scope_id, ci_type, owner, applies, passes from quality_rule_counts q where ${where}
      union all
      select rule_id, source_id, scope_id, ci_type, owner, applies, passes from quality_rule_deltas q where ${where}
    ) counted
    group by 1, 2, 3, 4, 5 having sum(applies) <> 0`;
}

/** Adds the deltas written since the last fold into the counters; replicas folding at once take turns. */
export async function foldQualityCounts(sql: Queryable): Promise<number> {
  return (sql as Sql).begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${FOLD_LOCK})`;
    const [row] = await tx<{ deltas: number }[]>`
      with folded as (
        delete from quality_count_deltas
        returning tenant_id, source_id, scope_id, ci_type, owner, cis, incomplete, completeness, orphans, duplicates, stale, unseen
      ), summed as (
        insert into quality_counts (tenant_id, source_id, scope_id, ci_type, owner, cis, incomplete, completeness,
                                    orphans, duplicates, stale, unseen)
        select tenant_id, source_id, scope_id, ci_type, owner, sum(cis), sum(incomplete), sum(completeness),
               sum(orphans), sum(duplicates), sum(stale), sum(unseen)
        from folded group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5
        on conflict (tenant_id, source_id, scope_id, ci_type, owner) do update set
          cis = quality_counts.cis + excluded.cis, incomplete = quality_counts.incomplete + excluded.incomplete,
          completeness = quality_counts.completeness + excluded.completeness,
          orphans = quality_counts.orphans + excluded.orphans, duplicates = quality_counts.duplicates + excluded.duplicates,
          stale = quality_counts.stale + excluded.stale, unseen = quality_counts.unseen + excluded.unseen
      )
      select count(*)::int as deltas from folded`;
    const [rules] = await tx<{ deltas: number }[]>`
      with folded as (
        delete from quality_rule_deltas
        returning rule_id, tenant_id, source_id, scope_id, ci_type, owner, applies, passes
      ), summed as (
        insert into quality_rule_counts (rule_id, tenant_id, source_id, scope_id, ci_type, owner, applies, passes)
        select rule_id, tenant_id, source_id, scope_id, ci_type, owner, sum(applies), sum(passes)
        from folded where exists (select 1 from quality_rules r where r.id = folded.rule_id)
        group by 1, 2, 3, 4, 5, 6 order by 1, 2, 3, 4, 5, 6
        on conflict (rule_id, source_id, scope_id, ci_type, owner) do update set
          applies = quality_rule_counts.applies + excluded.applies, passes = quality_rule_counts.passes + excluded.passes
      )
      select count(*)::int as deltas from folded`;
    // a completeness sum left by float rounding on a group that holds no CI any more is no group
    await tx`delete from quality_counts where cis = 0`;
    await tx`delete from quality_rule_counts where applies = 0`;
    return (row?.deltas ?? 0) + (rules?.deltas ?? 0);
  });
}

/** The counters of a tenant recounted from its ci_quality and ci_rule_results rows, per group. */
export async function countedFromRows(sql: Queryable, tenantId: string) {
  const cis = await sql<CountRow[]>`
    select source_id::text, scope_id, ci_type, owner, count(*)::float8 as cis,
           count(*) filter (where missing <> '{}')::float8 as incomplete, sum(completeness)::float8 as completeness,
           count(orphan)::float8 as orphans, count(duplicate)::float8 as duplicates,
           count(stale_since)::float8 as stale, count(unseen_since)::float8 as unseen
    from ci_quality where tenant_id = ${tenantId} group by 1, 2, 3, 4`;
  const rules = await sql<RuleCountRow[]>`
    select rule_id, source_id::text, scope_id, ci_type, owner, count(*)::float8 as applies,
           count(*) filter (where passed)::float8 as passes
    from ci_rule_results where tenant_id = ${tenantId} group by 1, 2, 3, 4, 5`;
  return { cis, rules };
}

/** Replaces a tenant's counters with those counted from its rows (`cinv quality recount --fix`). */
export async function replaceCounters(sql: Sql, tenantId: string): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${FOLD_LOCK})`;
    await tx`delete from quality_count_deltas where tenant_id = ${tenantId}`;
    await tx`delete from quality_counts where tenant_id = ${tenantId}`;
    await tx`
      insert into quality_counts (tenant_id, source_id, scope_id, ci_type, owner, cis, incomplete, completeness,
                                  orphans, duplicates, stale, unseen)
      select tenant_id, source_id, scope_id, ci_type, owner, count(*), count(*) filter (where missing <> '{}'),
             sum(completeness), count(orphan), count(duplicate), count(stale_since), count(unseen_since)
      from ci_quality where tenant_id = ${tenantId} group by 1, 2, 3, 4, 5`;
    await tx`delete from quality_rule_deltas where tenant_id = ${tenantId}`;
    await tx`delete from quality_rule_counts where tenant_id = ${tenantId}`;
    await tx`
      insert into quality_rule_counts (rule_id, tenant_id, source_id, scope_id, ci_type, owner, applies, passes)
      select rule_id, tenant_id, source_id, scope_id, ci_type, owner, count(*), count(*) filter (where passed)
      from ci_rule_results where tenant_id = ${tenantId} group by 1, 2, 3, 4, 5, 6`;
  });
}
