import type { Sql } from 'postgres';
import type { Principal } from '../../platform/auth/principal.js';
import { changeColumnsOf, visibleTo } from '../../platform/auth/scope.js';
import { EXACT_TIME_FORMAT } from '../../platform/query/exact-time.js';
import { recordColumns, type ChangeRow } from '../records/store.js';

/** How deep ownership is followed: a deployment, its replica sets, their pods (and one more level). */
export const OWNERSHIP_DEPTH = 3;

/** A record read on an owner's timeline, with the owner it is read on and how far below it lies. */
export interface OwnedRecord extends ChangeRow {
  owner_id: string;
  depth: number;
  fingerprint: string | null;
  position_at: string;
}

/**
 * The change records of `owners` and of what they owned, through `manages` relationships as they
 * were at each record's moment (relationships and relationship_history), within [from, until).
 * A CI's records before its first owner and after its last belong to that owner: a pod is written
 * a moment before the relationship to its replica set, and removed a moment after. A record at the
 * moment one owner hands a CI to the next (or removes it) is read on the later. Only records a
 * rule or the shipped rules roll up are read below an owner; a record under several owners in the
 * set is read on the highest. Visible records with field changes only, ignored ones unless asked.
 */
export function ownedRecords(
  sql: Sql,
  principal: Principal,
  owners: readonly string[],
  window: { from: string; until: string; ignored: boolean; limit: number },
): Promise<OwnedRecord[]> {
  const from = sql`${window.from}::text::timestamptz`;
  const until = sql`${window.until}::text::timestamptz`;
  const tenant = principal.tenantId;
  return sql<OwnedRecord[]>`
    with recursive owned (owner_id, ci_id, lower, upper, depth) as (
      select o, o, '-infinity'::timestamptz, 'infinity'::timestamptz, 0 from unnest(${owners as string[]}::uuid[]) as o
      union all
      select owned.owner_id, e.child, greatest(owned.lower, e.lower), least(owned.upper, e.upper), owned.depth + 1
      from owned
      cross join lateral (
        select edge.child,
               case when exists (select 1 from relationship_history h
                                 where h.tenant_id = ${tenant} and h.to_ci_id = edge.child and h.relationship_type = 'manages'
                                   and h.valid_from < edge.valid_from)
                    then edge.valid_from else '-infinity' end as lower,
               case when edge.valid_to = 'infinity'
                      or not exists (select 1 from relationships r
                                     where r.tenant_id = ${tenant} and r.to_ci_id = edge.child and r.relationship_type = 'manages')
                         and not exists (select 1 from relationship_history h
                                         where h.tenant_id = ${tenant} and h.to_ci_id = edge.child
                                           and h.relationship_type = 'manages' and h.valid_from > edge.valid_from)
                    then 'infinity' else edge.valid_to end as upper
        from (
          select r.to_ci_id as child, r.created_at as valid_from, 'infinity'::timestamptz as valid_to
          from relationships r
          where r.tenant_id = ${tenant} and r.from_ci_id = owned.ci_id and r.relationship_type = 'manages'
          union all
          select h.to_ci_id, h.valid_from, h.valid_to
          from relationship_history h
          where h.tenant_id = ${tenant} and h.from_ci_id = owned.ci_id and h.relationship_type = 'manages'
            and h.valid_to >= ${from}
        ) edge
      ) e
      where owned.depth < ${OWNERSHIP_DEPTH} and greatest(owned.lower, e.lower) <= least(owned.upper, e.upper)
    ), placed as (
      -- a record under several owners (or reached twice) is read once, on the one highest above it,
      -- and at a hand-over on the owner it passed to
      select distinct on (cr.id) ${recordColumns(sql)}, cr.fingerprint, o.owner_id, o.depth,
             to_char(cr.changed_at at time zone 'UTC', ${EXACT_TIME_FORMAT}) as position_at
      from change_records cr
      join owned o on o.ci_id = cr.ci_id and cr.changed_at >= o.lower and cr.changed_at <= o.upper
      where cr.tenant_id = ${tenant} and cr.ci_id = any(array(select distinct ci_id from owned))
        and cr.changed_at >= ${from} and cr.changed_at < ${until}
        and (o.depth = 0 or cr.rolls_up)
        and cr.changes <> '[]'::jsonb
        and ${window.ignored ? sql`true` : sql`not cr.ignored`}
        and ${visibleTo(sql, principal, changeColumnsOf('cr'))}
      order by cr.id, o.depth desc, o.lower desc
    )
    select * from placed order by changed_at desc, id::bigint desc limit ${window.limit}`;
}
