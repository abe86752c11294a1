import { hash } from 'node:crypto';
import type { Queryable, Sql } from '../db/database.js';
import { generateApiKey, hashApiKey, keyHint, parseApiKey } from './api-key-format.js';
import type { PrincipalCache } from './principal-cache.js';
import { findActiveKey, insertApiKey, keyHashExists, userJson, type ApiKeyRow } from './api-key-store.js';
import {
  everyPermission,
  intersectScopes,
  isPermission,
  normalizeScopes,
  tierPermissions,
  type DataScope,
  type Permission,
  type Principal,
  type Tier,
} from './principal.js';

export interface IssueKeyRequest {
  tenantId: string;
  name: string;
  tier: Exclude<Tier, 'usr'>;
  permissions?: readonly Permission[];
  /** svc keys: the data they see (none given: none). ro keys: limits them to these (none given: all data). */
  scopes?: readonly DataScope[];
  expiresAt?: Date | null;
}

/** The rights a key issued from this request acts with, before it exists (for the grant ceiling). */
export function rightsOfKeyRequest(request: Pick<IssueKeyRequest, 'tier' | 'permissions' | 'scopes'>): {
  permissions: Set<Permission>;
  scopes: 'all' | DataScope[];
} {
  const scopes =
    request.tier === 'adm' || (request.tier === 'ro' && request.scopes === undefined)
      ? 'all'
      : normalizeScopes(request.scopes ?? []);
  return { permissions: tierPermissions(request.tier, request.permissions ?? []), scopes };
}

/**
 * Creates a key and returns it in clear text: the only time it exists outside the caller's hands.
 * `svc` keys carry their own permissions and data scopes, `ro` keys optionally scopes; `adm` keys
 * hold everything. `within` runs in the same transaction (the audit event of the creation).
 */
export async function issueApiKey(
  sql: Sql,
  secret: string,
  request: IssueKeyRequest,
  within?: (tx: Queryable, id: string) => Promise<void>,
): Promise<{ id: string; key: string }> {
  const key = generateApiKey(request.tier);
  const scoped = request.tier === 'svc' || (request.tier === 'ro' && request.scopes !== undefined);
  const id = await sql.begin(async (tx) => {
    const id = await insertApiKey(tx, {
      tenantId: request.tenantId,
      name: request.name,
      tier: request.tier,
      keyHash: hashApiKey(secret, key),
      keyHint: keyHint(key),
      permissions: request.tier === 'svc' ? (request.permissions ?? []) : [],
      scopes: scoped ? (request.scopes ?? []) : [],
      narrowScopes: request.tier === 'ro' && scoped,
      expiresAt: request.expiresAt ?? null,
    });
    await within?.(tx, id);
    return id;
  });
  return { id, key };
}

/** Creates a usr token inside the caller's transaction (which has checked the user's limits). */
export async function insertUserToken(
  sql: Queryable,
  secret: string,
  token: {
    tenantId: string;
    userId: string;
    name: string;
    expiresAt: Date;
    permissions: readonly Permission[] | null;
    scopes: readonly DataScope[] | null;
  },
): Promise<{ id: string; key: string }> {
  const key = generateApiKey('usr');
  const id = await insertApiKey(sql, {
    tenantId: token.tenantId,
    name: token.name,
    tier: 'usr',
    keyHash: hashApiKey(secret, key),
    keyHint: keyHint(key),
    permissions: token.permissions ?? [],
    scopes: token.scopes ?? [],
    expiresAt: token.expiresAt,
    userId: token.userId,
    narrowPermissions: token.permissions !== null,
    narrowScopes: token.scopes !== null,
  });
  return { id, key };
}

/**
 * Installs an admin key given by the operator (CINV_BOOTSTRAP_ADMIN_KEY), once. Returns false when
 * it was already there.
 */
export async function installBootstrapKey(sql: Sql, secret: string, tenantId: string, key: string): Promise<boolean> {
  const parsed = parseApiKey(key);
  if (!parsed || parsed.tier !== 'adm') {
    throw new Error(
      'CINV_BOOTSTRAP_ADMIN_KEY: not a valid admin key (create one with `cinv keys generate --tier adm`)',
    );
  }
  const keyHash = hashApiKey(secret, key);
  if (await keyHashExists(sql, keyHash)) return false;
  await insertApiKey(sql, {
    tenantId,
    name: 'bootstrap',
    tier: 'adm',
    keyHash,
    keyHint: keyHint(key),
    permissions: [],
    scopes: [],
  });
  return true;
}

/**
 * The principal behind a key, or undefined for a malformed, unknown, revoked or expired key; from
 * `cache` when it holds the key (only keys found are kept).
 */
export async function principalForKey(
  sql: Sql,
  secret: string,
  key: string,
  now: Date,
  cache?: PrincipalCache,
): Promise<Principal | undefined> {
  const parsed = parseApiKey(key);
  if (!parsed) return undefined;
  // the cache goes by a plain digest of the key, a fifth of the keyed hash's cost on every request;
  // the keyed hash, which the database stores, is computed only when the cache does not answer
  const cacheKey = cache && hash('sha256', key, 'base64');
  const cached = cacheKey === undefined ? undefined : cache!.get(cacheKey, now.getTime());
  if (cached) return cached;
  const generation = cache?.generation ?? 0;
  const row = await findActiveKey(sql, { keyHash: hashApiKey(secret, key) }, now);
  if (!row || row.tier !== parsed.tier) return undefined;
  const principal = keyPrincipal(row);
  if (principal && cacheKey !== undefined) cache!.store(cacheKey, principal, row.expires_at, generation, now.getTime());
  return principal;
}

/** The principal of a key a web session was opened with, as the key is now (undefined once revoked or expired). */
export async function principalForKeyId(sql: Queryable, keyId: string, now: Date): Promise<Principal | undefined> {
  const row = await findActiveKey(sql, { id: keyId }, now);
  return row ? keyPrincipal(row) : undefined;
}

/** A user as signed in, with its rights as they are now (own and team grants); undefined when unknown or deactivated. */
export async function principalForUserId(
  sql: Queryable,
  tenantId: string,
  userId: string,
): Promise<Principal | undefined> {
  const [row] = await sql<{ user: NonNullable<ApiKeyRow['user']> }[]>`
    select ${userJson(sql)} as user
    from users u where u.id = ${userId} and u.tenant_id = ${tenantId}`;
  return row?.user.active ? userPrincipal(tenantId, row.user) : undefined;
}

function keyPrincipal(row: ApiKeyRow): Principal | undefined {
  if (row.tier === 'usr') return row.user?.active ? userPrincipal(row.tenant_id, row.user, row) : undefined;
  return {
    tenantId: row.tenant_id,
    kind: 'api_key',
    id: row.id,
    name: row.name,
    tier: row.tier,
    superadmin: false,
    permissions: tierPermissions(row.tier, row.permissions),
    scopes: row.tier === 'svc' || (row.tier === 'ro' && row.narrow_scopes) ? normalizeScopes(row.scopes) : 'all',
    keyId: row.id,
  };
}

/**
 * A user, with its rights as they are now: through a usr token, of which a narrowed one holds only
 * the part of them it names, or through a sign-in session (no token). A superadmin bypasses the
 * checks unless the token is narrowed.
 */
export function userPrincipal(tenantId: string, user: NonNullable<ApiKeyRow['user']>, token?: ApiKeyRow): Principal {
  const held = user.superadmin ? everyPermission() : new Set(user.permissions.filter(isPermission));
  const userScopes = user.superadmin ? 'all' : normalizeScopes(user.scopes);
  return {
    tenantId,
    kind: 'user',
    id: user.id,
    name: user.name,
    tier: token ? 'usr' : undefined,
    superadmin: user.superadmin && !(token?.narrow_permissions || token?.narrow_scopes),
    permissions: token?.narrow_permissions ? new Set(token.permissions.filter((p) => held.has(p))) : held,
    scopes: token?.narrow_scopes ? intersectScopes(normalizeScopes(token.scopes), userScopes) : userScopes,
    user: { id: user.id, name: user.name, email: user.email },
    keyId: token?.id,
  };
}
