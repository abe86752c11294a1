import type { Sql } from 'postgres';
import { replicaLag } from '../observability/metrics.js';

/** How often the replica's replay position is compared with the primary's. */
const POLL_MS = 500;

export type ReplicaStatus = 'ok' | 'lagging' | 'unavailable';

export interface ReplicaState {
  status: ReplicaStatus;
  /** Seconds behind the primary; null when unknown (never reached, or not replaying). */
  lagSeconds: number | null;
  /** Why it does not serve, for people. */
  detail?: string;
}

/** A WAL position (`16/B374D848`) as a number that orders like the position. */
export function lsnValue(lsn: string): bigint {
  const [high, low] = lsn.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

/**
 * Follows how far a streaming replica has replayed the primary's WAL, in this process's clock.
 * Every poll notes the time, then the primary's WAL insert position: everything committed before
 * that time lies below that position. Once the replica has replayed past a noted position, it shows
 * everything committed before the noted time: that time is how current the replica is
 * (`currentAt`), and the lag is how long ago it was. Commit timestamps are not used, so the two
 * servers' clocks never meet, and an idle primary does not look like a replica falling behind.
 */
export class ReplicaMonitor {
  /** (time, primary WAL position) noted by the polls, oldest first. */
  private readonly marks: { at: number; lsn: bigint }[] = [];
  private current: number | undefined;
  private reason: string | undefined = 'not checked yet';
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;

  constructor(
    private readonly primary: Sql,
    private readonly replica: Sql,
    private readonly maxLagMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.poll(), POLL_MS);
    this.timer.unref();
    void this.poll();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** One comparison; a poll still running when the next is due is not started again. */
  private poll(): Promise<void> {
    return (this.polling ??= this.compare().finally(() => (this.polling = undefined)));
  }

  private async compare(): Promise<void> {
    try {
      const at = this.clock();
      const [primary] = await this.primary<{ lsn: string }[]>`select pg_current_wal_insert_lsn()::text as lsn`;
      this.marks.push({ at, lsn: lsnValue(primary!.lsn) });
      const [replica] = await this.replica<
        { replayed: string | null }[]
      >`select pg_last_wal_replay_lsn()::text as replayed`;
      if (replica!.replayed === null) {
        this.fail('not a streaming replica: it replays no WAL (pg_last_wal_replay_lsn() is null)');
        return;
      }
      const replayed = lsnValue(replica!.replayed);
      // the newest mark the replica has passed; the marks before it are no longer needed
      let passed = -1;
      for (let i = this.marks.length - 1; i >= 0; i--) {
        if (this.marks[i]!.lsn <= replayed) {
          passed = i;
          break;
        }
      }
      if (passed >= 0) {
        this.current = this.marks[passed]!.at;
        this.marks.splice(0, passed);
      }
      // marks older than any lag worth telling apart are dropped (the replica is then merely "beyond")
      while (this.marks.length > 1 && at - this.marks[0]!.at > Math.max(this.maxLagMs * 4, 60_000)) this.marks.shift();
      this.reason = undefined;
    } catch (error) {
      this.fail(`unreachable: ${(error as Error).message}`);
      return;
    } finally {
      const lag = this.lagMs();
      replicaLag.set(lag === undefined ? -1 : lag / 1000);
    }
  }

  private fail(reason: string): void {
    this.reason = reason;
    this.current = undefined;
  }

  private lagMs(): number | undefined {
    return this.current === undefined ? undefined : Math.max(0, this.clock() - this.current);
  }

  /**
   * Whether the replica may serve a read that must see everything committed up to `since` (this
   * process's clock): it answers, lags no more than CINV_REPLICA_MAX_LAG, and has replayed past it.
   */
  serves(since: number): boolean {
    const lag = this.lagMs();
    return lag !== undefined && lag <= this.maxLagMs && this.current! >= since;
  }

  state(): ReplicaState {
    const lag = this.lagMs();
    if (lag === undefined) return { status: 'unavailable', lagSeconds: null, detail: this.reason };
    const lagSeconds = Math.round(lag) / 1000;
    if (lag > this.maxLagMs)
      return {
        status: 'lagging',
        lagSeconds,
        detail: `more than CINV_REPLICA_MAX_LAG (${this.maxLagMs / 1000} s) behind: the primary serves analyst reads`,
      };
    return { status: 'ok', lagSeconds };
  }
}
