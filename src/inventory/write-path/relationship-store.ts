import type { Queryable } from '../../platform/db/database.js';
import { jsonText, queued } from '../../platform/db/pipeline.js';
import { partExpression, writableArray, type InventoryKey } from './store.js';

/*
 * The relationships a reconcile writes with their owners: replaced per owner, parked by the
 * target's external id while the target does not exist, resolved when it arrives.
 */

export interface RelationshipWrite {
  from_ci_id: string;
  to_external_id: string;
  type: string;
}

export interface RelationshipOutcome {
  written: number;
  removed: number;
  /** References whose target does not exist yet: kept as pending until it does. */
  pending: number;
}

/**
 * Replaces the outgoing relationships of the given owners, in the caller's transaction (the one
 * that writes the owners): upserts the named relationships whose target exists in the source,
 * keeps the others as pending by the target's external id, and removes every relationship or
 * pending reference of the owners that is no longer named.
 */
export async function replaceRelationships(
  sql: Queryable,
  key: InventoryKey,
  ownerIds: string[],
  rows: RelationshipWrite[],
  now: Date,
): Promise<RelationshipOutcome> {
  if (ownerIds.length === 0) return { written: 0, removed: 0, pending: 0 };
  const { tenantId, sourceId } = key;
  const writable = writableArray(key);
  // both statements go out at once (see writePlan); they run in this order
  const unparked = sql`
    delete from pending_relationships p
    using unnest(${ownerIds}::uuid[]) as owner(ci_id)
    where p.from_ci_id = owner.ci_id`.execute();
  // one statement: its parts see the same snapshot, and the upserted and deleted rows are disjoint
  const replaced = sql<RelationshipOutcome[]>`
    with wanted as (
      select * from jsonb_to_recordset(${jsonText(rows)}::text::jsonb) as r(from_ci_id uuid, to_external_id text, type text)
    ), targets as (
      select w.from_ci_id, w.to_external_id, w.type, t.ci_id as to_ci_id, t.scope_id as to_scope_id
      from wanted w
      left join lateral (
        select ci_id, scope_id from configuration_items
        where tenant_id = ${tenantId} and source_id = ${sourceId} and external_id = w.to_external_id
          and (${writable}::text[] is null or scope_id = any(${writable}::text[]))
        offset 0
      ) as t on true
    ), upserted as (
      insert into relationships (tenant_id, source_id, from_ci_id, to_ci_id, relationship_type, created_at, last_seen, from_scope_id, to_scope_id)
      select ${tenantId}, ${sourceId}, from_ci_id, to_ci_id, type, ${now}, ${now}, ${key.scopeId}::text, to_scope_id
      from targets where to_ci_id is not null
      on conflict (tenant_id, from_ci_id, to_ci_id, relationship_type) do update
        set last_seen = excluded.last_seen, from_scope_id = excluded.from_scope_id, to_scope_id = excluded.to_scope_id
      returning 1
    ), parked as (
      insert into pending_relationships (tenant_id, source_id, target_external_id, from_ci_id, relationship_type, created_at, target_scopes)
      select ${tenantId}, ${sourceId}, to_external_id, from_ci_id, type, ${now}, ${writable}::text[] from targets where to_ci_id is null
      on conflict do nothing
      returning 1
    ), unnamed as (
      -- each owner's relationships by a probe of their own (offset 0, as in loadStates), deleted by
      -- row address: a join lets the planner read the tenant's every relationship when its
      -- statistics are behind the table
      select held.row
      from unnest(${ownerIds}::uuid[]) as owner(ci_id)
      cross join lateral (
        select r.ctid as row, r.to_ci_id, r.relationship_type from relationships r
        where r.tenant_id = ${tenantId} and r.from_ci_id = owner.ci_id
        offset 0
      ) as held
      where not exists (
        select 1 from targets t
        where t.from_ci_id = owner.ci_id and t.to_ci_id = held.to_ci_id and t.type = held.relationship_type)
    ), removed as (
      delete from relationships r
      using unnamed u
      where r.ctid = u.row
      returning r.*
    ), ended as (
      insert into relationship_history
        (relationship_id, tenant_id, source_id, from_ci_id, to_ci_id, relationship_type, from_scope_id, to_scope_id, valid_from, valid_to)
      select id, tenant_id, source_id, from_ci_id, to_ci_id, relationship_type, from_scope_id, to_scope_id, created_at, ${now}
      from removed
    )
    select (select count(*) from upserted)::int as written, (select count(*) from removed)::int as removed,
           (select count(*) from parked)::int as pending`.execute();
  queued(replaced);
  await unparked;
  const [outcome] = await replaced;
  return outcome!;
}

/**
 * Turns the pending references to CIs that were just created (by external id) into
 * relationships, in the transaction that created them. Returns the owners whose references
 * resolved, one entry per relationship. A lane (`part` given) resolves only references whose owner
 * is in its part: the owners of other parts are another lane's to write, and their references to
 * this lane's CIs wait for the reconcile's closing pass (resolveArrivedTargets).
 */
export async function resolvePendingRelationships(
  sql: Queryable,
  key: { tenantId: string; sourceId: string; scopeId: string | null },
  createdExternalIds: string[],
  now: Date,
  part?: number,
): Promise<string[]> {
  if (createdExternalIds.length === 0) return [];
  const { tenantId, sourceId } = key;
  const ownersPart =
    part === undefined
      ? sql``
      : sql`and (select ${sql.unsafe(partExpression('o.external_id'))} from configuration_items o where o.ci_id = p.from_ci_id) = ${part}`;
  // the pending rows are found by a probe per created CI (a lateral subquery that `offset 0` keeps
  // from being pulled up into a join the planner may turn around, materialised) and deleted by
  // their row address: the table's statistics lag behind a load, and plans from them compared
  // every pending row of the source with every created CI
  const rows = await sql<{ from_ci_id: string }[]>`
    with waiting as materialized (
      select w.row
      from unnest(${createdExternalIds}::text[]) as created(external_id)
      cross join lateral (
        select p.ctid as row from pending_relationships p
        where p.tenant_id = ${tenantId} and p.source_id = ${sourceId} and p.target_external_id = created.external_id ${ownersPart}
          -- the CIs were created in the batch's instance
          and (p.target_scopes is null or ${key.scopeId}::text = any(p.target_scopes))
        offset 0
      ) as w
    ), arrived as (
      delete from pending_relationships p
      using waiting w
      where p.ctid = w.row
      returning p.from_ci_id, p.target_external_id, p.relationship_type
    )
    ${relationshipsFromArrived(sql, key, now)}`.execute();
  return rows.map((row) => row.from_ci_id);
}

/** Writes the relationships of pending references taken out by the statement's `arrived` part. */
const relationshipsFromArrived = (
  sql: Queryable,
  { tenantId, sourceId }: { tenantId: string; sourceId: string },
  now: Date,
) => sql`
    insert into relationships (tenant_id, source_id, from_ci_id, to_ci_id, relationship_type, created_at, last_seen, from_scope_id, to_scope_id)
    select ${tenantId}, ${sourceId}, a.from_ci_id, t.ci_id, a.relationship_type, ${now}, ${now}, f.scope_id, t.scope_id
    from arrived a
    cross join lateral (
      select ci_id, scope_id from configuration_items
      where tenant_id = ${tenantId} and source_id = ${sourceId} and external_id = a.target_external_id
      offset 0
    ) as t
    left join lateral (select scope_id from configuration_items where ci_id = a.from_ci_id offset 0) as f on true
    on conflict (tenant_id, from_ci_id, to_ci_id, relationship_type) do update
      set last_seen = excluded.last_seen, from_scope_id = excluded.from_scope_id, to_scope_id = excluded.to_scope_id
    returning from_ci_id`;

/**
 * The closing pass of a reconcile written in lanes, under the source's lock: resolves the source's
 * pending references whose target now exists. Those are the references between parts that no
 * lane could resolve (the target's lane does not write the owner's relationships, and the owner's
 * lane did not see the target, created in a transaction of its own). Reads the source's pending
 * references, which are few: only references to objects the source has not sent stay pending.
 */
export async function resolveArrivedTargets(
  sql: Queryable,
  key: { tenantId: string; sourceId: string },
  now: Date,
): Promise<string[]> {
  const { tenantId, sourceId } = key;
  const rows = await sql<{ from_ci_id: string }[]>`
    with arrived as (
      delete from pending_relationships p
      where p.tenant_id = ${tenantId} and p.source_id = ${sourceId}
        and exists (
          select 1 from configuration_items t
          where t.tenant_id = ${tenantId} and t.source_id = ${sourceId} and t.external_id = p.target_external_id
            and (p.target_scopes is null or t.scope_id = any(p.target_scopes)))
      returning p.from_ci_id, p.target_external_id, p.relationship_type
    )
    ${relationshipsFromArrived(sql, key, now)}`;
  return rows.map((row) => row.from_ci_id);
}
