import type { Sql } from 'postgres';
import type { Fragment } from '../../platform/auth/scope.js';

// The relationship rows as a FROM item: the one fragment the list, the walk and the query language's
// hops read relationships through (other features compose it into their own statements).

/**
 * The relationship rows: those that exist, or at a moment those that existed then (the ones that
 * still exist and had been collected by then, and the ended ones that spanned it, under the id
 * they had). `last_seen` is capped at the moment; `ended_at` is null on every row of those.
 *
 * `leftBehind` (now only) adds the relationships a CI had when it left the active inventory: the
 * last ended row of a pair that has no live row, when one of its ends is now inactive or archived
 * and was last seen no later than the relationship ended. A replica set collected without the pods
 * it just lost still leads to them; a pod that merely changed owners while it was running does not.
 */
export function edges(sql: Sql, asOf: string | undefined, options: { leftBehind?: boolean } = {}): Fragment {
  if (asOf === undefined) {
    const live = sql`
      select id, tenant_id, source_id, from_ci_id, to_ci_id, relationship_type, created_at, last_seen,
             from_scope_id, to_scope_id, null::timestamptz as ended_at
      from relationships`;
    if (!options.leftBehind) return sql`(${live})`;
    return sql`(${live}
    union all
    select h.relationship_id, h.tenant_id, h.source_id, h.from_ci_id, h.to_ci_id, h.relationship_type, h.valid_from, h.valid_to,
           h.from_scope_id, h.to_scope_id, h.valid_to
    from relationship_history h
    where not exists (
        select 1 from relationships l
        where l.tenant_id = h.tenant_id and l.from_ci_id = h.from_ci_id and l.to_ci_id = h.to_ci_id and l.relationship_type = h.relationship_type)
      and not exists (
        select 1 from relationship_history later
        where later.tenant_id = h.tenant_id and later.from_ci_id = h.from_ci_id and later.valid_to > h.valid_to
          and later.to_ci_id = h.to_ci_id and later.relationship_type = h.relationship_type)
      and exists (
        select 1 from configuration_items gone
        join ci_last_seen seen on seen.ci_id = gone.ci_id
        where gone.tenant_id = h.tenant_id and gone.ci_id in (h.from_ci_id, h.to_ci_id)
          and gone.status <> 'active' and seen.last_seen <= h.valid_to))`;
  }
  const at = sql`${asOf}::text::timestamptz`;
  return sql`(
    select id, tenant_id, source_id, from_ci_id, to_ci_id, relationship_type, created_at, least(last_seen, ${at}) as last_seen,
           from_scope_id, to_scope_id, null::timestamptz as ended_at
    from relationships where created_at <= ${at}
    union all
    select relationship_id, tenant_id, source_id, from_ci_id, to_ci_id, relationship_type, valid_from, least(valid_to, ${at}),
           from_scope_id, to_scope_id, null::timestamptz
    from relationship_history where valid_from <= ${at} and valid_to > ${at})`;
}
