import type { Queryable } from '../../platform/db/database.js';
import type { Facet, ObservedCi } from './facets.js';

/** An observation as the worker writes it. */
export interface ObservationWrite {
  ci: ObservedCi;
  facet: Facet;
  identityId: string;
  fields: Record<string, { value: unknown; since: string }>;
}

/** Replaces the identifying values of these CIs with their facets' (none for a CI that observes nothing now). */
export async function replaceKeys(
  tx: Queryable,
  tenantId: string,
  kind: string,
  ciIds: readonly string[],
  facets: readonly Facet[],
): Promise<void> {
  await tx`delete from identity_keys where ci_id = any(${ciIds as string[]}::uuid[]) and kind = ${kind}`;
  const rows = facets.flatMap((f) =>
    Object.entries(f.keys).flatMap(([key, values]) => (values ?? []).map((value) => [f.ciId, key, value])),
  );
  if (rows.length === 0) return;
  await tx`
    insert into identity_keys (tenant_id, kind, ci_id, key, value)
    select ${tenantId}, ${kind}, r.ci_id::uuid, r.key, r.value
    from jsonb_to_recordset(${JSON.stringify(rows.map(([ci_id, key, value]) => ({ ci_id, key, value })))}::text::jsonb)
      as r(ci_id text, key text, value text)
    on conflict do nothing`;
}

export async function upsertIdentities(
  tx: Queryable,
  tenantId: string,
  kind: string,
  identities: readonly { id: string; name: string; count: number }[],
  now: Date,
): Promise<void> {
  if (identities.length === 0) return;
  await tx`
    insert into identities (id, tenant_id, kind, name, observation_count, created_at, updated_at)
    select r.id::uuid, ${tenantId}, ${kind}, r.name, r.count, ${now}, ${now}
    from jsonb_to_recordset(${JSON.stringify(identities)}::text::jsonb) as r(id text, name text, count int)
    on conflict (id) do update set name = excluded.name, observation_count = excluded.observation_count,
      retired_at = null,
      updated_at = case when identities.name is distinct from excluded.name
                          or identities.observation_count <> excluded.observation_count
                          or identities.retired_at is not null then excluded.updated_at else identities.updated_at end`;
}

export async function retireIdentities(tx: Queryable, ids: readonly string[], now: Date): Promise<void> {
  if (ids.length === 0) return;
  await tx`
    update identities set retired_at = ${now}, updated_at = ${now}, observation_count = 0
    where id = any(${ids as string[]}::uuid[]) and retired_at is null`;
}

/** Moves links: closes each CI's open link that names another identity (or none now), opens the new one. */
export async function relink(
  tx: Queryable,
  tenantId: string,
  kind: string,
  links: readonly { ciId: string; identityId: string | null }[],
  now: Date,
): Promise<void> {
  if (links.length === 0) return;
  const json = JSON.stringify(links.map((l) => ({ ci_id: l.ciId, identity_id: l.identityId })));
  await tx`
    update identity_links l set linked_until = ${now}
    from jsonb_to_recordset(${json}::text::jsonb) as r(ci_id uuid, identity_id uuid)
    where l.ci_id = r.ci_id and l.kind = ${kind} and l.linked_until is null and l.identity_id is distinct from r.identity_id`;
  await tx`
    insert into identity_links (tenant_id, ci_id, kind, identity_id, linked_from)
    select ${tenantId}, r.ci_id, ${kind}, r.identity_id, ${now}
    from jsonb_to_recordset(${json}::text::jsonb) as r(ci_id uuid, identity_id uuid)
    where r.identity_id is not null
      and not exists (select 1 from identity_links l where l.ci_id = r.ci_id and l.kind = ${kind} and l.linked_until is null)`;
}

export async function writeObservations(
  tx: Queryable,
  tenantId: string,
  kind: string,
  writes: readonly ObservationWrite[],
  gone: readonly string[],
  now: Date,
): Promise<void> {
  if (gone.length > 0)
    await tx`delete from identity_observations where ci_id = any(${gone as string[]}::uuid[]) and kind = ${kind}`;
  if (writes.length === 0) return;
  const json = JSON.stringify(
    writes.map((w) => ({
      ci_id: w.ci.ci_id,
      identity_id: w.identityId,
      role: w.facet.role,
      source_id: w.ci.source_id,
      scope_id: w.ci.scope_id,
      ci_type: w.ci.ci_type,
      keys: w.facet.keys,
      fields: w.fields,
    })),
  );
  await tx`
    insert into identity_observations (ci_id, kind, tenant_id, identity_id, role, source_id, scope_id, ci_type, keys, fields, linked_at)
    select r.ci_id, ${kind}, ${tenantId}, r.identity_id, r.role, r.source_id::bigint, r.scope_id, r.ci_type, r.keys, r.fields, ${now}
    from jsonb_to_recordset(${json}::text::jsonb)
      as r(ci_id uuid, identity_id uuid, role text, source_id text, scope_id text, ci_type text, keys jsonb, fields jsonb)
    -- a CI deleted meanwhile observes nothing
    where exists (select 1 from configuration_items c where c.ci_id = r.ci_id)
    on conflict (ci_id, kind) do update set identity_id = excluded.identity_id, role = excluded.role,
      source_id = excluded.source_id, scope_id = excluded.scope_id, ci_type = excluded.ci_type, keys = excluded.keys,
      fields = excluded.fields,
      linked_at = case when identity_observations.identity_id = excluded.identity_id then identity_observations.linked_at
                       else excluded.linked_at end`;
}

/** Moves identity of unchanged observations whose group now has another identity. */
export async function moveObservations(
  tx: Queryable,
  kind: string,
  moves: readonly { ciId: string; identityId: string }[],
  now: Date,
): Promise<void> {
  if (moves.length === 0) return;
  await tx`
    update identity_observations o set identity_id = r.identity_id, linked_at = ${now}
    from jsonb_to_recordset(${JSON.stringify(moves.map((m) => ({ ci_id: m.ciId, identity_id: m.identityId })))}::text::jsonb)
      as r(ci_id uuid, identity_id uuid)
    where o.ci_id = r.ci_id and o.kind = ${kind} and o.identity_id <> r.identity_id`;
}

export interface ConflictWrite {
  id: string;
  rule: string;
  fingerprint: string;
  values: string[];
  groups: string[][];
}

/** Opens the conflicts raised now, and closes as gone the open ones over these CIs that are not raised any more. */
export async function syncConflicts(
  tx: Queryable,
  tenantId: string,
  kind: string,
  ciIds: readonly string[],
  raised: readonly ConflictWrite[],
  now: Date,
): Promise<void> {
  const fingerprints = raised.map((c) => c.fingerprint);
  await tx`
    update identity_conflicts set status = 'gone', closed_at = ${now}
    where tenant_id = ${tenantId} and kind = ${kind} and status = 'open' and ci_ids && ${ciIds as string[]}::uuid[]
      and not (fingerprint = any(${fingerprints}::text[]))`;
  if (raised.length === 0) return;
  const json = JSON.stringify(
    raised.map((c) => ({ ...c, ci_ids: c.groups.flat(), groups: c.groups, shared_values: c.values })),
  );
  await tx`
    insert into identity_conflicts (id, tenant_id, kind, rule, fingerprint, shared_values, groups, ci_ids, status, raised_at)
    select r.id, ${tenantId}, ${kind}, r.rule, r.fingerprint,
           array(select jsonb_array_elements_text(r.shared_values)), r.groups,
           array(select jsonb_array_elements_text(r.ci_ids))::uuid[], 'open', ${now}
    from jsonb_to_recordset(${json}::text::jsonb) as r(id uuid, rule text, fingerprint text, shared_values jsonb, groups jsonb, ci_ids jsonb)
    on conflict (tenant_id, fingerprint) where status = 'open' do nothing`;
}
