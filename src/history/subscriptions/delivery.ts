import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { uuidv7 } from 'uuidv7';
import { can, dataScopesOf, type Principal } from '../../platform/auth/principal.js';
import { feedCriteria } from '../changes/feed.js';
import type { AppContext } from '../../context.js';
import {
  PAST_TRANSACTION,
  recordJson,
  recordsAsJson,
  scanFeedSelection,
  type FeedSelection,
  type RecordContent,
} from '../records/feed.js';
import type { HistoryFilter } from '../records/store.js';
import {
  subscriptionDeadLetters,
  subscriptionDeliveries,
  subscriptionDeliveryLag,
} from '../../platform/observability/metrics.js';
import { ownerPrincipal, sendOptionsOf, subscriptionOf, targetOf } from './service.js';
import { NatsConnections, send, type SendResult, type Target } from './sinks.js';
import {
  cutBatch,
  heldSubscription,
  leaseSubscription,
  oldestPending,
  recordAttempt,
  recutForOwner,
  releaseSubscription,
  setSubscriptionState,
  skipTo,
  subscriptionsToDeliver,
  trimDelivered,
  type AttemptOutcome,
  type DeliveryRow,
  type SubscriptionRow,
} from './store.js';

/** How long one subscription's turn lasts before the others' (each runs apart; this bounds a turn). */
const TURN_MS = 5_000;
const FIRST_RETRY_MS = 1_000;
/** Delivered batches stay in the log (and redeliverable) this long. */
export const DELIVERED_KEPT_MS = 7 * 86_400_000;
const TRIM_EVERY_MS = 600_000;
/** Records' texts kept for the other subscriptions: a few batches of each of them. */
const KEPT_TEXTS = 50_000;
const LONGEST_RETRY_MS = 3_600_000;
/** Full scans kept for subscriptions that read alike: a few for each kind of reader. */
const KEPT_SCANS = 32;

/** Exponential backoff with jitter: about 1 s, 2 s, 4 s … up to an hour, each between half and all of it. */
export function retryDelay(attempts: number, random = Math.random): number {
  const ceiling = Math.min(LONGEST_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

const messageIdOf = (subscriptionId: string, sequence: string) => `msg_${subscriptionId.replace(/-/g, '')}_${sequence}`;

/** A message's body: the records are JSON texts already (written once for every subscription). */
function messageBody(
  type: 'cinv.changes' | 'cinv.test',
  now: Date,
  subscriptionId: string,
  sequence: string,
  records: readonly string[],
): string {
  return (
    `{"type":${JSON.stringify(type)},"timestamp":${JSON.stringify(now.toISOString())},` +
    `"data":{"subscription_id":${JSON.stringify(subscriptionId)},"sequence":${sequence},"records":[${records.join(',')}]}}`
  );
}

/** The owner's rights as of one turn, with whose they are. */
interface Owner {
  key: string;
  principal: Principal | undefined;
}

const ownerKey = (row: SubscriptionRow) => `${row.owner_kind}:${row.owner_id}`;

/**
 * Delivers every enabled subscription: each follows the change feed from its own place with its
 * owner's rights as they are at that moment, cuts batches (at most CINV_SUBSCRIPTION_BATCH_RECORDS
 * records or about CINV_SUBSCRIPTION_BATCH_BYTES), and sends them one after the other, a failed one
 * retried with backoff before any later one goes. Subscriptions run apart: a slow or failing
 * receiver holds back only its own. Across processes a lease in the row keeps one sender per
 * subscription; a process that dies leaves it to another when the lease runs out, which sends the
 * pending batch again under the same message id.
 */
export class SubscriptionDelivery {
  private readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly busy = new Map<string, Promise<void>>();
  private readonly nats = new NatsConnections();
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private stopped = false;
  private trimmedAt = 0;
  /** Full feed scans lately made, by what decides them (see scanFor). */
  private readonly scans = new Map<string, Promise<FeedSelection[]>>();
  /** Records' JSON texts lately written out, by record id (see jsonOf). */
  private readonly texts = new Map<string, string>();
  /** Each subscription's decrypted target, as of its row's last seal (a rotation's overlap ending changes it too). */
  private readonly targets = new Map<string, { version: string; target: Promise<Target> }>();

  constructor(private readonly app: AppContext) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), this.app.config.subscriptionPollMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await Promise.allSettled(this.busy.values());
    await this.nats.close();
  }

  /** One round: starts a turn for every subscription with no turn running here. */
  async tick(): Promise<void> {
    if (this.ticking || this.stopped) return;
    this.ticking = true;
    try {
      if (Date.now() - this.trimmedAt > TRIM_EVERY_MS) {
        this.trimmedAt = Date.now();
        await trimDelivered(this.app.sql, new Date(this.app.now().getTime() - DELIVERED_KEPT_MS));
      }
      for (const id of await subscriptionsToDeliver(this.app.sql, this.owner, this.app.now())) {
        if (this.busy.has(id)) continue;
        const turn = this.turn(id).finally(() => this.busy.delete(id));
        this.busy.set(id, turn);
      }
    } catch (error) {
      this.app.logger.warn({ err: error }, 'subscription delivery round failed');
    } finally {
      this.ticking = false;
    }
  }

  /** Waits for the turns running now (tests). */
  async settle(): Promise<void> {
    await Promise.allSettled(this.busy.values());
  }

  /**
   * Steps through one subscription until it has nothing to do at once or its turn is up. The
   * owner's rights are read once a turn (again if the owner changes meanwhile). A turn that fails
   * (a database error, criteria the database refuses) marks the subscription failing with the reason,
   * so that it does not stand still unseen.
   */
  private async turn(id: string): Promise<void> {
    const started = Date.now();
    let owner: Owner | undefined;
    try {
      const leaseMs = this.app.config.subscriptionLeaseMs;
      let renewAt = 0;
      for (;;) {
        const now = this.app.now();
        // the lease is renewed once half of it has gone; meanwhile the row is only read
        const row =
          Date.now() < renewAt
            ? await heldSubscription(this.app.sql, id, this.owner, now)
            : await leaseSubscription(this.app.sql, id, this.owner, now, new Date(now.getTime() + leaseMs));
        if (!row) return;
        if (Date.now() >= renewAt) renewAt = Date.now() + leaseMs / 2;
        if (owner?.key !== ownerKey(row))
          owner = { key: ownerKey(row), principal: await ownerPrincipal(this.app, row) };
        if (this.stopped || Date.now() - started > TURN_MS || !(await this.step(row, owner.principal))) {
          if (this.stopped) await releaseSubscription(this.app.sql, id, this.owner);
          return;
        }
      }
    } catch (error) {
      this.app.logger.warn({ err: error, subscription_id: id }, 'subscription delivery failed');
      await setSubscriptionState(this.app.sql, id, 'failing', `delivery stopped: ${(error as Error).message}`, {
        onlyFrom: ['active', 'failing'],
      }).catch(() => {});
    }
  }

  /**
   * One thing done for a subscription; true when more may be done at once. Nothing is sent while
   * its owner may not read changes, and a batch goes out only for the owner it was cut for.
   */
  private async step(row: SubscriptionRow & { pending: boolean }, owner: Principal | undefined): Promise<boolean> {
    if (!owner || !can(owner, 'changes', 'read')) {
      if (row.state !== 'paused') {
        const reason = owner
          ? 'the owner may no longer read changes (changes:read)'
          : 'the owner is revoked, expired or deactivated';
        await setSubscriptionState(this.app.sql, row.id, 'paused', reason);
      }
      return false;
    }
    if (row.state === 'paused')
      await setSubscriptionState(this.app.sql, row.id, 'active', null, { onlyFrom: ['paused'] });
    const pending = row.pending ? await oldestPending(this.app.sql, row.id) : undefined;
    if (pending) {
      if (pending.owner_kind !== row.owner_kind || pending.owner_id !== row.owner_id)
        return (await recutForOwner(this.app.sql, row.id)) > 0;
      if (pending.next_attempt_at && pending.next_attempt_at > this.app.now()) return false;
      return this.attempt(row, pending, owner);
    }
    const batch = await this.nextBatch(row, owner);
    if (!batch) return false;
    if (batch === 'skipped') return true;
    return this.attempt(row, batch, owner);
  }

  /** Cuts the next batch from the feed, as the owner reads it now. */
  private async nextBatch(row: SubscriptionRow, owner: Principal): Promise<DeliveryRow | 'skipped' | undefined> {
    const { subscriptionBatchRecords: most, subscriptionBatchBytes: bytes } = this.app.config;
    // one batch's worth: what is scanned and selected beyond the batch would be written out for nothing
    const scan = most;
    const criteria = feedCriteria({ filter: row.filters, search: row.search ?? undefined });
    const entries = await this.scanFor(row, owner, criteria, scan);
    if (entries.length === 0) return undefined;
    const records: { id: string; at: string }[] = [];
    let size = 0;
    let next = entries[0]!.place;
    let passed = 0;
    let committedAt: Date | undefined;
    for (const entry of entries) {
      const json = entry.content ? this.textOf(entry.content) : undefined;
      if (json !== undefined) {
        if (records.length > 0 && (records.length === most || size + json.length > bytes)) break;
        records.push({ id: entry.place.id, at: entry.at });
        size += json.length + 1;
        committedAt ??= entry.committedAt;
      }
      next = entry.place;
      passed++;
    }
    // a scan that came back short read every place to its end: the last transaction is done with, and
    // the place says so, so that only a later position gives this subscription work (subscriptionsToDeliver)
    if (passed === entries.length && entries.length < scan) next = { position: next.position, id: PAST_TRANSACTION };
    if (records.length === 0) {
      await skipTo(this.app.sql, row, next);
      return entries.length === scan ? 'skipped' : undefined;
    }
    const now = this.app.now();
    return cutBatch(this.app.sql, {
      subscription: row,
      records,
      messageId: messageIdOf(row.id, row.next_sequence),
      committedAt: committedAt!,
      next,
      now,
    });
  }

  /**
   * The feed from the subscription's place, as its owner reads it. Subscriptions that read alike
   * (the same tenant, data scopes and criteria, from the same place) share one scan: they move
   * through the feed in step, cut at the same records. Only a full scan is kept: nothing can come
   * to lie within it later (positions are handed out in order), whereas a short one ends where the
   * feed ended at the time.
   */
  private scanFor(
    row: SubscriptionRow,
    owner: Principal,
    criteria: HistoryFilter,
    scan: number,
  ): Promise<FeedSelection[]> {
    const key = JSON.stringify([
      owner.tenantId,
      dataScopesOf(owner),
      row.filters,
      row.search,
      row.feed_position,
      row.feed_record,
      scan,
    ]);
    const kept = this.scans.get(key);
    if (kept) return kept;
    const scanned = scanFeedSelection(
      this.app.sql,
      owner,
      criteria,
      { position: row.feed_position, id: row.feed_record },
      scan,
    );
    this.scans.set(key, scanned);
    void scanned.then(
      (entries) => entries.length < scan && this.scans.delete(key),
      () => this.scans.delete(key),
    );
    for (const oldest of this.scans.keys()) {
      if (this.scans.size <= KEPT_SCANS) break;
      this.scans.delete(oldest);
    }
    return scanned;
  }

  /** Sends a batch once and records how it went; true when the next may follow at once. */
  private async attempt(row: SubscriptionRow, delivery: DeliveryRow, owner: Principal): Promise<boolean> {
    const sink = row.sink.type;
    let result: SendResult;
    try {
      const body = await this.bodyOf(row, delivery);
      if (body === undefined) {
        // kept longer than the history it names (a redelivery after retention trimmed it): it cannot be written again
        await this.deadLetter(row, delivery, {
          responseStatus: null,
          responseMs: 0,
          error: 'its change records were removed by retention before it was sent',
          at: this.app.now(),
        });
        return true;
      }
      const target = await this.targetFor(row);
      result = await send(target, { messageId: delivery.message_id, body }, sendOptionsOf(this.app, owner), this.nats);
    } catch (error) {
      // the server's own trouble (a secret that does not decrypt, no master key): no network detail in it
      result = {
        ok: false,
        status: null,
        ms: 0,
        error: (error as Error).message,
        detail: (error as Error).message,
        gone: false,
      };
    }
    if (!result.ok) logFailure(this.app, row, result, { delivery_id: delivery.id, sequence: delivery.sequence });
    const now = this.app.now();
    const outcome = { responseStatus: result.status, responseMs: result.ms, error: result.error, at: now };
    if (result.ok) {
      await recordAttempt(this.app.sql, delivery.id, { ...outcome, status: 'delivered', nextAttemptAt: null });
      subscriptionDeliveries.inc({ sink, outcome: 'delivered' });
      subscriptionDeliveryLag.observe({ sink }, Math.max(0, (Date.now() - delivery.committed_at.getTime()) / 1000));
      if (row.state === 'failing')
        await setSubscriptionState(this.app.sql, row.id, 'active', null, { onlyFrom: ['failing'] });
      return true;
    }
    if (result.gone) {
      // kept pending: enabling the subscription again sends it first
      await recordAttempt(this.app.sql, delivery.id, { ...outcome, status: 'pending', nextAttemptAt: now });
      await setSubscriptionState(this.app.sql, row.id, 'gone', 'the receiver answered 410 Gone: disabled', {
        disable: true,
      });
      subscriptionDeliveries.inc({ sink, outcome: 'gone' });
      return false;
    }
    const retryAt = new Date(now.getTime() + retryDelay(delivery.attempts + 1));
    if (retryAt.getTime() > delivery.retry_since.getTime() + this.app.config.subscriptionRetryWindowMs) {
      await this.deadLetter(row, delivery, outcome);
      return true;
    }
    await recordAttempt(this.app.sql, delivery.id, { ...outcome, status: 'pending', nextAttemptAt: retryAt });
    subscriptionDeliveries.inc({ sink, outcome: 'failed' });
    return false;
  }

  /** Sets a batch aside for good: the subscription is marked failing with why, and it counts as a dead letter. */
  private async deadLetter(
    row: SubscriptionRow,
    delivery: DeliveryRow,
    outcome: Omit<AttemptOutcome, 'status' | 'nextAttemptAt'>,
  ): Promise<void> {
    const sink = row.sink.type;
    await recordAttempt(this.app.sql, delivery.id, { ...outcome, status: 'dead', nextAttemptAt: null });
    await setSubscriptionState(
      this.app.sql,
      row.id,
      'failing',
      `batch ${delivery.sequence} dead-lettered: ${outcome.error}`,
    );
    subscriptionDeliveries.inc({ sink, outcome: 'dead' });
    subscriptionDeadLetters.inc({ sink });
  }

  /**
   * A batch's body, the same on every attempt: written from its records (usually still among the
   * texts kept from cutting it) with the moment it was cut; undefined when a record is gone.
   */
  private async bodyOf(row: SubscriptionRow, delivery: DeliveryRow): Promise<string | undefined> {
    if (delivery.body !== null) return delivery.body;
    const ids = delivery.record_ids!;
    const texts = await this.jsonOf(
      row.tenant_id,
      ids.map((id, i) => ({ id, at: delivery.record_times![i]! })),
    );
    const records = ids.map((id) => texts.get(id));
    if (records.some((text) => text === undefined)) return undefined;
    return messageBody('cinv.changes', delivery.created_at, row.id, delivery.sequence, records as string[]);
  }

  /**
   * A record's JSON as scanned, from the texts kept for the subscriptions that read it before (every
   * subscription reads the same records near the same time: each is written out once).
   */
  private textOf(content: RecordContent): string {
    let text = this.texts.get(content.id);
    if (text === undefined) this.keep(content.id, (text = recordJson(content)));
    return text;
  }

  /** The records' JSON by id and time, from the kept texts, the rest read again (a batch sent again later). */
  private async jsonOf(tenantId: string, records: { id: string; at: string }[]): Promise<Map<string, string>> {
    const found = new Map<string, string>();
    const missing = records.filter((record) => {
      const text = this.texts.get(record.id);
      if (text !== undefined) found.set(record.id, text);
      return text === undefined;
    });
    for (const [id, text] of await recordsAsJson(this.app.sql, tenantId, missing)) {
      found.set(id, text);
      this.keep(id, text);
    }
    return found;
  }

  private keep(id: string, text: string): void {
    this.texts.set(id, text);
    if (this.texts.size <= KEPT_TEXTS) return;
    // the oldest quarter goes at once (a Map keeps insertion order). One at a time, each removal
    // walked past every earlier one still held as a hole in the Map: a third of a drain's time.
    let drop = this.texts.size - Math.floor((KEPT_TEXTS * 3) / 4);
    for (const kept of this.texts.keys()) {
      if (drop-- <= 0) break;
      this.texts.delete(kept);
    }
  }

  private targetFor(row: SubscriptionRow): Promise<Target> {
    const rotating = row.previous_until !== null && row.previous_until > this.app.now();
    // every PUT and rotation seals anew, with a new nonce: it tells a changed target apart even within one millisecond
    const version = `${row.secret_nonce.toString('hex')}|${row.sink.url}|${rotating}`;
    const known = this.targets.get(row.id);
    if (known?.version === version) return known.target;
    const target = targetOf(this.app, row);
    target.catch(() => this.targets.delete(row.id));
    this.targets.set(row.id, { version, target });
    return target;
  }
}

/**
 * What a failed send did exactly, for the server log: clients see only the coarse `error` (see
 * NOT_TAKEN in sinks.ts). Neither the URL (its query may hold a token) nor a header or secret.
 */
function logFailure(app: AppContext, row: SubscriptionRow, result: SendResult, about: Record<string, string>): void {
  app.logger.warn(
    { subscription_id: row.id, sink: row.sink.type, ...about, detail: result.detail, response_ms: result.ms },
    'subscription message not delivered',
  );
}

/**
 * Sends a signed sample message (`cinv.test`, no records) at once and says how the receiver answered,
 * as coarsely as the deliveries log does.
 */
export async function sendTestMessage(app: AppContext, principal: Principal, id: string): Promise<SendResult> {
  const row = await subscriptionOf(app, principal, id);
  const body = messageBody('cinv.test', app.now(), row.id, '0', []);
  const nats = new NatsConnections();
  try {
    const options = sendOptionsOf(app, await ownerPrincipal(app, row));
    const result = await send(
      await targetOf(app, row),
      { messageId: `msg_test_${uuidv7().replace(/-/g, '')}`, body },
      options,
      nats,
    );
    if (!result.ok) logFailure(app, row, result, { test: 'true' });
    return result;
  } finally {
    await nats.close();
  }
}
