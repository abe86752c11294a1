import type { Queryable } from '../../platform/db/database.js';
import type { Sealed } from '../../platform/auth/envelope.js';

/*
 * Subscriptions as their owners set them: created, read, replaced, given a new secret, removed.
 * What the delivery worker reads and writes is in lease-store.ts, the batches in batch-store.ts.
 */

export interface StoredSink {
  type: 'webhook' | 'nats';
  url: string;
  subject?: string;
  header_names?: string[];
}

export interface SubscriptionRow {
  id: string;
  tenant_id: string;
  name: string;
  owner_kind: 'api_key' | 'user';
  owner_id: string;
  owner_name: string;
  sink: StoredSink;
  filters: string[];
  search: string | null;
  quality_alerts: boolean;
  enabled: boolean;
  state: 'active' | 'failing' | 'paused' | 'gone';
  state_reason: string | null;
  secret_key_version: number;
  secret_nonce: Buffer;
  secret_ciphertext: Buffer;
  previous_key_version: number | null;
  previous_nonce: Buffer | null;
  previous_ciphertext: Buffer | null;
  previous_until: Date | null;
  feed_position: string;
  feed_record: string;
  next_sequence: string;
  created_at: Date;
  updated_at: Date;
}

export const SUBSCRIPTION_COLUMNS = `id, tenant_id, name, owner_kind, owner_id, owner_name, sink, filters, search, quality_alerts, enabled, state, state_reason,
  secret_key_version, secret_nonce, secret_ciphertext, previous_key_version, previous_nonce, previous_ciphertext, previous_until,
  feed_position::text as feed_position, feed_record::text as feed_record, next_sequence::text as next_sequence, created_at, updated_at`;

/** What a subscription's owner sets (POST and PUT alike), as stored. */
export interface SubscriptionSettings {
  name: string;
  owner: { kind: 'api_key' | 'user'; id: string; name: string };
  sink: StoredSink;
  filters: string[];
  search: string | null;
  qualityAlerts: boolean;
  enabled: boolean;
  sealed: Sealed;
  now: Date;
}

export interface NewSubscription extends SubscriptionSettings {
  id: string;
  tenantId: string;
  /** The feed's end when created: a subscription delivers what commits from then on. */
  feed: { position: string; id: string };
}

export async function insertSubscription(sql: Queryable, s: NewSubscription): Promise<SubscriptionRow | undefined> {
  const [row] = await sql.unsafe<SubscriptionRow[]>(
    `insert into subscriptions (id, tenant_id, name, owner_kind, owner_id, owner_name, sink, filters, search, enabled,
                                secret_key_version, secret_nonce, secret_ciphertext, feed_position, feed_record, created_at, updated_at,
                                quality_alerts)
     values ($1, $2, $3, $4, $5, $6, $7::text::jsonb, $8::text[], $9, $10, $11, $12, $13, $14::bigint, $15::bigint, $16, $16, $17)
     on conflict on constraint subscriptions_name_unique do nothing
     returning ${SUBSCRIPTION_COLUMNS}`,
    [
      s.id,
      s.tenantId,
      s.name,
      s.owner.kind,
      s.owner.id,
      s.owner.name,
      JSON.stringify(s.sink),
      s.filters,
      s.search,
      s.enabled,
      s.sealed.keyVersion,
      s.sealed.nonce,
      s.sealed.ciphertext,
      s.feed.position,
      s.feed.id,
      s.now,
      s.qualityAlerts,
    ] as never[],
  );
  return row;
}

export async function findSubscription(
  sql: Queryable,
  tenantId: string,
  id: string,
  forUpdate = false,
): Promise<SubscriptionRow | undefined> {
  const [row] = await sql.unsafe<SubscriptionRow[]>(
    `select ${SUBSCRIPTION_COLUMNS} from subscriptions where tenant_id = $1 and id = $2 ${forUpdate ? 'for update' : ''}`,
    [tenantId, id],
  );
  return row;
}

export function listSubscriptions(sql: Queryable, tenantId: string): Promise<SubscriptionRow[]> {
  return sql.unsafe<SubscriptionRow[]>(
    `select ${SUBSCRIPTION_COLUMNS} from subscriptions where tenant_id = $1 order by name, id`,
    [tenantId],
  ) as unknown as Promise<SubscriptionRow[]>;
}

/** Replaces what a PUT replaces; a subscription enabled again after a 410 or a pause starts as active. */
export async function updateSubscription(
  sql: Queryable,
  tenantId: string,
  id: string,
  c: SubscriptionSettings,
): Promise<SubscriptionRow | undefined> {
  const [row] = await sql.unsafe<SubscriptionRow[]>(
    `update subscriptions set name = $3, owner_kind = $4, owner_id = $5, owner_name = $6, sink = $7::text::jsonb, filters = $8::text[], search = $9,
            enabled = $10, secret_key_version = $11, secret_nonce = $12, secret_ciphertext = $13, updated_at = $14,
            quality_alerts = $15,
            state = case when $10 and state in ('gone', 'paused') then 'active' else state end,
            state_reason = case when $10 and state in ('gone', 'paused') then null else state_reason end
     where tenant_id = $1 and id = $2
     returning ${SUBSCRIPTION_COLUMNS}`,
    [
      tenantId,
      id,
      c.name,
      c.owner.kind,
      c.owner.id,
      c.owner.name,
      JSON.stringify(c.sink),
      c.filters,
      c.search,
      c.enabled,
      c.sealed.keyVersion,
      c.sealed.nonce,
      c.sealed.ciphertext,
      c.now,
      c.qualityAlerts,
    ] as never[],
  );
  return row;
}

export async function rotateSecret(
  sql: Queryable,
  tenantId: string,
  id: string,
  sealed: Sealed,
  previous: Sealed,
  until: Date,
  now: Date,
): Promise<SubscriptionRow | undefined> {
  const [row] = await sql.unsafe<SubscriptionRow[]>(
    `update subscriptions set secret_key_version = $3, secret_nonce = $4, secret_ciphertext = $5,
            previous_key_version = $6, previous_nonce = $7, previous_ciphertext = $8, previous_until = $9, updated_at = $10
     where tenant_id = $1 and id = $2 returning ${SUBSCRIPTION_COLUMNS}`,
    [
      tenantId,
      id,
      sealed.keyVersion,
      sealed.nonce,
      sealed.ciphertext,
      previous.keyVersion,
      previous.nonce,
      previous.ciphertext,
      until,
      now,
    ] as never[],
  );
  return row;
}

/** Removes a subscription with its batches; its name, or undefined when there was none. */
export async function deleteSubscription(sql: Queryable, tenantId: string, id: string): Promise<string | undefined> {
  const [row] = await sql<
    { name: string }[]
  >`delete from subscriptions where tenant_id = ${tenantId} and id = ${id} returning name`;
  return row?.name;
}
