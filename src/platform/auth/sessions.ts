import { createHmac, randomBytes } from 'node:crypto';
import { derivedKey } from '../config/derived-key.js';
import type { Queryable } from '../db/database.js';
import { userJson, type ApiKeyRow } from './api-key-store.js';

/**
 * Server-side sessions for people signed in through single sign-on (or, for the web interface,
 * with a key exchanged at sign-in). The cookie carries a random identifier; the table keeps only
 * its keyed hash, so a copy of the table opens no session. Deleting the row ends the session on the
 * next request, on every replica.
 */
export interface SessionRow {
  tenant_id: string;
  /** Exactly one of these: the signed-in user, or the key the session was opened with. */
  user_id: string | null;
  api_key_id?: string | null;
  created_at: Date;
  expires_at: Date;
}

const hashKey = (secret: string) => derivedKey(secret, 'cinv session id v1');
const idHash = (secret: string, id: string): Buffer => createHmac('sha256', hashKey(secret)).update(id).digest();

/** A new session; returns the identifier for the cookie, which exists nowhere else. */
export async function createSession(sql: Queryable, secret: string, session: SessionRow): Promise<string> {
  const id = randomBytes(32).toString('base64url');
  await sql`
    insert into sessions (id_hash, tenant_id, user_id, api_key_id, created_at, expires_at)
    values (${idHash(secret, id)}, ${session.tenant_id}, ${session.user_id}, ${session.api_key_id ?? null},
            ${session.created_at}, ${session.expires_at})`;
  return id;
}

/** The live session behind a cookie identifier, or undefined (unknown, ended or expired). */
export async function findSession(
  sql: Queryable,
  secret: string,
  id: string,
  now: Date,
): Promise<SessionRow | undefined> {
  const [row] = await sql<SessionRow[]>`
    select tenant_id, user_id, api_key_id, created_at, expires_at from sessions
    where id_hash = ${idHash(secret, id)} and expires_at > ${now}`;
  return row;
}

export interface SessionUser extends SessionRow {
  /** Null for a session opened with a key: the key's own rights are looked up as they are now. */
  user: NonNullable<ApiKeyRow['user']> | null;
}

/**
 * The live session behind a cookie identifier with its user's rights as they are now (own and
 * team grants), in one round trip; undefined when unknown, ended or expired.
 */
export async function findSessionUser(
  sql: Queryable,
  secret: string,
  id: string,
  now: Date,
): Promise<SessionUser | undefined> {
  const [row] = await sql<SessionUser[]>`
    select s.tenant_id, s.user_id, s.api_key_id, s.created_at, s.expires_at,
           case when u.id is null then null else ${userJson(sql)} end as user
    from sessions s left join users u on u.id = s.user_id
    where s.id_hash = ${idHash(secret, id)} and s.expires_at > ${now}`;
  return row;
}

/** Moves a session's expiry (rolling sessions), at most once a minute per session. */
export async function extendSession(sql: Queryable, secret: string, id: string, expiresAt: Date): Promise<void> {
  await sql`
    update sessions set expires_at = ${expiresAt}
    where id_hash = ${idHash(secret, id)} and expires_at < ${new Date(expiresAt.getTime() - 60_000)}`;
}

export async function endSession(sql: Queryable, secret: string, id: string): Promise<void> {
  await sql`delete from sessions where id_hash = ${idHash(secret, id)}`;
}

/** Ends every session of a user (deactivation). */
export async function endSessionsOf(sql: Queryable, userId: string): Promise<void> {
  await sql`delete from sessions where user_id = ${userId}`;
}

export async function trimExpiredSessions(sql: Queryable, now: Date): Promise<number> {
  const rows = await sql`delete from sessions where expires_at <= ${now} returning 1`;
  return rows.length;
}
