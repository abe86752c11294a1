import { uuidv7 } from 'uuidv7';
import type { Queryable } from '../db/database.js';
import { userPermissions, userScopes } from '../auth/api-key-store.js';
import type { DataScope, Permission } from '../auth/principal.js';

export interface UserRow {
  id: string;
  name: string;
  email: string | null;
  issuer: string | null;
  superadmin: boolean;
  created_at: Date;
  deactivated_at: Date | null;
  last_login_at: Date | null;
}

/** Who holds grants and scopes: a user or a team. */
export type Holder = { userId: string } | { teamId: string };

const USER_COLUMNS = 'u.id, u.name, u.email, u.issuer, u.superadmin, u.created_at, u.deactivated_at, u.last_login_at';

export async function insertUser(sql: Queryable, tenantId: string, user: { name: string; email: string | null; issuer?: string; subject?: string }): Promise<UserRow> {
  const [row] = await sql<UserRow[]>`
    insert into users as u (id, tenant_id, name, email, issuer, subject)
    values (${uuidv7()}, ${tenantId}, ${user.name}, ${user.email}, ${user.issuer ?? null}, ${user.subject ?? null})
    returning ${sql.unsafe(USER_COLUMNS)}`;
  return row!;
}

export async function findUser(sql: Queryable, tenantId: string, id: string): Promise<UserRow | undefined> {
  const [row] = await sql<UserRow[]>`select ${sql.unsafe(USER_COLUMNS)} from users u where u.tenant_id = ${tenantId} and u.id = ${id}`;
  return row;
}

export async function findUserByEmail(sql: Queryable, tenantId: string, email: string): Promise<UserRow | undefined> {
  const [row] = await sql<UserRow[]>`select ${sql.unsafe(USER_COLUMNS)} from users u where u.tenant_id = ${tenantId} and lower(u.email) = lower(${email})`;
  return row;
}

export interface UserListCriteria {
  email?: string;
  active?: boolean;
  teamId?: string;
  limit: number;
  offset: number;
}

/** A page of users, oldest first, and how many match (user lists are short: counting is cheap). */
export async function listUsers(sql: Queryable, tenantId: string, criteria: UserListCriteria): Promise<{ rows: UserRow[]; total: number }> {
  const where = sql`u.tenant_id = ${tenantId}
    ${criteria.email === undefined ? sql`` : sql`and lower(u.email) = lower(${criteria.email})`}
    ${criteria.active === undefined ? sql`` : criteria.active ? sql`and u.deactivated_at is null` : sql`and u.deactivated_at is not null`}
    ${criteria.teamId === undefined ? sql`` : sql`and exists (select 1 from team_members m where m.user_id = u.id and m.team_id = ${criteria.teamId})`}`;
  const [rows, [count]] = await Promise.all([
    sql<UserRow[]>`select ${sql.unsafe(USER_COLUMNS)} from users u where ${where} order by u.created_at, u.id limit ${criteria.limit} offset ${criteria.offset}`,
    sql<{ total: number }[]>`select count(*)::int as total from users u where ${where}`,
  ]);
  return { rows, total: count?.total ?? 0 };
}

export async function setDeactivated(sql: Queryable, tenantId: string, id: string, at: Date | null): Promise<UserRow | undefined> {
  const [row] = await sql<UserRow[]>`
    update users u set deactivated_at = ${at} where u.tenant_id = ${tenantId} and u.id = ${id} returning ${sql.unsafe(USER_COLUMNS)}`;
  return row;
}

export async function setSuperadmin(sql: Queryable, tenantId: string, id: string, superadmin: boolean): Promise<UserRow | undefined> {
  const [row] = await sql<UserRow[]>`
    update users u set superadmin = ${superadmin} where u.tenant_id = ${tenantId} and u.id = ${id} returning ${sql.unsafe(USER_COLUMNS)}`;
  return row;
}

const holderColumns = (holder: Holder) => ('userId' in holder ? { user_id: holder.userId, team_id: null } : { user_id: null, team_id: holder.teamId });

/** What a user or team is granted directly. */
export async function directRights(sql: Queryable, holder: Holder): Promise<{ permissions: Permission[]; scopes: DataScope[] }> {
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
export async function effectiveRights(sql: Queryable, userId: string): Promise<{ permissions: Permission[]; scopes: DataScope[] }> {
  const [row] = await sql<{ permissions: Permission[]; scopes: DataScope[] }[]>`
    select (${userPermissions(sql, sql`${userId}::uuid`)}) as permissions, (${userScopes(sql, sql`${userId}::uuid`)}) as scopes`;
  return { permissions: [...(row?.permissions ?? [])].sort(), scopes: row?.scopes ?? [] };
}

/** Replaces a holder's permission grants; returns whether anything changed. */
export async function replaceGrants(sql: Queryable, holder: Holder, permissions: readonly Permission[]): Promise<boolean> {
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
export async function unknownSources(sql: Queryable, tenantId: string, sourceIds: readonly string[]): Promise<string[]> {
  if (sourceIds.length === 0) return [];
  const rows = await sql<{ id: string }[]>`select id::text from sources where tenant_id = ${tenantId} and id = any(${sourceIds as string[]}::bigint[])`;
  const known = new Set(rows.map((r) => r.id));
  return sourceIds.filter((id) => !known.has(id));
}

export interface SsoIdentity {
  issuer: string;
  subject: string;
  name: string;
  email: string | null;
  emailVerified: boolean;
}

export type SsoSignIn =
  | { outcome: 'signed_in'; user: UserRow; created: boolean }
  | { outcome: 'deactivated'; user: UserRow }
  | { outcome: 'email_taken'; email: string };

/**
 * The user behind a provider identity (issuer + subject), created at the first sign-in; name and
 * email follow the provider's on every sign-in. A user an admin created with the same email is
 * taken over only when the provider says it verified the email (otherwise anyone able to set that
 * address at the provider would inherit the user's rights).
 */
export async function signInSsoUser(sql: Queryable, tenantId: string, identity: SsoIdentity, now: Date): Promise<SsoSignIn> {
  const [known] = await sql<UserRow[]>`
    select ${sql.unsafe(USER_COLUMNS)} from users u
    where u.tenant_id = ${tenantId} and u.issuer = ${identity.issuer} and u.subject = ${identity.subject}`;
  let user = known;
  let created = false;
  if (!user && identity.email) {
    const holder = await findUserByEmail(sql, tenantId, identity.email);
    if (holder) {
      if (holder.issuer !== null || !identity.emailVerified) return { outcome: 'email_taken', email: identity.email };
      user = holder;
    }
  }
  if (!user) {
    user = await insertUser(sql, tenantId, { name: identity.name, email: identity.email, issuer: identity.issuer, subject: identity.subject });
    created = true;
  }
  if (user.deactivated_at) return { outcome: 'deactivated', user };
  const [updated] = await sql<UserRow[]>`
    update users u set name = ${identity.name}, email = coalesce(${identity.email}, u.email), issuer = ${identity.issuer},
                       subject = ${identity.subject}, last_login_at = ${now}
    where u.id = ${user.id}
    returning ${sql.unsafe(USER_COLUMNS)}`;
  return { outcome: 'signed_in', user: updated!, created };
}

/**
 * Makes the user a member of exactly the teams its provider groups name (by team name), among the
 * memberships groups gave; memberships an admin added are left alone. Returns what changed.
 */
export async function syncGroupTeams(sql: Queryable, tenantId: string, userId: string, groups: readonly string[]): Promise<{ added: string[]; removed: string[] }> {
  const removed = await sql<{ name: string }[]>`
    with gone as (
      delete from team_members m using teams t
      where m.team_id = t.id and m.user_id = ${userId} and m.via_groups and t.name <> all(${groups as string[]}::text[])
      returning t.name
    ) select name from gone`;
  const added = await sql<{ name: string }[]>`
    with joined as (
      insert into team_members (team_id, user_id, via_groups)
      select t.id, ${userId}, true from teams t where t.tenant_id = ${tenantId} and t.name = any(${groups as string[]}::text[])
      on conflict do nothing
      returning team_id
    ) select t.name from joined j join teams t on t.id = j.team_id`;
  return { added: added.map((r) => r.name).sort(), removed: removed.map((r) => r.name).sort() };
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
export async function heldRights(sql: Queryable, tenantId: string, who: { userIds: readonly string[] } | { teamId: string }, lock = false): Promise<HeldRights[]> {
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
