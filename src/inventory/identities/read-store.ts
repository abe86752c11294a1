import type { Sql } from '../../platform/db/database.js';
import type { Principal } from '../../platform/auth/principal.js';
import { changeColumnsOf, columnsOf, visibleTo, type Fragment } from '../../platform/auth/scope.js';
import { compileFilters, type ParsedFilter } from '../../platform/query/filters.js';

export interface IdentityRow {
  id: string;
  kind: 'host';
  name: string;
  observation_count: number;
  created_at: Date;
  updated_at: Date;
  retired_at: Date | null;
}

/** Observations the principal may see, as `o` (identity_observations). */
const visibleObservations = (sql: Sql, principal: Principal) => visibleTo(sql, principal, columnsOf('o'));

export interface IdentityPageCriteria {
  filters: readonly ParsedFilter[];
  sort: 'name' | 'updated_at' | 'created_at';
  order: 'asc' | 'desc';
  limit: number;
  after: [string, string] | null;
}

/**
 * A page of the identities the principal may see (through at least one visible observation), by
 * the sort column and id; its observation count is of the visible ones only.
 */
export async function identityPage(sql: Sql, principal: Principal, c: IdentityPageCriteria): Promise<IdentityRow[]> {
  const column = sql(`i.${c.sort}`);
  const direction = c.order === 'asc' ? sql`asc` : sql`desc`;
  const beyond = c.after
    ? c.order === 'asc'
      ? sql`and (${column}, i.id) > (${c.after[0]}, ${c.after[1]}::uuid)`
      : sql`and (${column}, i.id) < (${c.after[0]}, ${c.after[1]}::uuid)`
    : sql``;
  const filters = compileFilters(sql, c.filters);
  return sql<IdentityRow[]>`
    select i.id, i.kind, i.name, seen.count::int as observation_count, i.created_at, i.updated_at, i.retired_at
    from identities i
    cross join lateral (
      select count(*) as count from identity_observations o where o.identity_id = i.id and ${visibleObservations(sql, principal)}
    ) seen
    where i.tenant_id = ${principal.tenantId} and i.retired_at is null and seen.count > 0
      ${filters.length > 0 ? sql`and ${filters.reduce((a, f) => sql`${a} and ${f}`)}` : sql``}
      ${beyond}
    order by ${column} ${direction}, i.id ${direction}
    limit ${c.limit + 1}`;
}

export async function identityById(sql: Sql, principal: Principal, id: string): Promise<IdentityRow | undefined> {
  const [row] = await sql<IdentityRow[]>`
    select i.id, i.kind, i.name, i.observation_count, i.created_at, i.updated_at, i.retired_at
    from identities i where i.id = ${id} and i.tenant_id = ${principal.tenantId}`;
  return row;
}

export interface ObservationRow {
  ci_id: string;
  name: string;
  ci_type: string;
  status: string;
  source_id: string;
  scope_id: string | null;
  role: 'self' | 'runs-on';
  keys: Record<string, string[]>;
  fields: Record<string, { value: unknown; since: string }>;
  linked_at: Date;
  last_seen: Date | null;
  interval_minutes: number;
}

/** The visible observations an identity links now, with what staleness needs: last seen and the source's schedule. */
export async function observationsNow(sql: Sql, principal: Principal, identityId: string): Promise<ObservationRow[]> {
  return sql<ObservationRow[]>`
    select o.ci_id, ci.name, o.ci_type, ci.status, o.source_id::text as source_id, o.scope_id, o.role, o.keys, o.fields,
           o.linked_at, ls.last_seen, coalesce((s.schedule_config->>'interval_minutes')::int, 60) as interval_minutes
    from identity_observations o
    join configuration_items ci on ci.ci_id = o.ci_id
    left join ci_last_seen ls on ls.ci_id = o.ci_id
    left join sources s on s.id = o.source_id
    where o.identity_id = ${identityId} and ${visibleObservations(sql, principal)}
    order by o.ci_type, ci.name, o.ci_id`;
}

/** The observations an identity linked at a moment (ids, as the links recorded them). */
export async function linkedAt(sql: Sql, identityId: string, at: string): Promise<string[]> {
  const rows = await sql<{ ci_id: string }[]>`
    select ci_id from identity_links
    where identity_id = ${identityId} and linked_from <= ${at}::timestamptz
      and (linked_until is null or linked_until > ${at}::timestamptz)`;
  return rows.map((r) => r.ci_id);
}

/** The relationships of the visible observations, both ways, with the visible CI at their other end. */
export async function relationshipsOfAll(sql: Sql, principal: Principal, ciIds: readonly string[], limit: number) {
  if (ciIds.length === 0) return [];
  const ids = ciIds as string[];
  return sql<
    {
      from_ci_id: string;
      to_ci_id: string;
      relationship_type: string;
      other_id: string;
      other_name: string;
      other_type: string;
    }[]
  >`
    select r.from_ci_id, r.to_ci_id, r.relationship_type, other.ci_id as other_id, other.name as other_name, other.ci_type as other_type
    from relationships r
    join configuration_items other
      on other.ci_id = case when r.from_ci_id = any(${ids}::uuid[]) then r.to_ci_id else r.from_ci_id end
    where r.tenant_id = ${principal.tenantId}
      and (r.from_ci_id = any(${ids}::uuid[]) or r.to_ci_id = any(${ids}::uuid[]))
      and ${visibleTo(sql, principal, columnsOf('other'))}
    order by r.relationship_type, other.name, other.ci_id
    limit ${limit}`;
}

/** The latest changes of the given CIs, newest first, those the principal may see. */
export async function changesOfAll(sql: Sql, principal: Principal, ciIds: readonly string[], limit: number) {
  if (ciIds.length === 0) return [];
  return sql<
    {
      id: string;
      ci_id: string;
      ci_name: string;
      ci_type: string;
      source_id: string;
      change_type: string;
      changed_at: Date;
      changed_fields: string[];
    }[]
  >`
    select cr.id::text as id, cr.ci_id, cr.ci_name, cr.ci_type, cr.source_id::text as source_id, cr.change_type,
           cr.changed_at, cr.changed_fields
    from change_records cr
    where cr.ci_id = any(${ciIds as string[]}::uuid[]) and ${visibleTo(sql, principal, changeColumnsOf('cr'))}
    order by cr.changed_at desc, cr.id desc
    limit ${limit}`;
}

/** The live pins over an identity's observations. */
export async function pinsOf(sql: Sql, tenantId: string, ciIds: readonly string[]) {
  if (ciIds.length === 0) return [];
  return sql<{ field: string; source_id: string }[]>`
    select field, source_id::text as source_id from identity_decisions
    where tenant_id = ${tenantId} and action = 'pin' and undone_at is null and ci_ids && ${ciIds as string[]}::uuid[]
    order by made_at desc, id desc`;
}

/** Whether the principal sees every CI of `ids` (a conflict or a decision shows only to who sees all it concerns). */
export const seesEvery = (sql: Sql, principal: Principal, ids: Fragment): Fragment =>
  sql`not exists (select 1 from unnest(${ids}) as x(ci_id) where not exists (
        select 1 from configuration_items c where c.ci_id = x.ci_id and ${visibleTo(sql, principal, columnsOf('c'))}))`;

export async function openConflictsOf(sql: Sql, principal: Principal, ciIds: readonly string[]): Promise<string[]> {
  if (ciIds.length === 0) return [];
  const rows = await sql<{ id: string }[]>`
    select k.id from identity_conflicts k
    where k.tenant_id = ${principal.tenantId} and k.status = 'open' and k.ci_ids && ${ciIds as string[]}::uuid[]
      and ${seesEvery(sql, principal, sql`k.ci_ids`)}
    order by k.raised_at, k.id`;
  return rows.map((r) => r.id);
}

/** The visible observations sharing an identifying value with the given keys, and the rest of their identities. */
export async function observationsMatching(
  sql: Sql,
  principal: Principal,
  kind: string,
  keys: Record<string, string[]>,
): Promise<{ ci_id: string; identity_id: string; keys: Record<string, string[]>; created_at: Date }[]> {
  const pairs = Object.entries(keys).flatMap(([key, values]) => values.map((value) => ({ key, value })));
  if (pairs.length === 0) return [];
  return sql`
    with matched as (
      select distinct o.identity_id from identity_keys k
      join jsonb_to_recordset(${JSON.stringify(pairs)}::text::jsonb) as p(key text, value text) on p.key = k.key and p.value = k.value
      join identity_observations o on o.ci_id = k.ci_id and o.kind = k.kind
      where k.tenant_id = ${principal.tenantId} and k.kind = ${kind} and ${visibleObservations(sql, principal)}
    )
    select o.ci_id, o.identity_id, o.keys, i.created_at from identity_observations o
    join matched m on m.identity_id = o.identity_id join identities i on i.id = o.identity_id
    where ${visibleObservations(sql, principal)}
    limit 2000`;
}
