import { dataScopesOf, type Principal } from '../../platform/auth/principal.js';
import type { Sql } from '../../platform/db/database.js';
import { scanFeedSelection, type FeedSelection } from '../records/feed.js';
import type { HistoryFilter } from '../records/store.js';
import type { SubscriptionRow } from './store.js';

/** Full scans kept for subscriptions that read alike: a few for each kind of reader. */
const KEPT_SCANS = 32;

/** Full feed scans lately made, by what decides them (see scanFor). */
export class ScanCache {
  private readonly scans = new Map<string, Promise<FeedSelection[]>>();

  /**
   * The feed from the subscription's place, as its owner reads it. Subscriptions that read alike
   * (the same tenant, data scopes and criteria, from the same place) share one scan: they move
   * through the feed in step, cut at the same records. Only a full scan is kept: nothing can come
   * to lie within it later (positions are handed out in order), whereas a short one ends where the
   * feed ended at the time.
   */
  scanFor(
    sql: Sql,
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
    const scanned = scanFeedSelection(sql, owner, criteria, { position: row.feed_position, id: row.feed_record }, scan);
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
}
