import type { Context } from 'koa';
import { uuidv7 } from 'uuidv7';
import type { Sealed } from '../../platform/auth/envelope.js';
import { can, type Principal } from '../../platform/auth/principal.js';
import { auditChange } from '../../platform/audit/log.js';
import { feedCriteria } from '../changes/feed.js';
import type { AppContext } from '../../context.js';
import { conflict, forbidden } from '../../platform/errors.js';
import { feedEnd } from '../records/feed.js';
import { lockedSubscription, maySeeSubscription, noSuchSubscription, ownerOf, type OwnerRights } from './access.js';
import { recutForOwner } from './batch-store.js';
import { checkedSink } from './receivers.js';
import type { SubscriptionInput } from './schema.js';
import { masterKeys, seal, unseal } from './secrets.js';
import { newSigningSecret } from './signing.js';
import {
  deleteSubscription,
  findSubscription,
  insertSubscription,
  listSubscriptions,
  updateSubscription,
  type StoredSink,
  type SubscriptionRow,
  type SubscriptionSettings,
} from './store.js';

export type { DeliveryLogRow } from './batch-store.js';
export type { SubscriptionRow } from './store.js';

function checkedCriteria(input: SubscriptionInput): { filters: string[]; search: string | null } {
  const filters = input.filter === undefined ? [] : Array.isArray(input.filter) ? input.filter : [input.filter];
  // the same parser as the deliveries: a filter it refuses is refused now, with the same message
  feedCriteria({ filter: filters, search: input.search });
  return { filters, search: input.search ?? null };
}

/** What a POST or PUT stores: the principal as owner, the checked sink and criteria, the sealed secrets. */
function settingsOf(
  app: AppContext,
  principal: Principal,
  input: SubscriptionInput,
  sink: StoredSink,
  criteria: { filters: string[]; search: string | null },
  sealed: Sealed,
): SubscriptionSettings {
  return {
    name: input.name,
    owner: ownerOf(principal),
    sink,
    ...criteria,
    qualityAlerts: input.quality_alerts ?? false,
    enabled: input.enabled ?? true,
    sealed,
    now: app.now(),
  };
}

const nameTaken = (name: string) => conflict(`A subscription named "${name}" exists already`, { name });

function mayRead(principal: Principal): void {
  if (!can(principal, 'changes', 'read')) {
    throw forbidden("A subscription delivers change records with its owner's rights: the owner needs changes:read", {
      permission: 'changes:read',
    });
  }
}

/** The tenant's subscriptions the principal may see (maySeeSubscription), by name. */
export async function subscriptionsOf(app: AppContext, principal: Principal): Promise<SubscriptionRow[]> {
  const rows = await listSubscriptions(app.sql, principal.tenantId);
  const owners: OwnerRights = new Map();
  const visible = await Promise.all(rows.map((row) => maySeeSubscription(app, principal, row, app.sql, owners)));
  return rows.filter((_, i) => visible[i]);
}

/** The subscription; a 404 when the tenant has none with this id or the principal may not see it, as if absent. */
export async function subscriptionOf(app: AppContext, principal: Principal, id: string): Promise<SubscriptionRow> {
  const row = await findSubscription(app.sql, principal.tenantId, id);
  if (!row || !(await maySeeSubscription(app, principal, row))) throw noSuchSubscription(id);
  return row;
}

/**
 * A new subscription owned by the principal, delivering what commits from now on. The signing
 * secret is returned this once.
 */
export async function createSubscription(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  input: SubscriptionInput,
): Promise<{ row: SubscriptionRow; secret: string }> {
  mayRead(principal);
  const criteria = checkedCriteria(input);
  const sink = await checkedSink(app, principal, input.sink);
  const keys = masterKeys(app);
  const id = uuidv7();
  const secret = newSigningSecret();
  return app.sql.begin(async (tx) => {
    const sealed = await seal(tx, keys, principal.tenantId, id, 'current', { secret, headers: sink.headers });
    const row = await insertSubscription(tx, {
      id,
      tenantId: principal.tenantId,
      ...settingsOf(app, principal, input, sink.stored, criteria, sealed),
      feed: await feedEnd(tx),
    });
    if (!row) throw nameTaken(input.name);
    await auditChange(
      tx,
      app.audit,
      ctx,
      principal,
      'subscription.created',
      { type: 'subscription', id, name: input.name },
      { sink: sink.stored.type },
    );
    return { row, secret };
  });
}

/**
 * Replaces a subscription's settings. Whoever changes it becomes its owner: it then delivers what
 * they may read, so nobody can point another's subscription at a receiver of their own and read with
 * the other's rights. Batches cut for the previous owner and not yet delivered are set aside and
 * their records cut again for the new one (see recutForOwner). The secret stays; header values
 * given replace the stored ones.
 */
export async function replaceSubscription(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  id: string,
  input: SubscriptionInput,
): Promise<SubscriptionRow> {
  mayRead(principal);
  const criteria = checkedCriteria(input);
  const sink = await checkedSink(app, principal, input.sink);
  const keys = masterKeys(app);
  return app.sql.begin(async (tx) => {
    const existing = await lockedSubscription(app, tx, principal, id);
    const { secret } = await unseal(tx, keys, existing, 'current');
    const sealed = await seal(tx, keys, principal.tenantId, id, 'current', { secret, headers: sink.headers });
    let row: SubscriptionRow | undefined;
    try {
      row = await updateSubscription(
        tx,
        principal.tenantId,
        id,
        settingsOf(app, principal, input, sink.stored, criteria, sealed),
      );
    } catch (error) {
      if ((error as { code?: string }).code === '23505') throw nameTaken(input.name);
      throw error;
    }
    if (row!.owner_kind !== existing.owner_kind || row!.owner_id !== existing.owner_id) await recutForOwner(tx, id);
    await auditChange(
      tx,
      app.audit,
      ctx,
      principal,
      'subscription.changed',
      { type: 'subscription', id, name: input.name },
      { sink: sink.stored.type, enabled: row!.enabled },
    );
    return row!;
  });
}

export async function removeSubscription(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  id: string,
): Promise<void> {
  await app.sql.begin(async (tx) => {
    await lockedSubscription(app, tx, principal, id);
    const name = await deleteSubscription(tx, principal.tenantId, id);
    if (name === undefined) throw noSuchSubscription(id);
    await auditChange(tx, app.audit, ctx, principal, 'subscription.deleted', { type: 'subscription', id, name });
  });
}
