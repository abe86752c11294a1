import type { Context } from 'koa';
import { uuidv7 } from 'uuidv7';
import { principalForKeyId, principalForUserId } from '../auth/api-keys.js';
import { MasterKeys, openForTenant, sealForTenant, type Sealed } from '../auth/envelope.js';
import { can, type Principal } from '../auth/principal.js';
import { auditChange } from '../audit/log.js';
import { feedCriteria } from '../changes/feed.js';
import type { AppContext } from '../context.js';
import type { Queryable } from '../db/database.js';
import { conflict, forbidden, notFound, validationFailed } from '../errors.js';
import { feedEnd } from '../history/feed.js';
import { AllowedHosts, refusedEndpoint } from '../net/endpoint.js';
import type { DeliveryQuery, SubscriptionInput } from './schema.js';
import { newSigningSecret } from './signing.js';
import type { Target } from './sinks.js';
import {
  deleteSubscription,
  findSubscription,
  insertSubscription,
  listDeliveries,
  listSubscriptions,
  redeliver,
  rotateSecret,
  updateSubscription,
  type DeliveryRow,
  type StoredSink,
  type SubscriptionRow,
  type SubscriptionSettings,
} from './store.js';

export type { DeliveryRow, SubscriptionRow } from './store.js';

/** What a subscription keeps sealed: its signing secret and the values of its extra headers. */
interface Secrets {
  secret: string;
  headers: Record<string, string>;
}

const aad = (tenantId: string, subscriptionId: string, slot: 'current' | 'previous') => (version: number) =>
  `cinv subscription secret v1|${tenantId}|${subscriptionId}|${slot}|${version}`;

function masterKeys(app: AppContext): MasterKeys {
  if (!app.config.masterKey) {
    throw conflict('Subscriptions cannot be stored: their signing secrets are sealed with CINV_MASTER_KEY, which is not set on this server', {
      reason: 'master_key_missing',
    });
  }
  return new MasterKeys(app.config.masterKey, app.config.previousMasterKey);
}

const seal = (sql: Queryable, keys: MasterKeys, tenantId: string, id: string, slot: 'current' | 'previous', secrets: Secrets): Promise<Sealed> =>
  sealForTenant(sql, keys, tenantId, aad(tenantId, id, slot), Buffer.from(JSON.stringify(secrets), 'utf8'));

async function unseal(sql: Queryable, keys: MasterKeys, row: SubscriptionRow, slot: 'current' | 'previous'): Promise<Secrets> {
  const sealed =
    slot === 'current'
      ? { keyVersion: row.secret_key_version, nonce: row.secret_nonce, ciphertext: row.secret_ciphertext }
      : { keyVersion: row.previous_key_version!, nonce: row.previous_nonce!, ciphertext: row.previous_ciphertext! };
  const plain = await openForTenant(sql, keys, row.tenant_id, aad(row.tenant_id, row.id, slot)(sealed.keyVersion), sealed, 'the signing secret of this subscription does not decrypt');
  return JSON.parse(plain.toString('utf8')) as Secrets;
}

export const allowedHostsOf = (app: AppContext) => new AllowedHosts(app.config.sourceAllowedHosts, { allowPrivate: app.config.sourceAllowPrivate });

/** The owner a subscription reads with: the key or token presented, or the person signed in. */
function ownerOf(principal: Principal): { kind: 'api_key' | 'user'; id: string; name: string } {
  if (principal.keyId) return { kind: 'api_key', id: principal.keyId, name: principal.user ? `${principal.user.name} (token ${principal.name})` : principal.name };
  return { kind: 'user', id: principal.id, name: principal.user?.email ?? principal.name };
}

/** The owner's rights as they are now; undefined once it may not read (revoked, expired, deactivated, another tenant). */
export async function ownerPrincipal(app: AppContext, row: SubscriptionRow): Promise<Principal | undefined> {
  const now = app.now();
  const principal = row.owner_kind === 'api_key' ? await principalForKeyId(app.sql, row.owner_id, now) : await principalForUserId(app.sql, row.tenant_id, row.owner_id);
  return principal && principal.tenantId === row.tenant_id ? principal : undefined;
}

/** Where a subscription's batches go, with the secrets valid now (the previous one during a rotation's overlap). */
export async function targetOf(app: AppContext, row: SubscriptionRow): Promise<Target> {
  const keys = masterKeys(app);
  const current = await unseal(app.sql, keys, row, 'current');
  if (row.sink.type === 'nats') return { type: 'nats', url: row.sink.url, subject: row.sink.subject! };
  const secrets = [current.secret];
  if (row.previous_until && row.previous_until > app.now() && row.previous_ciphertext) secrets.push((await unseal(app.sql, keys, row, 'previous')).secret);
  return { type: 'webhook', url: row.sink.url, headers: current.headers, secrets };
}

async function checkedSink(app: AppContext, input: SubscriptionInput['sink']): Promise<{ stored: StoredSink; headers: Record<string, string> }> {
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    throw validationFailed([{ field: 'sink.url', location: 'body', message: 'must be an absolute URL' }]);
  }
  const schemes = input.type === 'webhook' ? ['http:', 'https:'] : ['nats:'];
  if (!schemes.includes(url.protocol)) {
    throw validationFailed([{ field: 'sink.url', location: 'body', message: `a ${input.type} sink takes ${schemes.join(' or ')} URLs` }]);
  }
  const refused = await refusedEndpoint(url, allowedHostsOf(app));
  if (refused) throw validationFailed([{ field: 'sink.url', location: 'body', message: `endpoint refused: ${refused}` }]);
  if (input.type === 'nats') return { stored: { type: 'nats', url: input.url, subject: input.subject }, headers: {} };
  const headers = input.headers ?? {};
  const reserved = Object.keys(headers).find((name) => /^(webhook-|content-type$|content-length$|host$|transfer-encoding$|connection$)/i.test(name));
  if (reserved) throw validationFailed([{ field: `sink.headers.${reserved}`, location: 'body', message: 'is set by cinv for every delivery' }]);
  return { stored: { type: 'webhook', url: input.url, header_names: Object.keys(headers).sort() }, headers };
}

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
  return { name: input.name, owner: ownerOf(principal), sink, ...criteria, enabled: input.enabled ?? true, sealed, now: app.now() };
}

function mayRead(principal: Principal): void {
  if (!can(principal, 'changes', 'read')) {
    throw forbidden('A subscription delivers change records with its owner\'s rights: the owner needs changes:read', { permission: 'changes:read' });
  }
}

export function subscriptionsOf(app: AppContext, principal: Principal): Promise<SubscriptionRow[]> {
  return listSubscriptions(app.sql, principal.tenantId);
}

export async function subscriptionOf(app: AppContext, principal: Principal, id: string): Promise<SubscriptionRow> {
  const row = await findSubscription(app.sql, principal.tenantId, id);
  if (!row) throw notFound('Subscription not found', { subscription_id: id });
  return row;
}

/**
 * A new subscription owned by the principal, delivering what commits from now on. The signing
 * secret is returned this once.
 */
export async function createSubscription(app: AppContext, ctx: Context, principal: Principal, input: SubscriptionInput): Promise<{ row: SubscriptionRow; secret: string }> {
  mayRead(principal);
  const criteria = checkedCriteria(input);
  const sink = await checkedSink(app, input.sink);
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
    if (!row) throw conflict(`A subscription named "${input.name}" exists already`, { name: input.name });
    await auditChange(tx, app.audit, ctx, principal, 'subscription.created', { type: 'subscription', id, name: input.name }, { sink: sink.stored.type });
    return { row, secret };
  });
}

/**
 * Replaces a subscription's settings. Whoever changes it becomes its owner: it then delivers what
 * they may read, so nobody can point another's subscription at a receiver of their own and read with
 * the other's rights. The secret stays; header values given replace the stored ones.
 */
export async function replaceSubscription(app: AppContext, ctx: Context, principal: Principal, id: string, input: SubscriptionInput): Promise<SubscriptionRow> {
  mayRead(principal);
  const criteria = checkedCriteria(input);
  const sink = await checkedSink(app, input.sink);
  const keys = masterKeys(app);
  return app.sql.begin(async (tx) => {
    const existing = await findSubscription(tx, principal.tenantId, id, true);
    if (!existing) throw notFound('Subscription not found', { subscription_id: id });
    const { secret } = await unseal(tx, keys, existing, 'current');
    const sealed = await seal(tx, keys, principal.tenantId, id, 'current', { secret, headers: sink.headers });
    let row: SubscriptionRow | undefined;
    try {
      row = await updateSubscription(tx, principal.tenantId, id, settingsOf(app, principal, input, sink.stored, criteria, sealed));
    } catch (error) {
      if ((error as { code?: string }).code === '23505') throw conflict(`A subscription named "${input.name}" exists already`, { name: input.name });
      throw error;
    }
    await auditChange(tx, app.audit, ctx, principal, 'subscription.changed', { type: 'subscription', id, name: input.name }, { sink: sink.stored.type, enabled: row!.enabled });
    return row!;
  });
}

export async function removeSubscription(app: AppContext, ctx: Context, principal: Principal, id: string): Promise<void> {
  await app.sql.begin(async (tx) => {
    const existing = await findSubscription(tx, principal.tenantId, id, true);
    if (!existing || !(await deleteSubscription(tx, principal.tenantId, id))) throw notFound('Subscription not found', { subscription_id: id });
    await auditChange(tx, app.audit, ctx, principal, 'subscription.deleted', { type: 'subscription', id, name: existing.name });
  });
}

/** A new signing secret, returned this once; the previous one keeps signing beside it for `overlapSeconds`. */
export async function rotateSigningSecret(app: AppContext, ctx: Context, principal: Principal, id: string, overlapSeconds: number): Promise<{ row: SubscriptionRow; secret: string }> {
  const keys = masterKeys(app);
  const secret = newSigningSecret();
  return app.sql.begin(async (tx) => {
    const existing = await findSubscription(tx, principal.tenantId, id, true);
    if (!existing) throw notFound('Subscription not found', { subscription_id: id });
    const current = await unseal(tx, keys, existing, 'current');
    const now = app.now();
    const sealed = await seal(tx, keys, principal.tenantId, id, 'current', { secret, headers: current.headers });
    const previous = await seal(tx, keys, principal.tenantId, id, 'previous', { secret: current.secret, headers: {} });
    const row = await rotateSecret(tx, principal.tenantId, id, sealed, previous, new Date(now.getTime() + overlapSeconds * 1000), now);
    await auditChange(tx, app.audit, ctx, principal, 'subscription.secret_rotated', { type: 'subscription', id, name: existing.name }, { overlap_seconds: overlapSeconds });
    return { row: row!, secret };
  });
}

export async function deliveriesOf(app: AppContext, principal: Principal, id: string, query: DeliveryQuery): Promise<{ rows: DeliveryRow[]; nextCursor: string | null }> {
  await subscriptionOf(app, principal, id);
  const rows = await listDeliveries(app.sql, id, { limit: query.limit, before: query.cursor, status: query.status });
  const more = rows.length > query.limit;
  const page = rows.slice(0, query.limit);
  return { rows: page, nextCursor: more ? page[page.length - 1]!.id : null };
}

export async function redeliverBatch(app: AppContext, principal: Principal, id: string, deliveryId: string): Promise<DeliveryRow> {
  await subscriptionOf(app, principal, id);
  const row = await redeliver(app.sql, id, deliveryId, app.now());
  if (!row) throw notFound('Delivery not found', { subscription_id: id, delivery_id: deliveryId });
  return row;
}
