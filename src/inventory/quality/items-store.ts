import type { Sql } from 'postgres';
import type { Principal } from '../../platform/auth/principal.js';
import { columnsOf, visibleTo, type Fragment } from '../../platform/auth/scope.js';
import { narrowed, type CountFilters } from './counts-store.js';
import type { Measure } from './settings.js';

export interface FailingRow {
  ci_id: string;
  name: string;
  ci_type: string;
  namespace: string | null;
  source_id: string;
  scope_id: string | null;
  owner: string | null;
  reason: string;
  since: Date | null;
  rule_id: string | null;
}

export interface ItemsPage {
  filters: CountFilters;
  /** Sources past their schedule: all their CIs are unfresh. */
  lateSources: readonly string[];
  ruleId?: string;
  after?: { ciId: string; ruleId: string | null };
  limit: number;
}

const NO_RULE = '00000000-0000-0000-0000-000000000000';

/** The failing rows of a measure of ci_quality, as (ci_id, reason, since), walked by ci_id. */
function measureRows(sql: Sql, measure: Exclude<Measure, 'rules' | 'freshness'>, where: Fragment, page: ItemsPage) {
  const after = page.after ? sql`and q.ci_id > ${page.after.ciId}::uuid` : sql``;
  const verdicts: Record<typeof measure, [Fragment, Fragment, Fragment]> = {
    completeness: [sql`q.missing <> '{}'`, sql`'missing ' || array_to_string(q.missing, ', ')`, sql`null::timestamptz`],
    orphans: [sql`q.orphan is not null`, sql`q.orphan`, sql`null::timestamptz`],
    duplicates: [sql`q.duplicate is not null`, sql`q.duplicate`, sql`null::timestamptz`],
    staleness: [
      sql`q.stale_since is not null`,
      sql`'stale since ' || to_char(q.stale_since at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ': not seen for longer than its type allows'`,
      sql`q.stale_since`,
    ],
  };
  const [failing, reason, since] = verdicts[measure];
  return sql`
    select q.ci_id, q.source_id, q.scope_id, q.ci_type, q.owner, ${reason} as reason, ${since} as since, null::uuid as rule_id
    from ci_quality q where ${failing} and ${where} ${after}
    order by q.ci_id limit ${page.limit + 1}`;
}

/** Unfresh: every CI of a late source, and the CIs the last list of an on-time source did not see. */
function freshnessRows(sql: Sql, where: Fragment, page: ItemsPage) {
  const after = page.after ? sql`and q.ci_id > ${page.after.ciId}::uuid` : sql``;
  const late = page.lateSources as string[];
  return sql`
    select * from (
      (select q.ci_id, q.source_id, q.scope_id, q.ci_type, q.owner,
              'its source is past its schedule' as reason, null::timestamptz as since, null::uuid as rule_id
       from unnest(${late}::bigint[]) as s(id)
       cross join lateral (
         select * from ci_quality q where q.source_id = s.id and ${where} ${after} order by q.ci_id limit ${page.limit + 1}
       ) q)
      union
      (select q.ci_id, q.source_id, q.scope_id, q.ci_type, q.owner,
              'not seen by its source''s last successful list (last seen ' ||
              to_char(q.unseen_since at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ')',
              q.unseen_since, null::uuid
       from ci_quality q where q.unseen_since is not null and not (q.source_id = any(${late}::bigint[])) and ${where} ${after}
       order by q.ci_id limit ${page.limit + 1})
    ) unfresh order by ci_id limit ${page.limit + 1}`;
}

/** Failed rule results, by (ci_id, rule_id): of one rule, or of all. */
function ruleRows(sql: Sql, where: Fragment, page: ItemsPage) {
  const after = page.after
    ? sql`and (q.ci_id, q.rule_id) > (${page.after.ciId}::uuid, ${page.after.ruleId ?? NO_RULE}::uuid)`
    : sql``;
  const rule = page.ruleId ? sql`and q.rule_id = ${page.ruleId}::uuid` : sql``;
  return sql`
    select q.ci_id, q.source_id, q.scope_id, q.ci_type, q.owner, 'fails rule ' || r.name as reason,
           null::timestamptz as since, q.rule_id
    from ci_rule_results q join quality_rules r on r.id = q.rule_id
    where not q.passed ${rule} and ${where} ${after}
    order by q.ci_id, q.rule_id limit ${page.limit + 1}`;
}

/** A page of the CIs failing a measure that the principal may see, with why, walked by ci_id. */
export async function failingPage(sql: Sql, principal: Principal, measure: Measure, page: ItemsPage) {
  const where = narrowed(sql, principal, page.filters);
  const rows =
    measure === 'rules'
      ? ruleRows(sql, where, page)
      : measure === 'freshness'
        ? freshnessRows(sql, where, page)
        : measureRows(sql, measure, where, page);
  return sql<FailingRow[]>`
    select f.ci_id, c.name, f.ci_type, c.namespace, f.source_id::text, f.scope_id, f.owner, f.reason, f.since, f.rule_id
    from (${rows}) f join configuration_items c on c.ci_id = f.ci_id
    order by f.ci_id, f.rule_id`;
}

export interface CiQualityRow {
  ci_id: string;
  owner: string | null;
  missing: string[];
  missing_recommended: string[];
  completeness: number;
  orphan: string | null;
  duplicate: string | null;
  stale_since: Date | null;
  unseen_since: Date | null;
  checked_at: Date;
  source_id: string;
}

/** One CI's verdicts, if the principal may see it and it is checked. */
export async function ciQuality(sql: Sql, principal: Principal, ciId: string) {
  const [row] = await sql<CiQualityRow[]>`
    select q.ci_id, q.owner, q.missing, q.missing_recommended, q.completeness, q.orphan, q.duplicate, q.stale_since,
           q.unseen_since, q.checked_at, q.source_id::text
    from ci_quality q where q.ci_id = ${ciId} and ${visibleTo(sql, principal, columnsOf('q'))}`;
  const rules = await sql<{ rule_id: string; name: string; passed: boolean }[]>`
    select q.rule_id, r.name, q.passed from ci_rule_results q join quality_rules r on r.id = q.rule_id
    where q.ci_id = ${ciId} and ${visibleTo(sql, principal, columnsOf('q'))} order by r.name`;
  return row ? { row, rules } : undefined;
}

/** Whether the principal may see the CI, whatever its status. */
export async function ciVisible(sql: Sql, principal: Principal, ciId: string): Promise<boolean> {
  const [row] = await sql`
    select 1 from configuration_items c where c.ci_id = ${ciId} and ${visibleTo(sql, principal, columnsOf('c'))}`;
  return row !== undefined;
}
