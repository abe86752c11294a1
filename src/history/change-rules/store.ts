import type { Sql } from 'postgres';
import type { Fragment } from '../../platform/auth/scope.js';
import { jsonText } from '../../platform/db/pipeline.js';
import { OUTBOX_TOPIC_CHANGE } from '../records/writer.js';

export type RuleAction = 'ignore' | 'classify' | 'rollup';

export interface RuleRow {
  id: string;
  name: string;
  match: string;
  action: RuleAction;
  kind: string | null;
  severity: string | null;
  position: number;
  created_at: Date;
  updated_at: Date;
}

export type RuleWrite = Pick<RuleRow, 'name' | 'match' | 'action' | 'kind' | 'severity'> & { position?: number };

const RULE_COLUMNS = (sql: Sql) => sql`id, name, match, action, kind, severity, position, created_at, updated_at`;

/** A tenant's rules in the order they apply. */
export function rulesOf(sql: Sql, tenantId: string): Promise<RuleRow[]> {
  return sql<RuleRow[]>`
    select ${RULE_COLUMNS(sql)} from change_rules where tenant_id = ${tenantId} order by position, created_at, id`;
}

export async function ruleById(sql: Sql, tenantId: string, id: string): Promise<RuleRow | undefined> {
  const [row] = await sql<RuleRow[]>`
    select ${RULE_COLUMNS(sql)} from change_rules where tenant_id = ${tenantId} and id = ${id}`;
  return row;
}

/** A new rule, last unless a position is given; false when the name is taken. */
export async function insertRule(sql: Sql, tenantId: string, id: string, rule: RuleWrite, now: Date): Promise<boolean> {
  const rows = await sql`
    insert into change_rules (id, tenant_id, name, match, action, kind, severity, position, created_at, updated_at)
    values (${id}, ${tenantId}, ${rule.name}, ${rule.match}, ${rule.action}, ${rule.kind}, ${rule.severity},
            coalesce(${rule.position ?? null}::int, (select coalesce(max(position), 0) + 1 from change_rules where tenant_id = ${tenantId})),
            ${now}, ${now})
    on conflict (tenant_id, name) do nothing
    returning 1`;
  return rows.length > 0;
}

/** Rewrites a rule: undefined when there is none, 'taken' when another rule has the name. */
export async function updateRule(
  sql: Sql,
  tenantId: string,
  id: string,
  rule: RuleWrite,
  now: Date,
): Promise<'updated' | 'taken' | undefined> {
  const [clash] =
    await sql`select 1 from change_rules where tenant_id = ${tenantId} and name = ${rule.name} and id <> ${id}`;
  if (clash) return 'taken';
  const rows = await sql`
    update change_rules set name = ${rule.name}, match = ${rule.match}, action = ${rule.action}, kind = ${rule.kind},
           severity = ${rule.severity}, position = coalesce(${rule.position ?? null}::int, position), updated_at = ${now}
    where tenant_id = ${tenantId} and id = ${id}
    returning 1`;
  return rows.length > 0 ? 'updated' : undefined;
}

export async function deleteRule(sql: Sql, tenantId: string, id: string): Promise<RuleRow | undefined> {
  const [row] = await sql<RuleRow[]>`
    delete from change_rules where tenant_id = ${tenantId} and id = ${id} returning ${RULE_COLUMNS(sql)}`;
  return row;
}

/** The compiled effect of a tenant's rules on one record: each a condition over `cr` and `ci`. */
export interface CompiledRules {
  ignore: Fragment[];
  kinds: { when: Fragment; kind: string }[];
  severities: { when: Fragment; severity: string }[];
  rollups: Fragment[];
}

/** The CI a record is of, as it is now or as it was when removed, with configuration_items' columns. */
const ciOf = (sql: Sql) => sql`
  left join lateral (
    select c.* from configuration_items c where c.ci_id = cr.ci_id and c.tenant_id = cr.tenant_id
    union all
    select t.ci_id, t.tenant_id, t.source_id, t.scope_id, t.external_id, t.ci_type, t.name, t.namespace, t.status,
           t.status_updated_at, t.raw_data, t.type_data, null, t.created_at, t.updated_at
    from ci_tombstones t where t.ci_id = cr.ci_id and t.tenant_id = cr.tenant_id
    limit 1
  ) ci on true`;

/** The last matching rule's value wins: the cases are tried from the last rule back. */
function lastOf<T extends { when: Fragment }>(
  sql: Sql,
  items: T[],
  value: (item: T) => string,
  otherwise: Fragment,
): Fragment {
  if (items.length === 0) return otherwise;
  const cases = [...items].reverse().map((item) => sql`when ${item.when} then ${value(item)}::text`);
  return sql`case ${cases.reduce((a, b) => sql`${a} ${b}`)} else ${otherwise} end`;
}

const anyOf = (sql: Sql, conditions: Fragment[]) =>
  conditions.length === 0 ? sql`false` : sql`(${conditions.reduce((a, b) => sql`${a} or ${b}`)})`;

export interface Shipped {
  id: string;
  changed_at: string;
  kind: string;
  severity: string;
  rolls_up: boolean;
}

export interface Reshaped {
  id: string;
  changed_at: string;
  tenant_id: string;
  source_id: string | null;
  scope_id: string | null;
  moved_from_scope_id: string | null;
  counted: boolean;
  queued: boolean;
  old_kind: string | null;
  kind: string;
}

/**
 * Sets kind, severity, ignored and rolls_up of the given records from their base (the shipped
 * rules' verdicts: the columns as written, or `shipped` when re-applying) and the rules. Only
 * records whose values move are written; they are returned, with whether the statistics queue
 * still holds them.
 */
export async function reshape(
  sql: Sql,
  tenantId: string,
  rules: CompiledRules,
  records: { ids: readonly string[] } | { shipped: readonly Shipped[] },
): Promise<Reshaped[]> {
  const fromShipped = 'shipped' in records;
  const source = fromShipped
    ? sql`from jsonb_to_recordset(${jsonText(records.shipped)}::text::jsonb)
            as s(id bigint, changed_at timestamptz, kind text, severity text, rolls_up boolean)
          join change_records cr on cr.id = s.id and cr.changed_at = s.changed_at and cr.tenant_id = ${tenantId}
          ${ciOf(sql)}`
    : sql`from change_records cr ${ciOf(sql)}
          where cr.tenant_id = ${tenantId} and cr.id = any(${records.ids as string[]}::bigint[])`;
  const b = sql(fromShipped ? 's' : 'cr');
  return sql<Reshaped[]>`
    with judged as (
      select cr.id, cr.changed_at,
             ${lastOf(sql, rules.kinds, (k) => k.kind, sql`${b}.kind`)} as kind,
             ${lastOf(sql, rules.severities, (k) => k.severity, sql`${b}.severity`)} as severity,
             ${anyOf(sql, rules.ignore)} as ignored,
             ${b}.rolls_up or ${anyOf(sql, rules.rollups)} as rolls_up
      ${source}
    ), moved as (
      update change_records cr
      set kind = j.kind, severity = j.severity, ignored = j.ignored, rolls_up = j.rolls_up
      from judged j
      where cr.id = j.id and cr.changed_at = j.changed_at
        and (cr.kind, cr.severity, cr.ignored, cr.rolls_up) is distinct from (j.kind, j.severity, j.ignored, j.rolls_up)
      returning cr.id, cr.changed_at, cr.tenant_id, cr.source_id, cr.scope_id, cr.moved_from_scope_id, cr.changes <> '[]'::jsonb as counted,
                cr.kind
    )
    select m.id::text, to_char(m.changed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as changed_at, m.tenant_id,
           m.source_id::text, m.scope_id, m.moved_from_scope_id, m.counted, m.kind,
           exists (select 1 from change_stats_queue q where q.change_id = m.id) as queued,
           (select o.kind from change_records o where o.id = m.id and o.changed_at = m.changed_at) as old_kind
    from moved m`;
}

/**
 * Moves the statistics by kind for re-shaped records already counted (the queue counts the rest
 * with their kind when it gets to them), and queues them for the search index again.
 */
export async function recount(sql: Sql, moved: readonly Reshaped[]): Promise<void> {
  const counted = moved.filter((m) => m.counted && !m.queued && m.old_kind !== m.kind);
  if (counted.length > 0)
    await sql`
      insert into change_stats_kinds (tenant_id, source_id, scope_id, moved_from_scope_id, day, kind, changes)
      select tenant_id, source_id, scope_id, moved_from_scope_id, date_trunc('day', changed_at, 'UTC'), kind, sum(delta)
      from (
        select m.tenant_id, m.source_id, m.scope_id, m.moved_from_scope_id, m.changed_at, coalesce(m.old_kind, 'other') as kind, -1 as delta
        from jsonb_to_recordset(${jsonText(counted)}::text::jsonb) as m(tenant_id uuid, source_id bigint, scope_id text,
             moved_from_scope_id text, changed_at timestamptz, old_kind text, kind text)
        where m.old_kind is not null
        union all
        select m.tenant_id, m.source_id, m.scope_id, m.moved_from_scope_id, m.changed_at, m.kind, 1
        from jsonb_to_recordset(${jsonText(counted)}::text::jsonb) as m(tenant_id uuid, source_id bigint, scope_id text,
             moved_from_scope_id text, changed_at timestamptz, old_kind text, kind text)
      ) d
      group by 1, 2, 3, 4, 5, 6
      on conflict (tenant_id, day, source_id, scope_id, moved_from_scope_id, kind)
        do update set changes = change_stats_kinds.changes + excluded.changes`;
  if (moved.length > 0)
    await sql`
      insert into outbox (tenant_id, topic, aggregate_id, payload)
      select m.tenant_id, ${OUTBOX_TOPIC_CHANGE}, m.id, jsonb_build_object('change_id', m.id, 'reshaped', true)
      from jsonb_to_recordset(${jsonText(moved)}::text::jsonb) as m(tenant_id uuid, id text)`;
}
