import type { Figures } from './stats-figures.js';
import type { StatsGrouping } from './stats-model.js';

/** Snapshot figures a process keeps at most; past it the cache starts over rather than tracking use. */
const MAX_SNAPSHOTS = 300;

/**
 * The snapshot figures last read, by tenant and grouping, with the version of the row they came
 * from (its `xmin`: every write of the row, the refresh's included, gives it a new one). A read
 * then asks the database only whether the row is still that version; the figures, a few hundred
 * kilobytes in the hourly grouping, are decoded again only when it is not. What it holds is shared
 * between answers and never changed.
 */
export class SnapshotCache {
  private readonly entries = new Map<string, { version: string; figures: Figures }>();

  get(tenantId: string, groupBy: StatsGrouping) {
    return this.entries.get(`${tenantId}:${groupBy}`);
  }

  set(tenantId: string, groupBy: StatsGrouping, version: string, figures: Figures): void {
    if (this.entries.size >= MAX_SNAPSHOTS) this.entries.clear();
    this.entries.set(`${tenantId}:${groupBy}`, { version, figures });
  }
}
