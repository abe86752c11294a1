import type { Context, Next } from 'koa';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { pipeline, Readable, Transform } from 'node:stream';
import { eventLoopDelaySeen, requestsShed, type ShedReason } from '../observability/metrics.js';
import { AppError, tooManyRequests, unavailable } from '../errors.js';
import { renderError } from './error-middleware.js';

/** Paths a load balancer and Prometheus must reach however busy the process is. */
const ALWAYS_SERVED = new Set(['/health', '/health/ready', '/metrics']);

export const isAlwaysServed = (path: string): boolean => ALWAYS_SERVED.has(path);

export interface LoadLimits {
  /** Requests served at once (CINV_MAX_IN_FLIGHT). */
  maxInFlight: number;
  /** CSV exports of the change history and the audit log streamed at once (CINV_MAX_EXPORTS). */
  maxExports: number;
  /** NDJSON pushes reconciled at once (CINV_MAX_NDJSON_PUSHES). */
  maxNdjsonPushes: number;
  /** Mean event-loop delay over the last window beyond which requests are shed; 0: never. */
  maxEventLoopDelayMs: number;
  /** How long the oldest caller may have waited for a database connection before requests are shed; 0: never. */
  maxDatabaseWaitMs: number;
  /** Long polls of the change feed waiting at once (CINV_MAX_LONG_POLLS). */
  maxLongPolls: number;
  /** Long polls of the change feed one principal keeps waiting at once (CINV_MAX_LONG_POLLS_PER_PRINCIPAL). */
  maxLongPollsPerPrincipal: number;
}

/** Runs `waiting` (a long poll's pause between two reads) outside the interactive in-flight count. */
export type Aside = <T>(waiting: () => Promise<T>) => Promise<T>;

/**
 * A request's place in the in-flight count, from its admission until its response is sent. A long
 * poll steps aside while it waits between reads: a request that only waits holds no database
 * connection and no CPU, and must not keep others out.
 */
class Admission {
  private counted = true;
  private ended = false;

  constructor(
    private readonly leave: () => void,
    private readonly enter: () => void,
  ) {}

  end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.counted) this.leave();
  }

  readonly aside: Aside = async (waiting) => {
    if (this.ended || !this.counted) return waiting();
    this.counted = false;
    this.leave();
    try {
      return await waiting();
    } finally {
      // back in the count for its next read, even beyond the limit: it was admitted
      if (!this.ended) {
        this.counted = true;
        this.enter();
      }
    }
  };
}

/** The shedder and the admission of each request it admitted. */
const admissions = new WeakMap<Context['req'], { shedder: LoadShedder; admission: Admission }>();

/**
 * Serves a long poll (a change-feed read with `wait`) for `holder` (the principal asking): refused
 * with a 429 when the holder already keeps CINV_MAX_LONG_POLLS_PER_PRINCIPAL waiting, with a 503
 * `long_polls_busy` when the process keeps CINV_MAX_LONG_POLLS. `poll` is handed the way to wait
 * outside the in-flight count. A request the shedder did not admit (none in front of the routes)
 * is served without either bound.
 */
export async function asLongPoll<T>(ctx: Context, holder: string, poll: (aside: Aside) => Promise<T>): Promise<T> {
  const admitted = admissions.get(ctx.req);
  if (!admitted) return poll((waiting) => waiting());
  const release = admitted.shedder.holdLongPoll(holder);
  try {
    return await poll(admitted.admission.aside);
  } finally {
    release();
  }
}

/** How long the first caller in the database gate's queue has waited, in ms. */
export type DatabaseWait = () => number;

/** Event-loop delays are averaged over windows this long. */
const WINDOW_MS = 500;
const RESOLUTION_MS = 10;

/**
 * The event loop's recent delay: how late a timer fires, averaged over the last window. When it
 * is high, every request waits that long at each step (reading it, each query's answer, each
 * write), so a request admitted now would wait for all the work already queued. One long pause (a
 * collection, a large JSON body) moves the mean little; a loop that never catches up moves it a lot.
 * One per process: there is one event loop, however many apps a process builds.
 */
class EventLoopDelay {
  private readonly histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  private recentMs = 0;

  constructor() {
    this.histogram.enable();
    setInterval(() => this.sample(), WINDOW_MS).unref();
  }

  get delayMs(): number {
    return this.recentMs;
  }

  private sample(): void {
    // the histogram holds the time between the timer's firings, the resolution included
    const mean = this.histogram.count === 0 ? 0 : this.histogram.mean / 1e6 - RESOLUTION_MS;
    this.recentMs = Math.max(0, mean);
    this.histogram.reset();
    eventLoopDelaySeen.set(this.recentMs / 1000);
  }
}

let processLoop: EventLoopDelay | undefined;
const eventLoop = (): EventLoopDelay => (processLoop ??= new EventLoopDelay());

/** Bulk transfers: each class has its own limit, apart from the requests around them. */
interface BulkClass {
  reason: Extract<ShedReason, 'exports' | 'ndjson_pushes'>;
  matches(ctx: Context): boolean;
  refusal(): AppError;
}

const EXPORT_PATHS = new Set(['/api/v1/changes', '/api/v1/audit-events']);
const INGEST_PATH = /^\/api\/v1\/sources\/[^/]+\/ingest$/;

const BULK: readonly BulkClass[] = [
  {
    reason: 'exports',
    // the routes' own negotiation: JSON first, so `*/*` or no Accept is a page, not an export
    matches: (ctx) =>
      (ctx.method === 'GET' || ctx.method === 'HEAD') &&
      EXPORT_PATHS.has(ctx.path) &&
      ctx.accepts('application/json', 'text/csv') === 'text/csv',
    refusal: () =>
      unavailable('The server is streaming as many CSV exports as it allows at once; retry shortly', 'exports_busy', 5),
  },
  {
    reason: 'ndjson_pushes',
    matches: (ctx) =>
      ctx.method === 'POST' && INGEST_PATH.test(ctx.path) && ctx.is('application/x-ndjson') === 'application/x-ndjson',
    refusal: () =>
      unavailable('The server is taking as many NDJSON pushes as it allows at once; retry shortly', 'pushes_busy', 5),
  },
];

/**
 * A CSV export keeps the event loop busy on its own (formatting is most of its cost), so requests
 * served beside it wait for its batches. While others are in flight and the loop lags by more
 * than PACE_ABOVE_MS, an export pauses before each chunk for four times that delay (at most
 * PAUSE_MAX_MS): it slows down, they keep their latency. Exports are few (their own limit), so
 * slower ones mean more are refused, not that they pile up.
 */
const PACE_ABOVE_MS = 10;
const PAUSE_MAX_MS = 250;

const overloaded = (why: string) => unavailable(`The server is at capacity (${why}); retry shortly`, 'overloaded', 1);

/**
 * Sheds load instead of queueing it. A request the process cannot serve promptly is answered 503
 * with `Retry-After` at once, so that a client or load balancer can go elsewhere or come back,
 * and the admitted requests keep their latency. The process is saturated when it serves
 * `maxInFlight` requests, when its event loop lags (CPU-bound work queues every request behind
 * it), or when requests have waited too long for a database connection. Bulk transfers (CSV
 * exports, NDJSON pushes) hold the CPU, the loop and a connection for seconds to minutes each:
 * each kind has a small limit of its own. A request counts until its response is fully sent
 * (streamed exports included), but for the pauses of a long poll between its reads (`asLongPoll`):
 * waiting, it holds neither a connection nor the loop. Long polls have bounds of their own instead,
 * per principal and per process.
 */
export class LoadShedder {
  private current = 0;
  private readonly bulk = new Map<BulkClass['reason'], number>();
  private longPolls = 0;
  private readonly longPollsBy = new Map<string, number>();

  constructor(
    readonly limits: LoadLimits,
    private readonly databaseWait: DatabaseWait,
  ) {
    if (limits.maxEventLoopDelayMs > 0) eventLoop();
    for (const reason of [
      'in_flight',
      'event_loop_delay',
      'database_wait',
      'exports',
      'ndjson_pushes',
      'long_polls',
    ] as const)
      requestsShed.inc({ reason }, 0);
  }

  get maxInFlight(): number {
    return this.limits.maxInFlight;
  }

  get inFlight(): number {
    return this.current;
  }

  /** Long polls being served, waiting or reading. */
  get longPollsHeld(): number {
    return this.longPolls;
  }

  /**
   * Takes one of the long polls `holder` may keep, and one of the process's; the function given
   * back returns them. Throws the refusal when either is used up.
   */
  holdLongPoll(holder: string): () => void {
    const held = this.longPollsBy.get(holder) ?? 0;
    const perPrincipal = this.limits.maxLongPollsPerPrincipal;
    if (held >= perPrincipal) {
      throw tooManyRequests(
        `This credential already keeps ${perPrincipal} change-feed reads waiting, as many as it may at once; retry when one has answered`,
        { reason: 'long_polls', limit: perPrincipal, retry_after: 1 },
        1,
      );
    }
    if (this.longPolls >= this.limits.maxLongPolls) {
      requestsShed.inc({ reason: 'long_polls' });
      throw unavailable(
        'The server keeps as many change-feed reads waiting as it allows at once; retry shortly',
        'long_polls_busy',
        1,
      );
    }
    this.longPolls++;
    this.longPollsBy.set(holder, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.longPolls--;
      const left = this.longPollsBy.get(holder)! - 1;
      if (left === 0) this.longPollsBy.delete(holder);
      else this.longPollsBy.set(holder, left);
    };
  }

  private loopLagging(): boolean {
    return this.limits.maxEventLoopDelayMs > 0 && eventLoop().delayMs > this.limits.maxEventLoopDelayMs;
  }

  private databaseQueued(): boolean {
    return this.limits.maxDatabaseWaitMs > 0 && this.databaseWait() > this.limits.maxDatabaseWaitMs;
  }

  /** Whether the process takes more requests now; what readiness reports. */
  get saturated(): boolean {
    return this.current >= this.limits.maxInFlight || this.loopLagging() || this.databaseQueued();
  }

  /** The refusal for a request arriving now, if it is refused. */
  private refusal(bulk: BulkClass | undefined): { reason: ShedReason; error: AppError } | undefined {
    if (this.current >= this.limits.maxInFlight)
      return { reason: 'in_flight', error: overloaded('too many requests in flight') };
    // a loop lagging with nothing else being served lags for work that has ended, or that refusing
    // this request would not relieve (a collection run): the request is served
    if (this.current > 0 && this.loopLagging())
      return { reason: 'event_loop_delay', error: overloaded('the event loop is behind') };
    if (this.databaseQueued())
      return { reason: 'database_wait', error: overloaded('requests are waiting for database connections') };
    if (bulk && (this.bulk.get(bulk.reason) ?? 0) >= this.bulkLimit(bulk))
      return { reason: bulk.reason, error: bulk.refusal() };
    return undefined;
  }

  /** How long an export waits before sending its next chunk. */
  private exportPause(): number {
    const bound = this.limits.maxEventLoopDelayMs;
    if (bound === 0) return 0;
    let bulk = 0;
    for (const count of this.bulk.values()) bulk += count;
    // alone, an export may take the whole loop
    if (this.current <= bulk) return 0;
    const delay = eventLoop().delayMs;
    return delay > PACE_ABOVE_MS ? Math.min(4 * delay, PAUSE_MAX_MS) : 0;
  }

  /** The export's body, paced by `exportPause`; ending, failing or being destroyed carries through. */
  private paced(body: Readable): Readable {
    const paced = new Transform({
      transform: (chunk: Buffer, _encoding, done) => {
        const pause = this.exportPause();
        if (pause === 0) done(null, chunk);
        else setTimeout(() => done(null, chunk), pause);
      },
    });
    // a failure of either side destroys both: the client sees a broken download, not a short file
    pipeline(body, paced, () => undefined);
    return paced;
  }

  private bulkLimit(kind: BulkClass): number {
    return kind.reason === 'exports' ? this.limits.maxExports : this.limits.maxNdjsonPushes;
  }

  middleware() {
    return async (ctx: Context, next: Next): Promise<void> => {
      if (isAlwaysServed(ctx.path)) return next();
      const kind = BULK.find((candidate) => candidate.matches(ctx));
      const refused = this.refusal(kind);
      if (refused) {
        requestsShed.inc({ reason: refused.reason });
        renderError(ctx, refused.error);
        return;
      }
      const bulk = kind?.reason;
      this.current++;
      if (bulk) this.bulk.set(bulk, (this.bulk.get(bulk) ?? 0) + 1);
      const admission = new Admission(
        () => {
          this.current--;
          if (bulk) this.bulk.set(bulk, this.bulk.get(bulk)! - 1);
        },
        () => {
          this.current++;
          if (bulk) this.bulk.set(bulk, (this.bulk.get(bulk) ?? 0) + 1);
        },
      );
      admissions.set(ctx.req, { shedder: this, admission });
      const done = () => admission.end();
      ctx.res.once('close', done);
      try {
        await next();
        if (bulk === 'exports' && ctx.body instanceof Readable) ctx.body = this.paced(ctx.body);
      } finally {
        // a response that was never sent (the client left first) still ends the count
        if (ctx.res.writableEnded || ctx.res.destroyed) done();
      }
    };
  }
}
