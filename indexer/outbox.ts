import type { Sql } from 'postgres';
import { OUTBOX_TOPIC_CHANGE } from '../src/history/records/writer.js';

/** An outbox row a consumer holds: the change record it names, and how often it was tried. */
export interface ClaimedRow {
  id: string;
  change_id: string;
  attempts: number;
}

/**
 * Leases up to `limit` due outbox rows of the change-record topic for `leaseMs`: their
 * `available_at` moves past the lease, so competing indexers (SKIP LOCKED) take other rows, and a
 * row whose indexer died becomes due again when the lease ends. Committed at once: no transaction
 * stays open while OpenSearch is called.
 */
export function claimBatch(sql: Sql, limit: number, leaseMs: number): Promise<ClaimedRow[]> {
  return sql<ClaimedRow[]>`
    update outbox o
    set available_at = now() + ${leaseMs} * interval '1 millisecond', attempts = o.attempts + 1
    from (
      select id from outbox
      where topic = ${OUTBOX_TOPIC_CHANGE} and parked_at is null and available_at <= now()
      order by available_at, id
      limit ${limit}
      for update skip locked
    ) due
    where o.id = due.id
    returning o.id::text, o.aggregate_id as change_id, o.attempts`;
}

/** Rows whose documents are indexed: done. */
export async function completeRows(sql: Sql, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await sql`delete from outbox where id = any(${ids as string[]}::bigint[])`;
}

/** Rows to try again after `delayMs` each, keeping the error that made them fail. */
export async function retryRows(
  sql: Sql,
  rows: readonly { id: string; delayMs: number; error: string }[],
): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    update outbox o set available_at = now() + r.delay_ms * interval '1 millisecond', last_error = left(r.error, 2000)
    from unnest(${rows.map((r) => r.id)}::bigint[], ${rows.map((r) => r.delayMs)}::bigint[], ${rows.map((r) => r.error)}::text[])
      as r(id, delay_ms, error)
    where o.id = r.id`;
}

/** Rows that failed for good: set aside with their error until `cinv outbox retry`. */
export async function parkRows(sql: Sql, rows: readonly { id: string; error: string }[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    update outbox o set parked_at = now(), last_error = left(r.error, 2000)
    from unnest(${rows.map((r) => r.id)}::bigint[], ${rows.map((r) => r.error)}::text[]) as r(id, error)
    where o.id = r.id`;
}

export interface OutboxState {
  /** Rows waiting to be indexed (counted up to a cap: beyond it, "at least"). */
  pending: number;
  pendingCapped: boolean;
  /** Seconds since the oldest waiting row was written. */
  lagSeconds: number;
  parked: number;
}

const COUNT_CAP = 1_000_000;

/** The backlog, lag and parked rows, at a cost bounded by the cap, not by the outbox's size. */
export async function outboxState(sql: Sql): Promise<OutboxState> {
  const [row] = await sql<{ pending: number; lag: number | null; parked: number }[]>`
    select
      (select count(*) from (select 1 from outbox where topic = ${OUTBOX_TOPIC_CHANGE} and parked_at is null limit ${COUNT_CAP + 1}) p)::int as pending,
      extract(epoch from now() - (select min(created_at) from outbox where topic = ${OUTBOX_TOPIC_CHANGE} and parked_at is null))::float8 as lag,
      (select count(*) from outbox where topic = ${OUTBOX_TOPIC_CHANGE} and parked_at is not null)::int as parked`;
  const pending = row?.pending ?? 0;
  return {
    pending: Math.min(pending, COUNT_CAP),
    pendingCapped: pending > COUNT_CAP,
    lagSeconds: Math.max(0, row?.lag ?? 0),
    parked: row?.parked ?? 0,
  };
}

/** Sends parked rows back to the queue with their attempts reset; returns how many. */
export async function requeueParked(sql: Sql): Promise<number> {
  const result = await sql`
    update outbox set parked_at = null, attempts = 0, available_at = now(), last_error = null
    where topic = ${OUTBOX_TOPIC_CHANGE} and parked_at is not null`;
  return result.count;
}

/** The parked rows, newest first, with their errors (for `cinv outbox`). */
export function parkedRows(
  sql: Sql,
  limit: number,
): Promise<{ id: string; change_id: string; attempts: number; parked_at: Date; last_error: string | null }[]> {
  return sql`
    select id::text, aggregate_id as change_id, attempts, parked_at, last_error from outbox
    where topic = ${OUTBOX_TOPIC_CHANGE} and parked_at is not null order by parked_at desc, id desc limit ${limit}`;
}
