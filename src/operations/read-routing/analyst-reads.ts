import type { Context } from 'koa';
import type { Principal } from '../../platform/auth/principal.js';
import type { AppContext, ReadRouting } from '../../context.js';
import type { Database } from '../../platform/db/database.js';
import { SERVED_BY_HEADER } from '../../platform/http/route.js';
import { ReplicaMonitor, type ReplicaState } from '../../platform/db/replica.js';
import { analystReads } from '../../platform/observability/metrics.js';
import { createSearchBackend } from '../../history/search/backends.js';

/** One person or key, however they signed in: a user's token and their session read alike. */
const readerOf = (principal: Principal): string =>
  principal.user ? `user:${principal.user.id}` : `${principal.kind}:${principal.id}`;

/**
 * Sends analyst reads (search, statistics, history, CSV exports, the inventory of the past) to a
 * streaming replica while it is fresh enough for the reader, and to the primary otherwise.
 *
 * Fresh enough: within CINV_REPLICA_MAX_LAG, and past the reader's own last write (read-your-writes)
 * and past their last read the primary served (reads never go back in time, so the pages of a
 * cursor the primary issued are not walked on an older copy). Both are known to this process: an
 * installation with several API processes keeps a reader on one of them (session affinity) for the
 * guarantee to hold across processes.
 */
export class AnalystReads implements ReadRouting {
  /** When each reader last wrote or was served by the primary, oldest first. */
  private readonly seen = new Map<string, number>();
  private readonly monitor: ReplicaMonitor;
  private readonly replicaApp: AppContext;

  constructor(
    primary: AppContext,
    private readonly replica: Database,
  ) {
    this.monitor = new ReplicaMonitor(primary.sql, replica.sql, primary.config.replicaMaxLagMs);
    this.replicaApp = {
      ...primary,
      sql: replica.sql,
      gate: replica.gate,
      health: replica.health,
      search: createSearchBackend(replica.sql, primary.config, primary.now, undefined, { replica: true }),
      analystReads: undefined,
    };
  }

  start(): void {
    this.monitor.start();
  }

  async stop(): Promise<void> {
    this.monitor.stop();
    await this.replica.close();
  }

  state(): ReplicaState {
    return this.monitor.state();
  }

  /** The context an analyst read runs in, said in the response's SERVED_BY_HEADER. */
  choose(ctx: Context, primary: AppContext, principal: Principal | undefined): AppContext {
    const reader = principal ? readerOf(principal) : undefined;
    const since = reader === undefined ? 0 : (this.seen.get(reader) ?? 0);
    const onReplica = this.replica.health.up && this.monitor.serves(since);
    ctx.set(SERVED_BY_HEADER, onReplica ? 'replica' : 'primary');
    analystReads.inc({ served_by: onReplica ? 'replica' : 'primary' });
    if (onReplica) return this.replicaApp;
    if (reader !== undefined) {
      this.note(reader);
      // a stream (a CSV export) reads until it ends: the reader has seen the primary as late as that
      ctx.res.once('finish', () => this.note(reader));
    }
    return primary;
  }

  /** A reader's request that may have written has succeeded: their next reads must see it. */
  wrote(principal: Principal | undefined): void {
    if (principal) this.note(readerOf(principal));
  }

  private note(reader: string): void {
    const now = Date.now();
    this.seen.delete(reader);
    this.seen.set(reader, now);
    // a replica more current than an old note is also within the lag bound: such notes decide nothing
    const stale = now - this.replicaApp.config.replicaMaxLagMs;
    for (const [who, at] of this.seen) {
      if (at >= stale) break;
      this.seen.delete(who);
    }
  }
}
