import type { Queryable } from '../../platform/db/database.js';
import { userPermissions, userScopes } from '../../platform/auth/api-key-store.js';
import type { DataScope, Permission } from '../../platform/auth/principal.js';

/** Who holds grants and scopes: a user or a team. */
export type Holder = { userId: string } | { teamId: string };

const holderColumns = (holder: Holder) =>
  'userId' in holder ? { user_id: holder.userId, team_id: null } : { user_id: null, team_id: holder.teamId };

/** What a user or team is granted directly. */
export async function directRights(
  sql: Queryable,
  holder: Holder,
): Promise<{ permissions: Permission[]; scopes: DataScope[] }> {
  const { user_id, team_id } = holderColumns(holder);
  const [grants, scopes] = await Promise.all([
    sql<{ permission: Permission }[]>`
      select permission from grants where user_id is not distinct from ${user_id} and team_id is not distinct from ${team_id} order by permission`,
    sql<DataScope[]>`
      select source_id::text as "sourceId", scope_id as "scopeId" from data_scopes
      where user_id is not distinct from ${user_id} and team_id is not distinct from ${team_id}
      order by source_id nulls first, scope_id nulls first`,
  ]);
  return { permissions: grants.map((g) => g.permission), scopes: [...scopes] };
}

/** What a user holds now through its own grants and its teams'. */
export async function effectiveRights(
  sql: Queryable,
  userId: string,
): Promise<{ permissions: Permission[]; scopes: DataScope[] }> {
  const [row] = await sql<{ permissions: Permission[]; scopes: DataScope[] }[]>`
    select (${userPermissions(sql, sql`${userId}::uuid`)}) as permissions, (${userScopes(sql, sql`${userId}::uuid`)}) as scopes`;
  return { permissions: [...(row?.permissions ?? [])].sort(), scopes: row?.scopes ?? [] };
}

/** Replaces a holder's permission grants; returns whether anything changed. */
export async function replaceGrants(
  sql: Queryable,
  holder: Holder,
  permissions: readonly Permission[],
): Promise<boolean> {
  const { user_id, team_id } = holderColumns(holder);
  const removed = await sql`
    delete from grants where user_id is not distinct from ${user_id} and team_id is not distinct from ${team_id}
      and permission <> all(${permissions as string[]}::text[])`;
  const added = await sql`
    insert into grants (user_id, team_id, permission) select ${user_id}::uuid, ${team_id}::uuid, p from unnest(${permissions as string[]}::text[]) p
    on conflict do nothing`;
  return removed.count + added.count > 0;
}

/** Replaces a holder's data scopes; returns whether anything changed. */
export async function replaceScopes(sql: Queryable, holder: Holder, scopes: readonly DataScope[]): Promise<boolean> {
  const { user_id, team_id } = holderColumns(holder);
  const removed = await sql`
    delete from data_scopes where user_id is not distinct from ${user_id} and team_id is not distinct from ${team_id}`;
  for (const scope of scopes) {
    await sql`insert into data_scopes (user_id, team_id, source_id, scope_id) values (${user_id}, ${team_id}, ${scope.sourceId}, ${scope.scopeId}) on conflict do nothing`;
  }
  return removed.count > 0 || scopes.length > 0;
}

/** Which of these source ids do not exist in the tenant (scopes must name real sources). */
export async function unknownSources(
  sql: Queryable,
  tenantId: string,
  sourceIds: readonly string[],
): Promise<string[]> {
  if (sourceIds.length === 0) return [];
  const rows = await sql<
    { id: string }[]
  >`select id::text from sources where tenant_id = ${tenantId} and id = any(${sourceIds as string[]}::bigint[])`;
  const known = new Set(rows.map((r) => r.id));
  return sourceIds.filter((id) => !known.has(id));
}

export interface HeldRights {
  id: string;
  name: string;
  superadmin: boolean;
  active: boolean;
  permissions: Permission[];
  scopes: DataScope[];
}

/**
 * What each user holds now (own grants and its teams'), for the users named or the members of a
 * team, in one query; the rows are locked when `lock` is set, so two changes that could together
 * lift a user above both callers are decided one after the other.
 */
export async function heldRights(
  sql: Queryable,
  tenantId: string,
  who: { userIds: readonly string[] } | { teamId: string },
  lock = false,
): Promise<HeldRights[]> {
  const which =
    'teamId' in who
      ? sql`u.id in (select m.user_id from team_members m where m.team_id = ${who.teamId})`
      : sql`u.id = any(${who.userIds as string[]}::uuid[])`;
  if (lock) await sql`select u.id from users u where u.tenant_id = ${tenantId} and ${which} order by u.id for update`;
  return sql<HeldRights[]>`
    select u.id, u.name, u.superadmin, u.deactivated_at is null as active,
           (${userPermissions(sql, sql`u.id`)}) as permissions, (${userScopes(sql, sql`u.id`)}) as scopes
    from users u where u.tenant_id = ${tenantId} and ${which} order by u.id`;
}

/** Locks a team's row: changes to its grants and members are decided one at a time. */
export async function lockTeam(sql: Queryable, tenantId: string, id: string): Promise<boolean> {
  const rows = await sql`select id from teams where tenant_id = ${tenantId} and id = ${id} for update`;
  return rows.length > 0;
}
