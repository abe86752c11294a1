import { uuidv7 } from 'uuidv7';
import type { Queryable } from '../db/database.js';
import type { Fragment } from './scope.js';
import type { DataScope, Permission, Tier } from './principal.js';

export interface ApiKeyRow {
  id: string;
  tenant_id: string;
  name: string;
  tier: Tier;
  permissions: Permission[];
  scopes: DataScope[];
  narrow_permissions: boolean;
  narrow_scopes: boolean;
  expires_at: Date | null;
  /** The owner of a usr token, with the rights its grants and teams give it now. */
  user: {
    id: string;
    name: string;
    email: string | null;
    superadmin: boolean;
    active: boolean;
    permissions: Permission[];
    scopes: DataScope[];
  } | null;
}

export interface NewApiKey {
  tenantId: string;
  name: string;
  tier: Tier;
  keyHash: Buffer;
  keyHint: string;
  permissions: readonly Permission[];
  scopes: readonly DataScope[];
  expiresAt?: Date | null;
  /** usr tokens: the owner, and whether the token names its own subset of the owner's rights. */
  userId?: string;
  narrowPermissions?: boolean;
  narrowScopes?: boolean;
}

/**
 * Finds the live key with this hash, with its scopes and, for a usr token, its user's current
 * rights (direct grants and those of the user's teams), in one round trip. What callers keep of it
 * (PrincipalCache) is dropped on every change, so a revoked token, a deactivated user or a
 * withdrawn grant counts from the next request on.
 */
export async function findActiveKey(
  sql: Queryable,
  match: { keyHash: Buffer } | { id: string },
  now: Date,
): Promise<ApiKeyRow | undefined> {
  const [row] = await sql<ApiKeyRow[]>`
    select k.id, k.tenant_id, k.name, k.tier, k.permissions, k.narrow_permissions, k.narrow_scopes, k.expires_at,
           coalesce((select json_agg(json_build_object('sourceId', s.source_id::text, 'scopeId', s.scope_id))
                     from api_key_scopes s where s.api_key_id = k.id), '[]') as scopes,
           case when u.id is null then null else ${userJson(sql)} end as user
    from api_keys k
    left join users u on u.id = k.user_id
    where ${'keyHash' in match ? sql`k.key_hash = ${match.keyHash}` : sql`k.id = ${match.id}`}
      and k.revoked_at is null
      and (k.expires_at is null or k.expires_at > ${now})`;
  return row;
}

/** The user `u` with its rights as they are now (own and team grants), as a JSON object (ApiKeyRow['user']). */
export function userJson(sql: Queryable): Fragment {
  return sql`
    json_build_object(
      'id', u.id, 'name', u.name, 'email', u.email, 'superadmin', u.superadmin, 'active', u.deactivated_at is null,
      'permissions', (${userPermissions(sql, sql`u.id`)}),
      'scopes', (${userScopes(sql, sql`u.id`)}))`;
}

/** The permissions a user holds now: its own grants and its teams', as a JSON array. */
export function userPermissions(sql: Queryable, userId: Fragment): Fragment {
  return sql`
    select coalesce(json_agg(distinct g.permission), '[]') from grants g
    where g.user_id = ${userId} or g.team_id in (select m.team_id from team_members m where m.user_id = ${userId})`;
}

/** The data scopes a user holds now: its own and its teams', as a JSON array of DataScope. */
export function userScopes(sql: Queryable, userId: Fragment): Fragment {
  return sql`
    select coalesce(json_agg(distinct jsonb_build_object('sourceId', d.source_id::text, 'scopeId', d.scope_id)), '[]') from data_scopes d
    where d.user_id = ${userId} or d.team_id in (select m.team_id from team_members m where m.user_id = ${userId})`;
}

export async function insertApiKey(sql: Queryable, key: NewApiKey): Promise<string> {
  const id = uuidv7();
  await sql`
    insert into api_keys (id, tenant_id, name, tier, key_hash, key_hint, permissions, expires_at, user_id, narrow_permissions, narrow_scopes)
    values (${id}, ${key.tenantId}, ${key.name}, ${key.tier}, ${key.keyHash}, ${key.keyHint},
            ${key.permissions as string[]}, ${key.expiresAt ?? null}, ${key.userId ?? null},
            ${key.narrowPermissions ?? false}, ${key.narrowScopes ?? false})`;
  for (const scope of key.scopes) {
    await sql`insert into api_key_scopes (api_key_id, source_id, scope_id) values (${id}, ${scope.sourceId}, ${scope.scopeId})`;
  }
  return id;
}

export async function keyHashExists(sql: Queryable, keyHash: Buffer): Promise<boolean> {
  const [row] = await sql`select 1 from api_keys where key_hash = ${keyHash}`;
  return row !== undefined;
}

export interface ApiKeyListing {
  id: string;
  name: string;
  tier: Tier;
  key_hint: string;
  permissions: Permission[];
  scopes: DataScope[];
  /** ro keys: whether the key is limited to `scopes` (else it reads all data). */
  narrow_scopes: boolean;
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

/** The tenant's API keys (not user tokens), newest first; revoked ones only when asked for. */
export async function listApiKeys(
  sql: Queryable,
  tenantId: string,
  options: { id?: string; includeRevoked: boolean },
): Promise<ApiKeyListing[]> {
  return sql<ApiKeyListing[]>`
    select k.id, k.name, k.tier, k.key_hint, k.permissions, k.narrow_scopes, k.created_at, k.expires_at, k.revoked_at, k.last_used_at,
           coalesce((select json_agg(json_build_object('sourceId', s.source_id::text, 'scopeId', s.scope_id))
                     from api_key_scopes s where s.api_key_id = k.id), '[]') as scopes
    from api_keys k
    where k.tenant_id = ${tenantId} and k.tier <> 'usr'
      ${options.id === undefined ? sql`` : sql`and k.id = ${options.id}`}
      ${options.includeRevoked ? sql`` : sql`and k.revoked_at is null`}
    order by k.created_at desc, k.id desc`;
}

export async function revokeApiKey(sql: Queryable, tenantId: string, id: string, now: Date): Promise<boolean> {
  const result =
    await sql`update api_keys set revoked_at = ${now} where tenant_id = ${tenantId} and id = ${id} and tier <> 'usr' and revoked_at is null`;
  return result.count > 0;
}

/** Records that a key was used, for listings; callers throttle it (it is a write). */
export async function touchKey(sql: Queryable, id: string, now: Date): Promise<void> {
  await sql`update api_keys set last_used_at = ${now} where id = ${id}`;
}
