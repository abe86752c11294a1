import type { Queryable, Sql } from '../../platform/db/database.js';
import type { Principal } from '../../platform/auth/principal.js';
import { seesEvery } from './read-store.js';
import type { IdentityKind } from './rules.js';

export interface ConflictRow {
  id: string;
  kind: IdentityKind;
  rule: string;
  shared_values: string[];
  groups: string[][];
  ci_ids: string[];
  status: 'open' | 'settled' | 'gone';
  raised_at: Date;
  closed_at: Date | null;
  decision_id: string | null;
}

const CONFLICT_COLUMNS = (sql: Sql) =>
  sql`k.id, k.kind, k.rule, k.shared_values, k.groups, k.ci_ids::text[] as ci_ids, k.status, k.raised_at, k.closed_at, k.decision_id`;

/** A page of the review queue: the conflicts whose every CI the principal sees, oldest first. */
export async function conflictPage(
  sql: Sql,
  principal: Principal,
  status: 'open' | 'settled' | 'gone' | 'all',
  limit: number,
  after: [string, string] | null,
): Promise<ConflictRow[]> {
  return sql<ConflictRow[]>`
    select ${CONFLICT_COLUMNS(sql)} from identity_conflicts k
    where k.tenant_id = ${principal.tenantId}
      ${status === 'all' ? sql`` : sql`and k.status = ${status}`}
      ${after ? sql`and (k.raised_at, k.id) > (${after[0]}::timestamptz, ${after[1]}::uuid)` : sql``}
      and ${seesEvery(sql, principal, sql`k.ci_ids`)}
    order by k.raised_at, k.id
    limit ${limit + 1}`;
}

export async function conflictById(sql: Queryable, tenantId: string, id: string): Promise<ConflictRow | undefined> {
  const [row] = await sql<ConflictRow[]>`
    select k.id, k.kind, k.rule, k.shared_values, k.groups, k.ci_ids::text[] as ci_ids, k.status, k.raised_at, k.closed_at,
           k.decision_id
    from identity_conflicts k where k.tenant_id = ${tenantId} and k.id = ${id}`;
  return row;
}

/** The CIs named, with where they are and which identity they link: what a conflict or decision shows of them. */
export async function membersOf(sql: Queryable, ids: readonly string[], kind: IdentityKind) {
  if (ids.length === 0) return [];
  return sql<
    {
      ci_id: string;
      name: string;
      ci_type: string;
      source_id: string;
      scope_id: string | null;
      tenant_id: string;
      identity_id: string | null;
    }[]
  >`
    select c.ci_id, c.name, c.ci_type, c.source_id::text as source_id, c.scope_id, c.tenant_id, o.identity_id
    from configuration_items c left join identity_observations o on o.ci_id = c.ci_id and o.kind = ${kind}
    where c.ci_id = any(${ids as string[]}::uuid[])`;
}

/** Settles an open conflict; false when it is not open (any more). */
export async function settleConflict(tx: Queryable, id: string, decisionId: string, now: Date): Promise<boolean> {
  const rows = await tx`
    update identity_conflicts set status = 'settled', closed_at = ${now}, decision_id = ${decisionId}
    where id = ${id} and status = 'open' returning id`;
  return rows.length > 0;
}

export interface DecisionRow {
  id: string;
  kind: IdentityKind;
  action: 'merge' | 'keep_apart' | 'pin';
  ci_ids: string[];
  field: string | null;
  source_id: string | null;
  conflict_id: string | null;
  reason: string | null;
  made_by: { kind: string; id: string | null; name: string | null };
  made_at: Date;
  undone_at: Date | null;
  undone_by: { kind: string; id: string | null; name: string | null } | null;
}

const DECISION_COLUMNS = (sql: Sql) =>
  sql`d.id, d.kind, d.action, d.ci_ids::text[] as ci_ids, d.field, d.source_id::text as source_id, d.conflict_id, d.reason,
      d.made_by, d.made_at, d.undone_at, d.undone_by`;

export async function insertDecision(tx: Queryable, tenantId: string, d: Omit<DecisionRow, 'undone_at' | 'undone_by'>) {
  await tx`
    insert into identity_decisions (id, tenant_id, kind, action, ci_ids, field, source_id, conflict_id, reason, made_by, made_at)
    values (${d.id}, ${tenantId}, ${d.kind}, ${d.action}, ${d.ci_ids}::uuid[], ${d.field}, ${d.source_id}::bigint,
            ${d.conflict_id}, ${d.reason}, ${JSON.stringify(d.made_by)}::text::jsonb, ${d.made_at})`;
}

export async function decisionById(sql: Sql, tenantId: string, id: string): Promise<DecisionRow | undefined> {
  const [row] = await sql<DecisionRow[]>`
    select ${DECISION_COLUMNS(sql)} from identity_decisions d where d.tenant_id = ${tenantId} and d.id = ${id}`;
  return row;
}

export async function undoDecision(tx: Queryable, id: string, by: DecisionRow['made_by'], now: Date): Promise<boolean> {
  const rows = await tx`
    update identity_decisions set undone_at = ${now}, undone_by = ${JSON.stringify(by)}::text::jsonb
    where id = ${id} and undone_at is null returning id`;
  return rows.length > 0;
}

export async function decisionPage(
  sql: Sql,
  principal: Principal,
  includeUndone: boolean,
  limit: number,
  after: [string, string] | null,
): Promise<DecisionRow[]> {
  return sql<DecisionRow[]>`
    select ${DECISION_COLUMNS(sql)} from identity_decisions d
    where d.tenant_id = ${principal.tenantId} ${includeUndone ? sql`` : sql`and d.undone_at is null`}
      ${after ? sql`and (d.made_at, d.id) < (${after[0]}::timestamptz, ${after[1]}::uuid)` : sql``}
      and ${seesEvery(sql, principal, sql`d.ci_ids`)}
    order by d.made_at desc, d.id desc
    limit ${limit + 1}`;
}

export async function storedRules(sql: Queryable, tenantId: string) {
  const [row] = await sql<{ rules: Record<string, unknown>; updated_at: Date }[]>`
    select rules, updated_at from identity_settings where tenant_id = ${tenantId}`;
  return row;
}

export async function saveRules(tx: Queryable, tenantId: string, rules: unknown, now: Date): Promise<void> {
  await tx`
    insert into identity_settings (tenant_id, rules, updated_at) values (${tenantId}, ${JSON.stringify(rules)}::text::jsonb, ${now})
    on conflict (tenant_id) do update set rules = excluded.rules, updated_at = excluded.updated_at`;
}

/** The tenant's observing CIs after an id: re-resolved page by page when the rules change. */
export async function tenantObservingAfter(sql: Queryable, tenantId: string, after: string, limit: number) {
  const rows = await sql<{ ci_id: string }[]>`
    select ci_id from configuration_items
    where tenant_id = ${tenantId} and ci_id > ${after}::uuid and status <> 'archived'
      and (ci_type like 'host.%' or ci_type like '%.server' or ci_type like '%.node')
    order by ci_id limit ${limit}`;
  return rows.map((r) => r.ci_id);
}
