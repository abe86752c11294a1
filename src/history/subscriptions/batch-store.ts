import type { Queryable, Sql } from '../../platform/db/database.js';
import { EXACT_TIME_FORMAT } from '../../platform/query/exact-time.js';
import type { SubscriptionRow } from './store.js';

/* A subscription's batches: cut from its feed, attempted, listed, sent again, trimmed. */

/** A batch as its log shows it (without its body). */
export interface DeliveryLogRow {
  id: string;
  subscription_id: string;
  sequence: string;
  message_id: string;
  records: number;
  committed_at: Date;
  status: 'pending' | 'delivered' | 'dead';
  attempts: number;
  next_attempt_at: Date | null;
  last_attempt_at: Date | null;
  response_status: number | null;
  response_ms: number | null;
  error: string | null;
  created_at: Date;
  retry_since: Date;
  delivered_at: Date | null;
  /** Whose rights cut it: it is sent only for this owner. */
  owner_kind: SubscriptionRow['owner_kind'];
  owner_id: string;
}

/**
 * A batch to send: the ids and exact times of its change records (the body is written from them
 * when it is sent), or, for a batch cut before they were kept so, its body.
 */
export interface DeliveryRow extends DeliveryLogRow {
  body: string | null;
  record_ids: string[] | null;
  record_times: string[] | null;
}

const LOG_COLUMNS = `id::text as id, subscription_id, sequence::text as sequence, message_id, records, committed_at, status, attempts,
  next_attempt_at, last_attempt_at, response_status, response_ms, error, created_at, retry_since, delivered_at, owner_kind, owner_id`;
const DELIVERY_COLUMNS = `${LOG_COLUMNS}, body, record_ids::text[] as record_ids,
  (select array_agg(to_char(t at time zone 'UTC', '${EXACT_TIME_FORMAT}') order by n) from unnest(record_times) with ordinality r(t, n)) as record_times`;

/** The subscription's oldest pending batch: batches go out in order, a later one only after it. */
export async function oldestPending(sql: Sql, subscriptionId: string): Promise<DeliveryRow | undefined> {
  const [row] = await sql.unsafe<DeliveryRow[]>(
    `select ${DELIVERY_COLUMNS} from subscription_deliveries where subscription_id = $1 and status = 'pending' order by subscription_deliveries.sequence limit 1`,
    [subscriptionId],
  );
  return row;
}

export interface NewBatch {
  subscription: SubscriptionRow;
  /** Its change records, in order: ids and exact times. */
  records: { id: string; at: string }[];
  messageId: string;
  committedAt: Date;
  /** Where the subscription's feed continues after this batch. */
  next: { position: string; id: string };
  now: Date;
}

/**
 * Stores a batch and moves the subscription's place past it, in one statement, only if nobody moved
 * it meanwhile (a lease taken over) and it still has the owner it was cut for: a batch is cut once,
 * for the owner whose rights selected its records.
 */
export async function cutBatch(sql: Sql, batch: NewBatch): Promise<DeliveryRow | undefined> {
  const { subscription: row } = batch;
  const [cut] = await sql.unsafe<DeliveryRow[]>(
    `with moved as (
       update subscriptions set feed_position = $1::bigint, feed_record = $2::bigint, next_sequence = next_sequence + 1
       where id = $3 and feed_position = $4::bigint and feed_record = $5::bigint and next_sequence = $6::bigint
         and owner_kind = $12 and owner_id = $13
       returning id, tenant_id, $6::bigint as sequence
     )
     insert into subscription_deliveries (subscription_id, tenant_id, sequence, message_id, record_ids, record_times, records, committed_at, status,
                                          next_attempt_at, created_at, retry_since, owner_kind, owner_id, from_position, from_record)
     select id, tenant_id, sequence, $7, $8::bigint[], $14::text[]::timestamptz[], $9, $10, 'pending', $11, $11, $11, $12, $13, $4::bigint, $5::bigint from moved
     returning ${DELIVERY_COLUMNS}`,
    [
      batch.next.position,
      batch.next.id,
      row.id,
      row.feed_position,
      row.feed_record,
      row.next_sequence,
      batch.messageId,
      batch.records.map((r) => r.id),
      batch.records.length,
      batch.committedAt,
      batch.now,
      row.owner_kind,
      row.owner_id,
      batch.records.map((r) => r.at),
    ] as never[],
  );
  return cut;
}

/**
 * Sets aside the undelivered batches cut for another owner than the subscription's (dead, never
 * sent) and moves its place back to where the first of them began, so that their records are cut
 * again with the rights of the owner it has now. The sequence numbers go on from where they were.
 */
export async function recutForOwner(sql: Queryable, subscriptionId: string): Promise<number> {
  const [row] = await sql<{ set_aside: number }[]>`
    with set_aside as (
      update subscription_deliveries d
      set status = 'dead', next_attempt_at = null,
          error = 'cut for the previous owner of the subscription: not sent; its records are cut again for the new owner'
      from subscriptions s
      where s.id = ${subscriptionId} and d.subscription_id = s.id and d.status = 'pending'
        and (d.owner_kind <> s.owner_kind or d.owner_id <> s.owner_id)
      returning d.sequence, d.from_position, d.from_record
    ), earliest as (
      select from_position, from_record from set_aside where from_position is not null order by sequence limit 1
    ), moved as (
      update subscriptions s set feed_position = e.from_position, feed_record = e.from_record
      from earliest e where s.id = ${subscriptionId}
      returning 1
    )
    select (select count(*)::int from set_aside) as set_aside, (select count(*) from moved) as moved`;
  return row!.set_aside;
}

/** Moves the subscription's place over records it does not deliver (none it may read matched). */
export async function skipTo(
  sql: Sql,
  subscription: SubscriptionRow,
  next: { position: string; id: string },
): Promise<void> {
  await sql`
    update subscriptions set feed_position = ${next.position}::bigint, feed_record = ${next.id}::bigint
    where id = ${subscription.id} and feed_position = ${subscription.feed_position}::bigint and feed_record = ${subscription.feed_record}::bigint`;
}

export interface AttemptOutcome {
  status: 'pending' | 'delivered' | 'dead';
  responseStatus: number | null;
  responseMs: number;
  error: string | null;
  nextAttemptAt: Date | null;
  at: Date;
}

/**
 * Records an attempt. It commits without waiting for its WAL flush: a crash loses at most the last
 * moments' outcomes, and a batch whose delivery is lost so is sent again, the same body under the
 * same message id, as at-least-once delivery allows. Waiting for a flush per batch slowed the loads
 * beside the deliveries.
 */
export async function recordAttempt(sql: Sql, deliveryId: string, outcome: AttemptOutcome): Promise<void> {
  await sql`
    update subscription_deliveries
    set status = ${outcome.status}, attempts = attempts + 1, last_attempt_at = ${outcome.at}, response_status = ${outcome.responseStatus},
        response_ms = ${outcome.responseMs}, error = ${outcome.error}, next_attempt_at = ${outcome.nextAttemptAt},
        delivered_at = ${outcome.status === 'delivered' ? outcome.at : null}
    from (select set_config('synchronous_commit', 'off', true)) as without_flush_wait
    where id = ${deliveryId}::bigint`;
}

export async function listDeliveries(
  sql: Sql,
  tenantId: string,
  subscriptionId: string,
  page: { limit: number; before?: string; status?: DeliveryRow['status'] },
): Promise<DeliveryLogRow[]> {
  return sql<DeliveryLogRow[]>`
    select ${sql.unsafe(LOG_COLUMNS)} from subscription_deliveries
    where tenant_id = ${tenantId} and subscription_id = ${subscriptionId}
      ${page.before ? sql`and id < ${page.before}::bigint` : sql``}
      ${page.status ? sql`and status = ${page.status}` : sql``}
    order by subscription_deliveries.id desc limit ${page.limit + 1}`;
}

/**
 * Sends a batch again, with a new retry window, if it was cut for the subscription's owner now:
 * `other_owner` when it was cut for another (its records were selected with that owner's rights),
 * undefined when there is no such batch.
 */
export async function redeliver(
  sql: Sql,
  tenantId: string,
  subscriptionId: string,
  deliveryId: string,
  now: Date,
): Promise<DeliveryLogRow | 'other_owner' | undefined> {
  const [row] = await sql.unsafe<DeliveryLogRow[]>(
    `update subscription_deliveries set status = 'pending', next_attempt_at = $4, retry_since = $4, error = null
     where tenant_id = $1 and subscription_id = $2 and id = $3::bigint
       and (owner_kind, owner_id) = (select s.owner_kind, s.owner_id from subscriptions s where s.id = $2)
     returning ${LOG_COLUMNS}`,
    [tenantId, subscriptionId, deliveryId, now] as never[],
  );
  if (row) return row;
  const [other] = await sql`
    select 1 from subscription_deliveries where tenant_id = ${tenantId} and subscription_id = ${subscriptionId} and id = ${deliveryId}::bigint`;
  return other ? 'other_owner' : undefined;
}

/** Forgets delivered batches older than `before` (their bodies are copies of change records). */
export async function trimDelivered(sql: Sql, before: Date): Promise<number> {
  const result = await sql`delete from subscription_deliveries where status = 'delivered' and delivered_at < ${before}`;
  return result.count;
}
