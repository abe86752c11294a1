import { uuidv7 } from 'uuidv7';
import type { Queryable } from '../db/database.js';
import type { DataScope, Permission, Tier } from './principal.js';

export interface ApiKeyRow {
  id: string;
  tenant_id: string;
  name: string;
  tier: Tier;
  permissions: Permission[];
  scopes: DataScope[];
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
}

/** Finds the live key with this hash, with its scopes, in one round trip. */
export async function findActiveKey(sql: Queryable, keyHash: Buffer, now: Date): Promise<ApiKeyRow | undefined> {
  const [row] = await sql<ApiKeyRow[]>`
    select k.id, k.tenant_id, k.name, k.tier, k.permissions,
           coalesce((select json_agg(json_build_object('sourceId', s.source_id::text, 'scopeId', s.scope_id))
                     from api_key_scopes s where s.api_key_id = k.id), '[]') as scopes
    from api_keys k
    where k.key_hash = ${keyHash}
      and k.revoked_at is null
      and (k.expires_at is null or k.expires_at > ${now})`;
  return row;
}

export async function insertApiKey(sql: Queryable, key: NewApiKey): Promise<string> {
  const id = uuidv7();
  await sql`
    insert into api_keys (id, tenant_id, name, tier, key_hash, key_hint, permissions, expires_at)
    values (${id}, ${key.tenantId}, ${key.name}, ${key.tier}, ${key.keyHash}, ${key.keyHint},
            ${key.permissions as string[]}, ${key.expiresAt ?? null})`;
  for (const scope of key.scopes) {
    await sql`insert into api_key_scopes (api_key_id, source_id, scope_id) values (${id}, ${scope.sourceId}, ${scope.scopeId})`;
  }
  return id;
}

export async function keyHashExists(sql: Queryable, keyHash: Buffer): Promise<boolean> {
  const [row] = await sql`select 1 from api_keys where key_hash = ${keyHash}`;
  return row !== undefined;
}
