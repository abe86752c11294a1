import type { Sql } from '../db/database.js';
import { generateApiKey, hashApiKey, keyHint, parseApiKey } from './api-key-format.js';
import { findActiveKey, insertApiKey, keyHashExists } from './api-key-store.js';
import { normalizeScopes, tierPermissions, type DataScope, type Permission, type Principal, type Tier } from './principal.js';

export interface IssueKeyRequest {
  tenantId: string;
  name: string;
  tier: Exclude<Tier, 'usr'>;
  permissions?: readonly Permission[];
  scopes?: readonly DataScope[];
  expiresAt?: Date | null;
}

/**
 * Creates a key and returns it in clear text: the only time it exists outside the caller's hands.
 * Only `svc` keys carry their own permissions and data scopes; the other tiers have fixed ones.
 */
export async function issueApiKey(sql: Sql, secret: string, request: IssueKeyRequest): Promise<{ id: string; key: string }> {
  const key = generateApiKey(request.tier);
  const own = request.tier === 'svc';
  const id = await sql.begin((tx) =>
    insertApiKey(tx, {
      tenantId: request.tenantId,
      name: request.name,
      tier: request.tier,
      keyHash: hashApiKey(secret, key),
      keyHint: keyHint(key),
      permissions: own ? (request.permissions ?? []) : [],
      scopes: own ? (request.scopes ?? []) : [],
      expiresAt: request.expiresAt ?? null,
    }),
  );
  return { id, key };
}

/**
 * Installs an admin key given by the operator (CINV_BOOTSTRAP_ADMIN_KEY), once. Returns false when
 * it was already there.
 */
export async function installBootstrapKey(sql: Sql, secret: string, tenantId: string, key: string): Promise<boolean> {
  const parsed = parseApiKey(key);
  if (!parsed || parsed.tier !== 'adm') {
    throw new Error('CINV_BOOTSTRAP_ADMIN_KEY: not a valid admin key (create one with `cinv keys generate --tier adm`)');
  }
  const keyHash = hashApiKey(secret, key);
  if (await keyHashExists(sql, keyHash)) return false;
  await insertApiKey(sql, { tenantId, name: 'bootstrap', tier: 'adm', keyHash, keyHint: keyHint(key), permissions: [], scopes: [] });
  return true;
}

/** The principal behind a key, or undefined for a malformed, unknown, revoked or expired key. */
export async function principalForKey(sql: Sql, secret: string, key: string, now: Date): Promise<Principal | undefined> {
  const parsed = parseApiKey(key);
  if (!parsed) return undefined;
  const row = await findActiveKey(sql, hashApiKey(secret, key), now);
  if (!row || row.tier !== parsed.tier) return undefined;
  return {
    tenantId: row.tenant_id,
    kind: 'api_key',
    id: row.id,
    name: row.name,
    tier: row.tier,
    superadmin: false,
    permissions: tierPermissions(row.tier, row.permissions),
    scopes: row.tier === 'svc' || row.tier === 'usr' ? normalizeScopes(row.scopes) : 'all',
  };
}
