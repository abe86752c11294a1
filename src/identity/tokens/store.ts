import type { Queryable } from '../../platform/db/database.js';
import type { DataScope, Permission } from '../../platform/auth/principal.js';

export interface TokenRow {
  id: string;
  name: string;
  key_hint: string;
  created_at: Date;
  expires_at: Date;
  last_used_at: Date | null;
  narrow_permissions: boolean;
  narrow_scopes: boolean;
  permissions: Permission[];
  scopes: DataScope[];
}

/** A user's tokens that are not revoked, newest first (expired ones included, marked by their date). */
export async function listTokens(sql: Queryable, userId: string): Promise<TokenRow[]> {
  return sql<TokenRow[]>`
    select k.id, k.name, k.key_hint, k.created_at, k.expires_at, k.last_used_at, k.narrow_permissions, k.narrow_scopes, k.permissions,
           coalesce((select json_agg(json_build_object('sourceId', s.source_id::text, 'scopeId', s.scope_id))
                     from api_key_scopes s where s.api_key_id = k.id), '[]') as scopes
    from api_keys k
    where k.user_id = ${userId} and k.tier = 'usr' and k.revoked_at is null
    order by k.created_at desc, k.id desc`;
}

/**
 * Locks the user's row for the rest of the transaction and counts its live tokens: two creations
 * racing for the tenth place are decided one after the other.
 */
export async function lockAndCountLiveTokens(sql: Queryable, userId: string, now: Date): Promise<number> {
  await sql`select 1 from users where id = ${userId} for update`;
  const [row] = await sql<{ n: number }[]>`
    select count(*)::int as n from api_keys
    where user_id = ${userId} and tier = 'usr' and revoked_at is null and expires_at > ${now}`;
  return row?.n ?? 0;
}

export async function revokeToken(sql: Queryable, userId: string, tokenId: string, now: Date): Promise<boolean> {
  const result = await sql`
    update api_keys set revoked_at = ${now} where id = ${tokenId} and user_id = ${userId} and tier = 'usr' and revoked_at is null`;
  return result.count > 0;
}
