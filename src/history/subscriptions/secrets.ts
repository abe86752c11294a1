import type { Context } from 'koa';
import {
  MasterKeys,
  openForTenant,
  requireMasterKeys,
  sealForTenant,
  undecryptable,
  type Sealed,
} from '../../platform/auth/envelope.js';
import type { Principal } from '../../platform/auth/principal.js';
import { auditChange } from '../../platform/audit/log.js';
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../platform/db/database.js';
import { lockedSubscription } from './access.js';
import { newSigningSecret } from './signing.js';
import type { Target } from './sinks.js';
import { rotateSecret, type SubscriptionRow } from './store.js';

/** What a subscription keeps sealed: its signing secret and the values of its extra headers. */
interface Secrets {
  secret: string;
  headers: Record<string, string>;
}

const aad = (tenantId: string, subscriptionId: string, slot: 'current' | 'previous') => (version: number) =>
  `cinv subscription secret v1|${tenantId}|${subscriptionId}|${slot}|${version}`;

export const masterKeys = (app: AppContext) =>
  requireMasterKeys(
    app.config,
    'Subscriptions cannot be stored or sent: their signing secrets are sealed with the master key',
  );

export const seal = (
  sql: Queryable,
  keys: MasterKeys,
  tenantId: string,
  id: string,
  slot: 'current' | 'previous',
  secrets: Secrets,
): Promise<Sealed> =>
  sealForTenant(sql, keys, tenantId, aad(tenantId, id, slot), Buffer.from(JSON.stringify(secrets), 'utf8'));

export async function unseal(
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
