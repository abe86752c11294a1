import type { Context } from 'koa';
import { uuidv7 } from 'uuidv7';
import { principalForKeyId, principalForUserId } from '../../platform/auth/api-keys.js';
import {
  MasterKeys,
  openForTenant,
  requireMasterKeys,
  sealForTenant,
  undecryptable,
  type Sealed,
} from '../../platform/auth/envelope.js';
import { covers, rightsOf, type Rights } from '../../platform/auth/grant-ceiling.js';
import { can, everyPermission, seesAllData, type Principal } from '../../platform/auth/principal.js';
import { auditChange } from '../../platform/audit/log.js';
import { feedCriteria } from '../changes/feed.js';
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../platform/db/database.js';
import { conflict, forbidden, notFound, validationFailed } from '../../platform/errors.js';
import { feedEnd } from '../records/feed.js';
import { bigintId } from '../../platform/http/schemas.js';
import { AllowedHosts, allowedHostsOf, refusedEndpoint } from '../../platform/net/endpoint.js';
import type { DeliveryQuery, SubscriptionInput } from './schema.js';
import { newSigningSecret } from './signing.js';
import type { Target } from './sinks.js';
import {
  deleteSubscription,
  findSubscription,
  insertSubscription,
  listDeliveries,
  listSubscriptions,
  recutForOwner,
  redeliver,
  rotateSecret,
  updateSubscription,
  type DeliveryLogRow,
  type StoredSink,
  type SubscriptionRow,
  type SubscriptionSettings,
} from './store.js';

export type { DeliveryLogRow, SubscriptionRow } from './store.js';

/** What a subscription keeps sealed: its signing secret and the values of its extra headers. */
interface Secrets {
  secret: string;
  headers: Record<string, string>;
}

const aad = (tenantId: string, subscriptionId: string, slot: 'current' | 'previous') => (version: number) =>
  `cinv subscription secret v1|${tenantId}|${subscriptionId}|${slot}|${version}`;

const masterKeys = (app: AppContext) =>
  requireMasterKeys(
    app.config,
    'Subscriptions cannot be stored or sent: their signing secrets are sealed with the master key',
  );

const seal = (
  sql: Queryable,
  keys: MasterKeys,
  tenantId: string,
  id: string,
  slot: 'current' | 'previous',
  secrets: Secrets,
): Promise<Sealed> =>
  sealForTenant(sql, keys, tenantId, aad(tenantId, id, slot), Buffer.from(JSON.stringify(secrets), 'utf8'));

async function unseal(
  sql: Queryable,
  keys: MasterKeys,
  row: SubscriptionRow,
  slot: 'current' | 'previous',
): Promise<Secrets> {
  const sealed =
    slot === 'current'
      ? { keyVersion: row.secret_key_version, nonce: row.secret_nonce, ciphertext: row.secret_ciphertext }
      : { keyVersion: row.previous_key_version!, nonce: row.previous_nonce!, ciphertext: row.previous_ciphertext! };
  const plain = await openForTenant(
    sql,
    keys,
    row.tenant_id,
    aad(row.tenant_id, row.id, slot)(sealed.keyVersion),
    sealed,
    'the signing secret of this subscription does not decrypt',
  ).catch(undecryptable('The signing secret of this subscription'));
  return JSON.parse(plain.toString('utf8')) as Secrets;
}

/** The owner a subscription reads with: the key or token presented, or the person signed in. */
function ownerOf(principal: Principal): { kind: 'api_key' | 'user'; id: string; name: string } {
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

/** Where a subscription's batches go, with the secrets valid now (the previous one during a rotation's overlap). */
export async function targetOf(app: AppContext, row: SubscriptionRow): Promise<Target> {
  if (row.sink.type === 'nats') return { type: 'nats', url: row.sink.url, subject: row.sink.subject! };
  const keys = masterKeys(app);
  const rotating = row.previous_until !== null && row.previous_until > app.now() && row.previous_ciphertext !== null;
  const [current, previous] = await Promise.all([
    unseal(app.sql, keys, row, 'current'),
    rotating ? unseal(app.sql, keys, row, 'previous') : undefined,
  ]);
  return {
    type: 'webhook',
    url: row.sink.url,
    headers: current.headers,
    secrets: previous ? [current.secret, previous.secret] : [current.secret],
  };
}

/** How this server sends: the endpoint policy, the receivers' time limit, the clock. */
/**
 * The receivers a subscription of this owner may reach: the endpoint policy of sources, where a
 * loopback, private or otherwise non-public receiver needs what a source needs, access to all data.
 * A webhook needs one permission; without this rule anyone holding it could make the server speak
 * to its internal listeners with headers of their choosing. Networks listed in
 * CINV_SOURCE_ALLOWED_HOSTS are reachable for every owner, as long as CINV_SOURCE_ALLOW_PRIVATE
 * lets anything private be reached. A departed owner (undefined) reaches no other private receiver.
 */
export function receiverPolicy(app: AppContext, owner: Principal | undefined): AllowedHosts {
  const { sourceAllowedHosts, sourceAllowPrivate } = app.config;
  if (owner !== undefined && seesAllData(owner)) return allowedHostsOf(app.config);
  // networks the operator listed in CINV_SOURCE_ALLOWED_HOSTS stay reachable: those receivers are named
  return new AllowedHosts(sourceAllowedHosts, { allowPrivate: false, listedPrivate: sourceAllowPrivate });
}

export const sendOptionsOf = (app: AppContext, owner: Principal | undefined) => ({
  allowedHosts: receiverPolicy(app, owner),
  timeoutMs: app.config.webhookTimeoutMs,
  now: app.now(),
});

async function checkedSink(
  app: AppContext,
  principal: Principal,
  input: SubscriptionInput['sink'],
): Promise<{ stored: StoredSink; headers: Record<string, string> }> {
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    throw validationFailed([{ field: 'sink.url', location: 'body', message: 'must be an absolute URL' }]);
  }
  const schemes = input.type === 'webhook' ? ['http:', 'https:'] : ['nats:'];
  if (!schemes.includes(url.protocol)) {
    throw validationFailed([
      { field: 'sink.url', location: 'body', message: `a ${input.type} sink takes ${schemes.join(' or ')} URLs` },
    ]);
  }
  if (url.username || url.password) {
    const instead = input.type === 'webhook' ? ': pass them as sink.headers, which are kept sealed' : '';
    throw validationFailed([{ field: 'sink.url', location: 'body', message: `must not hold credentials${instead}` }]);
  }
  const refused = await refusedEndpoint(url, allowedHostsOf(app.config));
  if (refused)
    throw validationFailed([{ field: 'sink.url', location: 'body', message: `endpoint refused: ${refused}` }]);
  if (await refusedEndpoint(url, receiverPolicy(app, principal))) {
    throw forbidden(
      'A receiver on a loopback, private or otherwise non-public address needs access to all data, as a source there does',
      {
        reason: 'private_receiver',
        field: 'sink.url',
      },
    );
  }
  if (input.type === 'nats') return { stored: { type: 'nats', url: input.url, subject: input.subject }, headers: {} };
  const headers = input.headers ?? {};
  const reserved = Object.keys(headers).find((name) =>
    /^(webhook-|content-type$|content-length$|host$|transfer-encoding$|connection$)/i.test(name),
  );
  if (reserved)
    throw validationFailed([
      { field: `sink.headers.${reserved}`, location: 'body', message: 'is set by cinv for every delivery' },
    ]);
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
  return {
    name: input.name,
    owner: ownerOf(principal),
    sink,
    ...criteria,
    enabled: input.enabled ?? true,
    sealed,
    now: app.now(),
  };
}

const nameTaken = (name: string) => conflict(`A subscription named "${name}" exists already`, { name });

const noSuchSubscription = (id: string) => notFound('Subscription not found', { subscription_id: id });

/**
 * The subscription, locked for the transaction's change; a 404 when the tenant has none with this
 * id or the principal may not see it (maySeeSubscription), as if absent.
 */
async function lockedSubscription(
  app: AppContext,
  tx: Queryable,
  principal: Principal,
  id: string,
): Promise<SubscriptionRow> {
  const row = await findSubscription(tx, principal.tenantId, id, true);
  if (!row || !(await maySeeSubscription(app, principal, row, tx))) throw noSuchSubscription(id);
  return row;
}

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

/** A new signing secret, returned this once; the previous one keeps signing beside it for `overlapSeconds`. */
export async function rotateSigningSecret(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  id: string,
  overlapSeconds: number,
): Promise<{ row: SubscriptionRow; secret: string }> {
  const keys = masterKeys(app);
  const secret = newSigningSecret();
  return app.sql.begin(async (tx) => {
    const existing = await lockedSubscription(app, tx, principal, id);
    const current = await unseal(tx, keys, existing, 'current');
    const now = app.now();
    const sealed = await seal(tx, keys, principal.tenantId, id, 'current', { secret, headers: current.headers });
    const previous = await seal(tx, keys, principal.tenantId, id, 'previous', { secret: current.secret, headers: {} });
    const row = await rotateSecret(
      tx,
      principal.tenantId,
      id,
      sealed,
      previous,
      new Date(now.getTime() + overlapSeconds * 1000),
      now,
    );
    await auditChange(
      tx,
      app.audit,
      ctx,
      principal,
      'subscription.secret_rotated',
      { type: 'subscription', id, name: existing.name },
      { overlap_seconds: overlapSeconds },
    );
    return { row: row!, secret };
  });
}

export async function deliveriesOf(
  app: AppContext,
  principal: Principal,
  id: string,
  query: DeliveryQuery,
): Promise<{ rows: DeliveryLogRow[]; nextCursor: string | null }> {
  await subscriptionOf(app, principal, id);
  // a cursor beyond any id continues from the newest
  const before = query.cursor === undefined ? undefined : (bigintId(query.cursor) ?? '9223372036854775807');
  const rows = await listDeliveries(app.sql, principal.tenantId, id, {
    limit: query.limit,
    before,
    status: query.status,
  });
  const more = rows.length > query.limit;
  const page = rows.slice(0, query.limit);
  return { rows: page, nextCursor: more ? page[page.length - 1]!.id : null };
}

/** Sends a batch again; only one cut for the subscription's present owner (a 409 for another's). */
export async function redeliverBatch(
  app: AppContext,
  principal: Principal,
  id: string,
  deliveryId: string,
): Promise<DeliveryLogRow> {
  const notThere = () => notFound('Delivery not found', { subscription_id: id, delivery_id: deliveryId });
  const canonical = bigintId(deliveryId);
  if (canonical === undefined) throw notThere();
  await subscriptionOf(app, principal, id);
  const row = await redeliver(app.sql, principal.tenantId, id, canonical, app.now());
  if (row === undefined) throw notThere();
  if (row === 'other_owner') {
    throw conflict(
      "This batch was cut for a previous owner of the subscription, with that owner's rights: it is not sent again",
      {
        reason: 'other_owner',
        delivery_id: deliveryId,
      },
    );
  }
  return row;
}
