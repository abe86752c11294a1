import { principalForKeyId, principalForUserId } from '../../platform/auth/api-keys.js';
import { covers, rightsOf, type Rights } from '../../platform/auth/grant-ceiling.js';
import { everyPermission, type Principal } from '../../platform/auth/principal.js';
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../platform/db/database.js';
import { notFound } from '../../platform/errors.js';
import { findSubscription, type SubscriptionRow } from './store.js';

/** The owner a subscription reads with: the key or token presented, or the person signed in. */
export function ownerOf(principal: Principal): { kind: 'api_key' | 'user'; id: string; name: string } {
  if (principal.keyId)
    return {
      kind: 'api_key',
      id: principal.keyId,
      name: principal.user ? `${principal.user.name} (token ${principal.name})` : principal.name,
    };
  return { kind: 'user', id: principal.id, name: principal.user?.email ?? principal.name };
}

/** The owner's rights as they are now; undefined once it may not read (revoked, expired, deactivated, another tenant). */
export async function ownerPrincipal(
  app: AppContext,
  row: SubscriptionRow,
  sql: Queryable = app.sql,
): Promise<Principal | undefined> {
  const now = app.now();
  const principal =
    row.owner_kind === 'api_key'
      ? await principalForKeyId(sql, row.owner_id, now)
      : await principalForUserId(sql, row.tenant_id, row.owner_id);
  return principal && principal.tenantId === row.tenant_id ? principal : undefined;
}

/** Taken as the rights of an owner who can no longer act: only a principal holding everything covers them. */
const EVERYTHING: Rights = { permissions: everyPermission(), scopes: 'all' };

/** The owners' rights read during one request, by owner (a list reads each owner once). */
export type OwnerRights = Map<string, Promise<Rights>>;

/**
 * The one rule of who sees and acts on a subscription (reads it, its deliveries; changes, tests,
 * rotates, redelivers or deletes it): its owner (the same key, token or sign-in), or a principal
 * whose rights cover the owner's as they are now, by the grant ceiling's measure (a superadmin, or
 * one holding every permission and data scope the owner holds). An owner who can no longer act
 * (revoked, expired, deactivated) is taken to hold everything. A subscription shows its sink, its
 * filters and the counts of what its owner's rights selected, and its secret signs what the
 * receiver trusts: nobody with less than the owner may see or touch it.
 */
export async function maySeeSubscription(
  app: AppContext,
  principal: Principal,
  row: SubscriptionRow,
  sql: Queryable = app.sql,
  owners: OwnerRights = new Map(),
): Promise<boolean> {
  if (principal.tenantId !== row.tenant_id) return false;
  const self = ownerOf(principal);
  if (self.kind === row.owner_kind && self.id === row.owner_id) return true;
  if (principal.superadmin) return true;
  const key = `${row.owner_kind}:${row.owner_id}`;
  let rights = owners.get(key);
  if (!rights) {
    rights = ownerPrincipal(app, row, sql).then((owner) => (owner ? rightsOf(owner) : EVERYTHING));
    owners.set(key, rights);
  }
  return covers(rightsOf(principal), await rights);
}

export const noSuchSubscription = (id: string) => notFound('Subscription not found', { subscription_id: id });

/**
 * The subscription, locked for the transaction's change; a 404 when the tenant has none with this
 * id or the principal may not see it (maySeeSubscription), as if absent.
 */
export async function lockedSubscription(
  app: AppContext,
  tx: Queryable,
  principal: Principal,
  id: string,
): Promise<SubscriptionRow> {
  const row = await findSubscription(tx, principal.tenantId, id, true);
  if (!row || !(await maySeeSubscription(app, principal, row, tx))) throw noSuchSubscription(id);
  return row;
}
