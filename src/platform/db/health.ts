import type { Sql } from 'postgres';
import { databaseFailure } from './failures.js';

export interface ProbeResult {
  up: boolean;
  latencyMs?: number;
}

const PROBE_INTERVAL_MS = 500;

/**
 * Knows whether the database can be reached, from a connection of its own: a health check never
 * waits behind requests that hold every pooled connection, so a busy pool does not look like a
 * dead database. When a query fails because the database went away, requests stop waiting for
 * it (they are refused at once with a 503) and the probe retries every half second until it
 * answers again; no restart is needed.
 */
export class DatabaseHealth {
  private reachable = true;
  private recovering: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly probeSql: Sql,
    private readonly timeoutMs: number,
  ) {}

  /** False between a connection failure and the next successful probe. */
  get up(): boolean {
    return this.reachable;
  }

  /** Runs `select 1` on the probe connection, bounded by the timeout; updates the state. */
  async probe(): Promise<ProbeResult> {
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const query = this.probeSql`select 1`;
    try {
      await Promise.race([
        query,
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('probe timed out')), this.timeoutMs);
        }),
      ]);
      this.reachable = true;
      return { up: true, latencyMs: Math.round((performance.now() - started) * 10) / 10 };
    } catch {
      // a timed-out probe may still be queued on its connection; it is left to finish or fail
      query.catch(() => undefined);
      this.markDown();
      return { up: false };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Reports a failed query; connection failures take the database down until a probe succeeds. */
  observe(error: unknown): void {
    if (databaseFailure(error) === 'unavailable') this.markDown();
  }

  private markDown(): void {
    this.reachable = false;
    if (this.recovering || this.closed) return;
    this.recovering = (async () => {
      while (!this.closed) {
        await new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS).unref());
        if (this.closed || (await this.probeOnce())) break;
      }
      this.recovering = undefined;
    })();
  }

  private async probeOnce(): Promise<boolean> {
    const result = await this.probe().catch(() => ({ up: false }));
    return result.up;
  }

  /** Stops probing; the probe connection belongs to whoever created it. */
  stop(): void {
    this.closed = true;
  }
}
