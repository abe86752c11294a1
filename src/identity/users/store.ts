import { uuidv7 } from 'uuidv7';
import type { Queryable } from '../../platform/db/database.js';

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

const USER_COLUMNS = 'u.id, u.name, u.email, u.issuer, u.superadmin, u.created_at, u.deactivated_at, u.last_login_at';

export async function insertUser(
  sql: Queryable,
  tenantId: string,
  user: { name: string; email: string | null; issuer?: string; subject?: string },
): Promise<UserRow> {
  const [row] = await sql<UserRow[]>`
    insert into users as u (id, tenant_id, name, email, issuer, subject)
    values (${uuidv7()}, ${tenantId}, ${user.name}, ${user.email}, ${user.issuer ?? null}, ${user.subject ?? null})
    returning ${sql.unsafe(USER_COLUMNS)}`;
  return row!;
}

export async function findUser(sql: Queryable, tenantId: string, id: string): Promise<UserRow | undefined> {
  const [row] = await sql<
    UserRow[]
  >`select ${sql.unsafe(USER_COLUMNS)} from users u where u.tenant_id = ${tenantId} and u.id = ${id}`;
  return row;
}

export async function findUserByEmail(sql: Queryable, tenantId: string, email: string): Promise<UserRow | undefined> {
  const [row] = await sql<
    UserRow[]
  >`select ${sql.unsafe(USER_COLUMNS)} from users u where u.tenant_id = ${tenantId} and lower(u.email) = lower(${email})`;
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
export async function listUsers(
  sql: Queryable,
  tenantId: string,
  criteria: UserListCriteria,
): Promise<{ rows: UserRow[]; total: number }> {
  const where = sql`u.tenant_id = ${tenantId}
    ${criteria.email === undefined ? sql`` : sql`and lower(u.email) = lower(${criteria.email})`}
    ${criteria.active === undefined ? sql`` : criteria.active ? sql`and u.deactivated_at is null` : sql`and u.deactivated_at is not null`}
    ${criteria.teamId === undefined ? sql`` : sql`and exists (select 1 from team_members m where m.user_id = u.id and m.team_id = ${criteria.teamId})`}`;
  const [rows, [count]] = await Promise.all([
    sql<
      UserRow[]
    >`select ${sql.unsafe(USER_COLUMNS)} from users u where ${where} order by u.created_at, u.id limit ${criteria.limit} offset ${criteria.offset}`,
    sql<{ total: number }[]>`select count(*)::int as total from users u where ${where}`,
  ]);
  return { rows, total: count?.total ?? 0 };
}

export async function setDeactivated(
  sql: Queryable,
  tenantId: string,
  id: string,
  at: Date | null,
): Promise<UserRow | undefined> {
  const [row] = await sql<UserRow[]>`
    update users u set deactivated_at = ${at} where u.tenant_id = ${tenantId} and u.id = ${id} returning ${sql.unsafe(USER_COLUMNS)}`;
  return row;
}

export async function setSuperadmin(
  sql: Queryable,
  tenantId: string,
  id: string,
  superadmin: boolean,
): Promise<UserRow | undefined> {
  const [row] = await sql<UserRow[]>`
    update users u set superadmin = ${superadmin} where u.tenant_id = ${tenantId} and u.id = ${id} returning ${sql.unsafe(USER_COLUMNS)}`;
  return row;
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
export async function signInSsoUser(
  sql: Queryable,
  tenantId: string,
  identity: SsoIdentity,
  now: Date,
): Promise<SsoSignIn> {
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
    user = await insertUser(sql, tenantId, {
      name: identity.name,
      email: identity.email,
      issuer: identity.issuer,
      subject: identity.subject,
    });
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
export async function syncGroupTeams(
  sql: Queryable,
  tenantId: string,
  userId: string,
  groups: readonly string[],
): Promise<{ added: string[]; removed: string[] }> {
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

/** The teams a user belongs to, by name. */
export function teamsOf(sql: Queryable, userId: string): Promise<{ id: string; name: string }[]> {
  return sql<{ id: string; name: string }[]>`
    select t.id, t.name from teams t join team_members m on m.team_id = t.id where m.user_id = ${userId} order by t.name`;
}
