import type { Sql } from 'postgres';
import type { Queryable } from '../../platform/db/database.js';
import { asJson } from '../../platform/db/database.js';
import type { QualitySettings } from './settings.js';

const NO_CI = '00000000-0000-0000-0000-000000000000';

export interface RuleRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string | null;
  applies_to: string;
  requires: string;
  created_by: { kind: string; id: string; name: string };
  created_at: Date;
  updated_at: Date;
  /** Where the rule's first check over the stored CIs is, or null once done. */
  walk_after: string | null;
}

export async function storedSettings(sql: Queryable, tenantId: string): Promise<Partial<QualitySettings> | undefined> {
  const [row] = await sql<{ settings: Partial<QualitySettings> }[]>`
    select settings from quality_settings where tenant_id = ${tenantId}`;
  return row?.settings;
}

export async function saveSettings(sql: Queryable, tenantId: string, settings: QualitySettings, now: Date) {
  await sql`
    insert into quality_settings (tenant_id, settings, updated_at)
    values (${tenantId}, ${(sql as Sql).json(asJson(settings))}, ${now})
    on conflict (tenant_id) do update set settings = excluded.settings, updated_at = excluded.updated_at`;
}

const RULE_COLUMNS = (sql: Queryable) => (sql as Sql)`
  r.id, r.tenant_id, r.name, r.description, r.applies_to, r.requires, r.created_by, r.created_at, r.updated_at,
  (select w.after_ci from quality_walks w where w.tenant_id = r.tenant_id and w.rule_id = r.id) as walk_after`;

export async function rulesOf(sql: Queryable, tenantId: string): Promise<RuleRow[]> {
  return sql<RuleRow[]>`
    select ${RULE_COLUMNS(sql)} from quality_rules r where r.tenant_id = ${tenantId} order by r.created_at, r.id`;
}

export async function ruleById(sql: Queryable, tenantId: string, id: string): Promise<RuleRow | undefined> {
  const [row] = await sql<RuleRow[]>`
    select ${RULE_COLUMNS(sql)} from quality_rules r where r.tenant_id = ${tenantId} and r.id = ${id}`;
  return row;
}

export interface RuleWrite {
  name: string;
  description: string | null;
  applies_to: string;
  requires: string;
}

/** Inserts a rule; false when the tenant has one of that name already. */
export async function insertRule(
  sql: Queryable,
  id: string,
  tenantId: string,
  rule: RuleWrite,
  createdBy: unknown,
  now: Date,
): Promise<boolean> {
  const rows = await sql`
    insert into quality_rules (id, tenant_id, name, description, applies_to, requires, created_by, created_at, updated_at)
    values (${id}, ${tenantId}, ${rule.name}, ${rule.description}, ${rule.applies_to}, ${rule.requires},
            ${(sql as Sql).json(asJson(createdBy))}, ${now}, ${now})
    on conflict do nothing returning id`;
  return rows.length > 0;
}

/** Rewrites a rule; undefined when it does not exist, 'taken' when its new name is another's. */
export async function updateRule(
  sql: Queryable,
  tenantId: string,
  id: string,
  rule: RuleWrite,
  now: Date,
): Promise<'updated' | 'taken' | undefined> {
  const [taken] = await sql`
    select 1 from quality_rules where tenant_id = ${tenantId} and lower(name) = lower(${rule.name}) and id <> ${id}`;
  if (taken) return 'taken';
  const rows = await sql`
    update quality_rules set name = ${rule.name}, description = ${rule.description}, applies_to = ${rule.applies_to},
      requires = ${rule.requires}, updated_at = ${now}
    where tenant_id = ${tenantId} and id = ${id} returning id`;
  return rows.length > 0 ? 'updated' : undefined;
}

export async function deleteRule(sql: Queryable, tenantId: string, id: string): Promise<boolean> {
  await sql`delete from quality_walks where tenant_id = ${tenantId} and rule_id = ${id}`;
  const rows = await sql`delete from quality_rules where tenant_id = ${tenantId} and id = ${id} returning id`;
  // its counts went by cascade; the deltas of its results, removed with it, would be counted against nothing
  await sql`delete from quality_rule_deltas where tenant_id = ${tenantId} and rule_id = ${id}`;
  return rows.length > 0;
}

/** Starts (or starts again) a walk over the tenant's stored CIs: the whole check, or one rule's. */
export async function startWalk(sql: Queryable, tenantId: string, ruleId: string | null, now: Date): Promise<void> {
  await sql`
    insert into quality_walks (tenant_id, rule_id, after_ci, started_at) values (${tenantId}, ${ruleId}, ${NO_CI}, ${now})
    on conflict (tenant_id, rule_id) do update set after_ci = excluded.after_ci, started_at = excluded.started_at`;
}

export interface Walk {
  tenant_id: string;
  rule_id: string | null;
  after_ci: string;
}

/** The oldest walk no other process is taking a step of. */
export async function nextWalk(sql: Queryable): Promise<Walk | undefined> {
  const [walk] = await sql<Walk[]>`
    select tenant_id, rule_id, after_ci from quality_walks order by started_at limit 1 for update skip locked`;
  return walk;
}

/** The next page of a walk: the tenant's CI ids after `after`, in order. */
export async function walkPage(sql: Queryable, tenantId: string, after: string, limit: number): Promise<string[]> {
  const rows = await sql<{ ci_id: string }[]>`
    select ci_id from configuration_items where tenant_id = ${tenantId} and ci_id > ${after}
    order by ci_id limit ${limit}`;
  return rows.map((row) => row.ci_id);
}

export async function moveWalk(sql: Queryable, walk: Walk, after: string | null): Promise<void> {
  if (after === null)
    await sql`delete from quality_walks where tenant_id = ${walk.tenant_id} and rule_id is not distinct from ${walk.rule_id}`;
  else
    await sql`update quality_walks set after_ci = ${after}
      where tenant_id = ${walk.tenant_id} and rule_id is not distinct from ${walk.rule_id}`;
}

/** Takes up to `limit` queued CIs off the queue (others' claims are skipped), oldest first. */
export async function claimQueued(sql: Queryable, limit: number): Promise<{ tenant_id: string; ci_id: string }[]> {
  return sql<{ tenant_id: string; ci_id: string }[]>`
    delete from quality_queue where id = any(array(
      select id from quality_queue order by id limit ${limit} for update skip locked))
    returning tenant_id, ci_id`;
}

export async function queueLength(sql: Queryable, tenantId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from (select 1 from quality_queue where tenant_id = ${tenantId} limit 100001) q`;
  return row?.n ?? 0;
}

export async function walksOf(sql: Queryable, tenantId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from quality_walks where tenant_id = ${tenantId}`;
  return row?.n ?? 0;
}
