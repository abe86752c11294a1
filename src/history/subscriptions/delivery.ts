import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { deliverQualityAlerts } from './quality-alerts.js';
import { can, type Principal } from '../../platform/auth/principal.js';
import { feedCriteria } from '../changes/feed.js';
import type { AppContext } from '../../context.js';
import {
  subscriptionDeadLetters,
  subscriptionDeliveries,
  subscriptionDeliveryLag,
} from '../../platform/observability/metrics.js';
import { ownerPrincipal } from './access.js';
import { cutRecords } from './batch-cut.js';
import {
  cutBatch,
  oldestPending,
  recordAttempt,
  recutForOwner,
  skipTo,
  trimDelivered,
  type AttemptOutcome,
  type DeliveryRow,
} from './batch-store.js';
import {
  heldSubscription,
  leaseSubscription,
  releaseSubscription,
  setSubscriptionState,
  subscriptionsToDeliver,
} from './lease-store.js';
import { logFailure, messageBody, messageIdOf } from './messages.js';
import { sendOptionsOf } from './receivers.js';
import { ScanCache } from './scan-cache.js';
import { NatsConnections, send, type SendResult } from './sinks.js';
import type { SubscriptionRow } from './store.js';
import { TargetCache } from './target-cache.js';
import { TextCache } from './text-cache.js';

/** How long one subscription's turn lasts before the others' (each runs apart; this bounds a turn). */
const TURN_MS = 5_000;
const FIRST_RETRY_MS = 1_000;
/** Delivered batches stay in the log (and redeliverable) this long. */
/** How often the scores are compared with the thresholds (they move with the sweep). */
const QUALITY_EVERY_MS = 60_000;

export const DELIVERED_KEPT_MS = 7 * 86_400_000;
const TRIM_EVERY_MS = 600_000;
const LONGEST_RETRY_MS = 3_600_000;

/** Exponential backoff with jitter: about 1 s, 2 s, 4 s … up to an hour, each between half and all of it. */
export function retryDelay(attempts: number, random = Math.random): number {
  const ceiling = Math.min(LONGEST_RETRY_MS, FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
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
  private qualityAt = 0;
  private readonly scans = new ScanCache();
  private readonly texts = new TextCache();
  private readonly targets = new TargetCache();

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
      if (Date.now() - this.qualityAt > QUALITY_EVERY_MS) {
        this.qualityAt = Date.now();
        await deliverQualityAlerts(this.app, this.nats).catch((error: unknown) =>
          this.app.logger.warn({ err: error }, 'quality alerts not delivered'),
        );
      }
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
    const entries = await this.scans.scanFor(this.app.sql, row, owner, criteria, scan);
    if (entries.length === 0) return undefined;
    const { records, committedAt, next } = cutRecords(entries, scan, { most, bytes }, (content) =>
      this.texts.textOf(content),
    );
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
      const target = await this.targets.targetFor(this.app, row);
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
    const texts = await this.texts.jsonOf(
      this.app.sql,
      row.tenant_id,
      ids.map((id, i) => ({ id, at: delivery.record_times![i]! })),
    );
    const records = ids.map((id) => texts.get(id));
    if (records.some((text) => text === undefined)) return undefined;
    return messageBody('cinv.changes', delivery.created_at, row.id, delivery.sequence, records as string[]);
  }
}
