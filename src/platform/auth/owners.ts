import type { Queryable } from '../db/database.js';
import { covers, rightsOf, type Rights } from './grant-ceiling.js';
import {
  normalizeScopes,
  seesAllData,
  tierPermissions,
  type DataScope,
  type Permission,
  type Principal,
  type Tier,
} from './principal.js';

/**
 * Objects with an owner (saved views, baselines, user tokens) are acted on only by their owner or
 * by a principal whose rights cover the owner's: nobody reaches, through what another principal
 * owns, further than that principal could. An object recorded without an owner belongs to the
 * tenant's administrators: principals with all data.
 */

/** Who owns what a principal makes: the person behind a user token or session, else the key. */
export type Owner = { userId: string; apiKeyId: null } | { userId: null; apiKeyId: string };

export const ownerOf = (principal: Principal): Owner =>
  principal.kind === 'user' ? { userId: principal.id, apiKeyId: null } : { userId: null, apiKeyId: principal.id };

export const isOwnedBy = (owner: Owner | null, principal: Principal): boolean =>
  owner !== null && (principal.kind === 'user' ? owner.userId === principal.id : owner.apiKeyId === principal.id);

/**
 * What an owner is granted, whether active or not (a deactivated user, a revoked key): what acting
 * on its objects requires holding. Undefined when the owner is not of the tenant.
 */
export async function rightsOfOwner(sql: Queryable, tenantId: string, owner: Owner): Promise<Rights | undefined> {
  if (owner.userId !== null) {
    const [user] = await sql<{ superadmin: boolean; permissions: Permission[]; scopes: DataScope[] }[]>`
      select u.superadmin,
             (select coalesce(json_agg(distinct g.permission), '[]') from grants g
               where g.user_id = u.id or g.team_id in (select m.team_id from team_members m where m.user_id = u.id)) as permissions,
             (select coalesce(json_agg(distinct jsonb_build_object('sourceId', d.source_id::text, 'scopeId', d.scope_id)), '[]') from data_scopes d
               where d.user_id = u.id or d.team_id in (select m.team_id from team_members m where m.user_id = u.id)) as scopes
      from users u where u.id = ${owner.userId} and u.tenant_id = ${tenantId}`;
    return user && { superadmin: user.superadmin, permissions: user.permissions, scopes: user.scopes };
  }
  const [key] = await sql<{ tier: Tier; permissions: Permission[]; narrow_scopes: boolean; scopes: DataScope[] }[]>`
    select k.tier, k.permissions, k.narrow_scopes,
           coalesce((select json_agg(json_build_object('sourceId', s.source_id::text, 'scopeId', s.scope_id))
                     from api_key_scopes s where s.api_key_id = k.id), '[]') as scopes
    from api_keys k where k.id = ${owner.apiKeyId} and k.tenant_id = ${tenantId}`;
  if (!key) return undefined;
  const scoped = key.tier === 'svc' || key.tier === 'usr' || (key.tier === 'ro' && key.narrow_scopes);
  return {
    permissions: tierPermissions(key.tier, key.permissions),
    scopes: scoped ? normalizeScopes(key.scopes) : 'all',
  };
}

/**
 * Whether the principal may change or remove an object of this owner: it is the owner, its rights
 * cover the owner's, or the object has no owner (or one no longer known) and the principal sees
 * all data. The route has checked the permission the change needs.
 */
export async function mayActOnOwned(sql: Queryable, principal: Principal, owner: Owner | null): Promise<boolean> {
  if (isOwnedBy(owner, principal)) return true;
  const rights = owner === null ? undefined : await rightsOfOwner(sql, principal.tenantId, owner);
  if (rights === undefined) return seesAllData(principal);
  return covers(rightsOf(principal), rights);
}
