import type { Queryable, Sql } from '../../platform/db/database.js';
import { SUBSCRIPTION_COLUMNS, type SubscriptionRow } from './store.js';

/* What the delivery worker reads and writes on a subscription's row: whether it is due, its lease, its state. */

/**
 * Enabled subscriptions no other process holds now that have something to do: a batch due, a
 * transaction committed after their place, or a place inside a transaction's records (a batch
 * that filled up there). An idle subscription costs nothing but this, and the feed's records are
 * not read to find out.
 */
export async function subscriptionsToDeliver(sql: Sql, owner: string, now: Date): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select s.id from subscriptions s
    where s.enabled and (s.lease_until is null or s.lease_until < ${now} or s.lease_owner = ${owner})
      and (exists (select 1 from subscription_deliveries d
                   where d.subscription_id = s.id and d.status = 'pending' and (d.next_attempt_at is null or d.next_attempt_at <= ${now}))
           or s.feed_record < 9223372036854775807
           or exists (select 1 from change_feed f where f.position > s.feed_position))`;
  return rows.map((row) => row.id);
}

/** Whether a batch of the subscription waits to be sent (beside SUBSCRIPTION_COLUMNS of a leased or held row). */
const HAS_PENDING = `exists (select 1 from subscription_deliveries d where d.subscription_id = subscriptions.id and d.status = 'pending') as pending`;

/**
 * Takes (or renews) a subscription for `owner` until `until`; the row as it is, with whether a batch
 * is pending, or undefined when another holds it.
 */
export async function leaseSubscription(
  sql: Sql,
  id: string,
  owner: string,
  now: Date,
  until: Date,
): Promise<(SubscriptionRow & { pending: boolean }) | undefined> {
  const [row] = await sql.unsafe<(SubscriptionRow & { pending: boolean })[]>(
    `update subscriptions set lease_owner = $2, lease_until = $4
     where id = $1 and enabled and (lease_until is null or lease_until < $3 or lease_owner = $2)
     returning ${SUBSCRIPTION_COLUMNS}, ${HAS_PENDING}`,
    [id, owner, now, until] as never[],
  );
  return row;
}

/**
 * The subscription while this process holds its lease with time to spare: read, not written (a
 * write per batch was a WAL flush per batch beside the loads that make the batches).
 */
export async function heldSubscription(
  sql: Sql,
  id: string,
  owner: string,
  now: Date,
): Promise<(SubscriptionRow & { pending: boolean }) | undefined> {
  const [row] = await sql.unsafe<(SubscriptionRow & { pending: boolean })[]>(
    `select ${SUBSCRIPTION_COLUMNS}, ${HAS_PENDING}
     from subscriptions where id = $1 and enabled and lease_owner = $2 and lease_until > $3`,
    [id, owner, now] as never[],
  );
  return row;
}

export async function releaseSubscription(sql: Sql, id: string, owner: string): Promise<void> {
  await sql`update subscriptions set lease_owner = null, lease_until = null where id = ${id} and lease_owner = ${owner}`;
}

export async function setSubscriptionState(
  sql: Queryable,
  id: string,
  state: SubscriptionRow['state'],
  reason: string | null,
  options: { disable?: boolean; onlyFrom?: SubscriptionRow['state'][] } = {},
): Promise<void> {
  await sql`
    update subscriptions set state = ${state}, state_reason = ${reason}
      ${options.disable ? sql`, enabled = false` : sql``}
    where id = ${id} ${options.onlyFrom ? sql`and state = any(${options.onlyFrom}::text[])` : sql``}`;
}
