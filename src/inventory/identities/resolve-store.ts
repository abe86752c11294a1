import type { Queryable } from '../../platform/db/database.js';
import type { ObservedCi } from './facets.js';
import type { IdentityRules } from './rules.js';

/** One observation as stored, with the identity it links now. */
export interface StoredObservation {
  ci_id: string;
  kind: string;
  identity_id: string | null;
  keys: Record<string, string[]>;
  fields: Record<string, { value: unknown; since: string }>;
}

/** The next change records in feed order after a place, as (place, tenant, CI, type). */
export async function feedAfter(sql: Queryable, position: string, recordId: string, scan: number) {
  return sql<{ position: string; record_id: string; tenant_id: string; ci_id: string; ci_type: string }[]>`
    select f.position::text as position, cr.id::text as record_id, cr.tenant_id, cr.ci_id, cr.ci_type
    from (select position, txid from change_feed where position >= ${position}::bigint order by position limit ${scan}) f
    cross join lateral (
      select cr.id, cr.tenant_id, cr.ci_id, cr.ci_type from change_records cr
      where cr.txid = f.txid and cr.id > (case when f.position = ${position}::bigint then ${recordId}::bigint else 0 end)
      order by cr.id limit ${scan}
    ) cr
    order by f.position, cr.id
    limit ${scan}`;
}

export async function progress(
  sql: Queryable,
): Promise<{ position: string; record_id: string; backfill_after: string | null } | undefined> {
  const [row] = await sql<{ position: string; record_id: string; backfill_after: string | null }[]>`
    select position::text as position, record_id::text as record_id, backfill_after from identity_progress`;
  return row;
}

export async function saveProgress(sql: Queryable, position: string, recordId: string): Promise<void> {
  await sql`update identity_progress set position = ${position}::bigint, record_id = ${recordId}::bigint`;
}

/** The first start: the feed is read from its end now on, after the stored CIs are resolved page by page. */
export async function startBackfill(sql: Queryable, position: string): Promise<void> {
  await sql`
    insert into identity_progress (singleton, position, record_id, backfill_after)
    values (true, ${position}::bigint, 9223372036854775807, '00000000-0000-0000-0000-000000000000')
    on conflict (singleton) do nothing`;
}

export async function saveBackfill(sql: Queryable, after: string | null): Promise<void> {
  await sql`update identity_progress set backfill_after = ${after}::uuid`;
}

/** Where the feed ends now; a first start backfills what is stored and goes on from here. */
export async function feedEndPosition(sql: Queryable): Promise<string> {
  const [row] = await sql<{ position: string | null }[]>`select max(position)::text as position from change_feed`;
  return row?.position ?? '0';
}

/** A page of the CIs that may observe something, by id, for the first start's backfill. */
export async function observingCisAfter(sql: Queryable, after: string, limit: number) {
  return sql<{ ci_id: string; tenant_id: string; ci_type: string }[]>`
    select ci_id, tenant_id, ci_type from configuration_items
    where ci_id > ${after}::uuid and status <> 'archived'
      and (ci_type in ('k8s.node') or ci_type like 'host.%' or ci_type like '%.server' or ci_type like '%.node')
    order by ci_id limit ${limit}`;
}

export async function cisById(sql: Queryable, ids: readonly string[]): Promise<ObservedCi[]> {
  if (ids.length === 0) return [];
  return sql<ObservedCi[]>`
    select ci_id, tenant_id, source_id::text as source_id, scope_id, ci_type, name, status, updated_at, raw_data, type_data
    from configuration_items where ci_id = any(${ids as string[]}::uuid[])`;
}

/** Serialises identity work of a tenant: the worker's batches and people's decisions. */
export async function lockTenant(tx: Queryable, tenantId: string): Promise<void> {
  await tx`select pg_advisory_xact_lock(hashtextextended(${`cinv.identities:${tenantId}`}, 0))`;
}

export async function tenantRules(sql: Queryable, tenantId: string): Promise<Partial<IdentityRules> | null> {
  const [row] = await sql<
    { rules: Partial<IdentityRules> }[]
  >`select rules from identity_settings where tenant_id = ${tenantId}`;
  return row?.rules ?? null;
}

/** The observations sharing an identifying value with, or linked to the same identity as, the given ones. */
export async function neighbours(
  tx: Queryable,
  tenantId: string,
  kind: string,
  ids: readonly string[],
): Promise<string[]> {
  const rows = await tx<{ ci_id: string }[]>`
    with own as (select key, value from identity_keys where ci_id = any(${ids as string[]}::uuid[]) and tenant_id = ${tenantId} and kind = ${kind})
    -- one lookup of the key's index per value: a join left to the planner read the keys whole
    select k.ci_id from own cross join lateral (
      select k.ci_id from identity_keys k
      where k.tenant_id = ${tenantId} and k.kind = ${kind} and k.key = own.key and k.value = own.value) k
    union
    select l2.ci_id from identity_links l1 join identity_links l2 on l2.identity_id = l1.identity_id and l2.linked_until is null
    where l1.ci_id = any(${ids as string[]}::uuid[]) and l1.kind = ${kind} and l1.linked_until is null
    union
    select unnest(d.ci_ids) from identity_decisions d
    where d.undone_at is null and d.tenant_id = ${tenantId} and d.kind = ${kind} and d.ci_ids && ${ids as string[]}::uuid[]`;
  return rows.map((r) => r.ci_id);
}

/** Whether any of these CIs is an observation of this kind now. */
export async function observesAny(tx: Queryable, kind: string, ids: readonly string[]): Promise<boolean> {
  if (ids.length === 0) return false;
  const rows = await tx`
    select 1 from identity_observations where ci_id = any(${ids as string[]}::uuid[]) and kind = ${kind} limit 1`;
  return rows.length > 0;
}

export async function observationsOf(
  tx: Queryable,
  kind: string,
  ids: readonly string[],
): Promise<StoredObservation[]> {
  return tx<StoredObservation[]>`
    select ci_id, kind, identity_id, keys, fields from identity_observations
    where ci_id = any(${ids as string[]}::uuid[]) and kind = ${kind}`;
}

/** The identity each observation links now (from the links, which outlive a deleted CI). */
export async function openLinks(tx: Queryable, kind: string, ids: readonly string[]) {
  return tx<{ ci_id: string; identity_id: string; created_at: Date }[]>`
    select l.ci_id, l.identity_id, i.created_at from identity_links l join identities i on i.id = l.identity_id
    where l.ci_id = any(${ids as string[]}::uuid[]) and l.kind = ${kind} and l.linked_until is null`;
}

export async function liveDecisions(tx: Queryable, tenantId: string, kind: string, ids: readonly string[]) {
  return tx<{ id: string; action: 'merge' | 'keep_apart' | 'pin'; ci_ids: string[] }[]>`
    select id, action, ci_ids::text[] as ci_ids from identity_decisions
    where undone_at is null and tenant_id = ${tenantId} and kind = ${kind} and ci_ids && ${ids as string[]}::uuid[]
    order by made_at, id`;
}

/** Fresh planner statistics for the identity tables, after a backfill filled them at once. */
export async function analyzeIdentities(sql: Queryable): Promise<void> {
  await sql`analyze identity_keys, identity_observations, identity_links`;
}
