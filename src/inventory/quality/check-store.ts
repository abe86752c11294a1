import type { Sql } from 'postgres';
import type { Fragment } from '../../platform/auth/scope.js';
import type { Expr } from '../../platform/query-language/ast.js';
import { staleAfterMinutes, type QualitySettings } from './settings.js';
import type { CheckPlan, PlannedPath, PlannedRelationship } from './plan.js';

/** Turns a standing match into its SQL condition on the CI row `row` (the queries service's compiler). */
export type CheckCompiler = (e: Expr, row: string) => Fragment;

/**
 * The CIs of `ids` as a FROM item `ci`, each found through its key: a check right after a bulk
 * load meets tables without statistics, and the planner would scan all of configuration_items for
 * every batch (a batch of 500 took 7 s at 1 000 000 CIs before `analyze`, 25 ms after).
 */
const byId = (sql: Sql, ids: readonly string[]): Fragment => sql`unnest(${ids as string[]}::uuid[]) as wanted(ci_id)
  join lateral (select * from configuration_items c where c.ci_id = wanted.ci_id offset 0) as ci on true`;

/** `case ci.ci_type when T1 then E1 … else fallback end`, or just the fallback when no type has one. */
function byType<T>(
  sql: Sql,
  entries: Iterable<[string, T]>,
  value: (item: T) => Fragment,
  fallback: Fragment,
  row = 'ci',
) {
  const arms = [...entries].map(([type, item]) => sql`when ${type}::text then ${value(item)}`);
  if (arms.length === 0) return fallback;
  return sql`(case ${sql(row)}.ci_type ${arms.reduce((a, b) => sql`${a} ${b}`)} else ${fallback} end)`;
}

/** The paths of `paths` the row lacks, as written, in order. */
function missing(sql: Sql, paths: readonly PlannedPath[], condition: CheckCompiler): Fragment {
  if (paths.length === 0) return sql`'{}'::text[]`;
  const items = paths.map((p) => sql`case when ${condition(p.exists, 'ci')} then null else ${p.path}::text end`);
  return sql`array_remove(array[${items.reduce((a, b) => sql`${a}, ${b}`)}]::text[], null)`;
}

/** Why the row lacks a relationship its type requires, or null. */
function requiredRelationship(sql: Sql, planned: PlannedRelationship, condition: CheckCompiler): Fragment {
  const { rule } = planned;
  const [near, far] = rule.direction === 'out' ? ['from_ci_id', 'to_ci_id'] : ['to_ci_id', 'from_ci_id'];
  const otherType = rule.other_type ? sql`and o.ci_type = ${rule.other_type}` : sql``;
  const reason =
    rule.direction === 'out'
      ? `no ${rule.relationship_type} relationship to an active ${rule.other_type ?? 'CI'}`
      : `no ${rule.relationship_type} relationship from an active ${rule.other_type ?? 'CI'}`;
  const when = planned.when ? condition(planned.when, 'ci') : sql`true`;
  return sql`case when coalesce(${when}, false) and not exists (
      select 1 from relationships r join configuration_items o on o.ci_id = r.${sql(far)} and o.status = 'active' ${otherType}
      where r.tenant_id = ci.tenant_id and r.${sql(near)} = ci.ci_id and r.relationship_type = ${rule.relationship_type})
    then ${reason}::text end`;
}

function orphan(sql: Sql, plan: CheckPlan, condition: CheckCompiler): Fragment {
  const required = byType(
    sql,
    plan.relationships,
    (planned) =>
      sql`coalesce(${planned.map((p) => requiredRelationship(sql, p, condition)).reduce((a, b) => sql`${a}, ${b}`)})`,
    sql`null::text`,
  );
  return sql`coalesce(
    ${required},
    (select 'its ' || p.relationship_type || ' reference to ' || p.target_external_id || ' does not resolve'
     from pending_relationships p where p.from_ci_id = ci.ci_id order by p.relationship_type, p.target_external_id limit 1),
    (select 'its ' || r.relationship_type || ' relationship leads to a CI that is no longer active'
     from relationships r left join configuration_items o on o.ci_id = r.to_ci_id
     where r.tenant_id = ci.tenant_id and r.from_ci_id = ci.ci_id and (o.ci_id is null or o.status <> 'active')
     order by r.relationship_type limit 1))`;
}

const DUPLICATE = (sql: Sql) => sql`coalesce(
    (select 'named by an open identity conflict (' || k.rule || ')' from identity_conflicts k
     where k.tenant_id = ci.tenant_id and k.status = 'open' and k.ci_ids @> array[ci.ci_id] order by k.raised_at limit 1),
    (select 'its source reports the same ' || o.kind || ' twice (with ' || other.ci_id || ')'
     from identity_observations o join identity_observations other
       on other.identity_id = o.identity_id and other.kind = o.kind and other.ci_id <> o.ci_id
      and other.source_id = o.source_id and other.role = 'self'
     where o.ci_id = ci.ci_id and o.role = 'self' order by other.ci_id limit 1))`;

/** A type's counts of required and recommended paths, and the staleness threshold, as SQL. */
function typeFigures(sql: Sql, plan: CheckPlan) {
  const count = (kind: 'required' | 'recommended') =>
    byType(sql, plan.completeness, (paths) => sql`${paths[kind].length}::int`, sql`0`);
  return {
    required: count('required'),
    recommended: count('recommended'),
    staleMinutes: staleMinutes(sql, plan.settings),
  };
}

/** The staleness threshold of the row's type, in minutes, as SQL (`row`: the alias holding ci_type). */
export function staleMinutes(sql: Sql, settings: QualitySettings, row = 'ci'): Fragment {
  return byType(
    sql,
    Object.keys(settings.stale_after_minutes.by_type).map(
      (type) => [type, staleAfterMinutes(settings, type)] as [string, number],
    ),
    (minutes) => sql`${minutes}::int`,
    sql`${settings.stale_after_minutes.default}::int`,
    row,
  );
}

function ownerOf(sql: Sql, plan: CheckPlan): Fragment {
  const { owner } = plan;
  if (owner.name === 'raw_data' || owner.name === 'type_data')
    return sql`(ci.${sql(owner.name)} #>> ${owner.path}::text[])`;
  return sql`ci.${sql(owner.name)}::text`;
}

/**
 * Checks the given CIs of one tenant again: a row in ci_quality for each active one, written only
 * when its verdict moved (the counters follow through ci_quality's triggers), none for the others;
 * then each rule's verdict on them. In the caller's transaction.
 */
export async function recheck(sql: Sql, plan: CheckPlan, ids: readonly string[], now: Date, condition: CheckCompiler) {
  if (ids.length === 0) return;
  const figures = typeFigures(sql, plan);
  const required = byType(sql, plan.completeness, (p) => missing(sql, p.required, condition), sql`'{}'::text[]`);
  const recommended = byType(sql, plan.completeness, (p) => missing(sql, p.recommended, condition), sql`'{}'::text[]`);
  const weight = plan.settings.required_weight;
  await sql`
    with target as (
      select ci.ci_id, ci.tenant_id, ci.source_id, ci.scope_id, ci.ci_type, ${ownerOf(sql, plan)} as owner,
             ${required} as missing, ${recommended} as missing_recommended,
             ${figures.required} as required_n, ${figures.recommended} as recommended_n,
             ${orphan(sql, plan, condition)} as orphan, ${DUPLICATE(sql)} as duplicate,
             ${figures.staleMinutes} as stale_minutes, l.last_seen, sl.listed_at
      from ${byId(sql, ids)}
      left join ci_last_seen l on l.ci_id = ci.ci_id
      left join quality_source_lists sl on sl.source_id = ci.source_id
      where ci.tenant_id = ${plan.tenantId} and ci.status = 'active'
    ), gone as (
      delete from ci_quality q using unnest(${ids as string[]}::uuid[]) as wanted(ci_id)
      where q.ci_id = wanted.ci_id and not exists (select 1 from target t where t.ci_id = q.ci_id)
    )
    insert into ci_quality (ci_id, tenant_id, source_id, scope_id, ci_type, owner, missing, missing_recommended,
                            completeness, orphan, duplicate, stale_since, unseen_since, checked_at)
    select ci_id, tenant_id, source_id, scope_id, ci_type, owner, missing, missing_recommended,
           case when required_n + recommended_n = 0 then 1
                when recommended_n = 0 then (required_n - cardinality(missing))::float8 / required_n
                when required_n = 0 then (recommended_n - cardinality(missing_recommended))::float8 / recommended_n
                else ${weight}::float8 * (required_n - cardinality(missing)) / required_n
                   + (1 - ${weight}::float8) * (recommended_n - cardinality(missing_recommended)) / recommended_n end,
           orphan, duplicate,
           case when last_seen < ${now}::timestamptz - make_interval(mins => stale_minutes)
                then last_seen + make_interval(mins => stale_minutes) end,
           case when last_seen < listed_at then last_seen end,
           ${now}
    from target
    on conflict (ci_id) do update set
      source_id = excluded.source_id, scope_id = excluded.scope_id, ci_type = excluded.ci_type, owner = excluded.owner,
      missing = excluded.missing, missing_recommended = excluded.missing_recommended,
      completeness = excluded.completeness, orphan = excluded.orphan, duplicate = excluded.duplicate,
      stale_since = excluded.stale_since, unseen_since = excluded.unseen_since, checked_at = excluded.checked_at
    where (ci_quality.source_id, ci_quality.scope_id, ci_quality.ci_type, ci_quality.owner, ci_quality.missing,
           ci_quality.missing_recommended, ci_quality.completeness, ci_quality.orphan, ci_quality.duplicate,
           ci_quality.stale_since, ci_quality.unseen_since)
      is distinct from (excluded.source_id, excluded.scope_id, excluded.ci_type, excluded.owner, excluded.missing,
           excluded.missing_recommended, excluded.completeness, excluded.orphan, excluded.duplicate,
           excluded.stale_since, excluded.unseen_since)`;
  await recheckRules(sql, plan, plan.rules, ids, condition);
}

/** Each of `rules`' verdicts on the given CIs: a result row where it applies, none where it does not. */
export async function recheckRules(
  sql: Sql,
  plan: CheckPlan,
  rules: CheckPlan['rules'],
  ids: readonly string[],
  condition: CheckCompiler,
) {
  const ruleIds = rules.map((rule) => rule.id);
  const verdicts =
    rules.length === 0
      ? sql`select null::uuid as rule_id, null::uuid as ci_id, null::bigint as source_id, null::text as scope_id,
                   null::text as ci_type, null::text as owner, false as passed where false`
      : sql`select v.rule_id, ci.ci_id, ci.source_id, ci.scope_id, ci.ci_type, ${ownerOf(sql, plan)} as owner, v.passed
            from ${byId(sql, ids)}
            cross join lateral (values ${rules
              .map(
                (rule) =>
                  sql`(${rule.id}::uuid, coalesce(${condition(rule.appliesTo, 'ci')}, false),
                       coalesce(${condition(rule.requires, 'ci')}, false))`,
              )
              .reduce((a, b) => sql`${a}, ${b}`)}) as v(rule_id, applies, passed)
            where ci.tenant_id = ${plan.tenantId} and ci.status = 'active' and v.applies`;
  await sql`
    with verdicts as (${verdicts}), dropped as (
      delete from ci_rule_results x using unnest(${ids as string[]}::uuid[]) as wanted(ci_id)
      where x.ci_id = wanted.ci_id
        and (x.rule_id = any(${ruleIds}::uuid[]) or ${rules.length === plan.rules.length})
        and not exists (select 1 from verdicts v where v.rule_id = x.rule_id and v.ci_id = x.ci_id)
    )
    insert into ci_rule_results (rule_id, ci_id, tenant_id, source_id, scope_id, ci_type, owner, passed)
    select rule_id, ci_id, ${plan.tenantId}, source_id, scope_id, ci_type, owner, passed from verdicts
    on conflict (rule_id, ci_id) do update set
      source_id = excluded.source_id, scope_id = excluded.scope_id, ci_type = excluded.ci_type,
      owner = excluded.owner, passed = excluded.passed
    where (ci_rule_results.source_id, ci_rule_results.scope_id, ci_rule_results.ci_type, ci_rule_results.owner,
           ci_rule_results.passed)
      is distinct from (excluded.source_id, excluded.scope_id, excluded.ci_type, excluded.owner, excluded.passed)`;
}
