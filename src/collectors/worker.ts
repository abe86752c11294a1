import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AppContext } from '../context.js';
import type { UniversalRecord } from '../inventory/records.js';
import { addReconcileResult, emptyReconcileResult, reconcile, type ReconcileResult } from '../inventory/reconcile.js';
import { loadCredentials, MasterKeys, redactCredentials } from '../sources/credentials.js';
import { AllowedHosts } from '../net/endpoint.js';
import { getSource, type SourceRow } from '../sources/store.js';
import { collectionDuration, collectionRuns, recordsCollected, sourcesDueNotRunning, watchesActive, watchEvents } from '../observability/metrics.js';
import { claimRuns, countQueued, enqueueDue, finishRun, markListing, markWatching, recordOnSource, renewLease, type ClaimedRun, type Components } from './runs.js';
import { WatchExpired, type CollectorType, type CredentialDocument } from '../collector-types/plugin.js';
import { collectingTypes, collectorType } from '../collector-types/registry.js';
import { coalesce } from './watch.js';

export interface WorkerOptions {
  /** Runs this worker executes at once (CINV_WORKER_CONCURRENCY). */
  concurrency: number;
  /** How long a claim holds without renewal; a dead worker's runs are taken over after it. */
  leaseMs: number;
  /** How often the worker looks for due sources and claimable runs. */
  pollMs: number;
  /**
   * Hybrid sources this worker watches at once (CINV_WORKER_WATCHES). A watch mostly waits, so it
   * does not hold one of the `concurrency` slots; beyond this many, hybrid runs end after their list.
   */
  watches?: number;
  /** A watch's changes are written when this many objects changed, or ... */
  watchBatchObjects?: number;
  /** ... this long after the first of them arrived. */
  watchBatchWaitMs?: number;
  /** First wait before reconnecting a watch that failed without delivering anything; doubles up to 30 s. */
  watchRetryMs?: number;
}

/** What a run reconciled, over all its batches. */
type Counts = ReconcileResult & { batches: number; lists: number; watch_events: number; watch_reconnects: number; reconcile_ms: number };

/** The message of a failure, with the source's credentials struck out (a server may echo what it was sent). */
const messageOf = (error: unknown, credentials?: CredentialDocument): string =>
  redactCredentials(error instanceof Error ? ownWords(error) : String(error), credentials).slice(0, 2000);

/** An error's message; one Node leaves empty (a refused connection to every address of a name) is told by its parts or its code. */
function ownWords(error: Error): string {
  if (error.message) return error.message;
  const parts = error instanceof AggregateError ? error.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e))).filter(Boolean) : [];
  if (parts.length > 0) return parts.join('; ');
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? `${error.name}: ${code}` : error.name;
}

/** What JavaScript throws on a mistake in the code (a property of undefined, a bad argument), not on a failing source. */
const PROGRAMMING_ERRORS = [TypeError, RangeError, ReferenceError, SyntaxError, EvalError, URIError];
/**
 * Codes that make even such an error a collection failure: the network, DNS and TLS, and URLs or
 * header values that come from the source's settings or credentials.
 */
const COLLECTION_CODES = /^(E[A-Z0-9_]+|ERR_TLS_\w+|ERR_SSL_\w+|ERR_INVALID_URL|ERR_INVALID_CHAR|ERR_INVALID_HTTP_TOKEN|ERR_STREAM_PREMATURE_CLOSE|UND_ERR_\w+)$/;

/**
 * Whether a failure comes from the code rather than from the source: a message such as "Cannot
 * read properties of undefined" tells the person reading a source's last error nothing, and
 * anything that is not an Error was never meant to be shown. An answer that is not JSON is the
 * source's doing, though JSON.parse reports it as a SyntaxError.
 */
export function isInternalFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && COLLECTION_CODES.test(code)) return false;
  if (error instanceof SyntaxError && /\bJSON\b/.test(error.message)) return false;
  return PROGRAMMING_ERRORS.some((type) => error instanceof type);
}

const MAX_WATCH_RETRY_MS = 30_000;

/** Why a watch was stopped from outside: a trigger asked for a new list, or the run's interval is over. */
type WatchStop = 'resync' | 'due';

/** A run being executed, and what the heartbeat may tell its watch. */
interface Execution {
  controller: AbortController;
  done: Promise<void>;
  watching: boolean;
  /** Stops the current watch (not the run). */
  stopWatch?: (why: WatchStop) => void;
}

/** One run's collection: the source, its type, its credentials and what it did so far. */
interface Collection {
  run: ClaimedRun;
  source: SourceRow;
  type: CollectorType;
  credentials: CredentialDocument | undefined;
  counts: Counts;
  signal: AbortSignal;
  /** Where the watch starts, per key: from the list, then moved on by every batch written. */
  resume: Map<string, string>;
  /** How each part of the latest list went, as the type reported it. */
  components: Components;
}

/**
 * Runs collections: queues the sources whose schedule is due, claims runs with a lease in
 * PostgreSQL (FOR UPDATE SKIP LOCKED, so workers share sources without waiting on each other),
 * streams each collection's batches into the reconciler, renews the lease while it works and
 * records the outcome on the run and its source. A run whose lease is lost (taken over after this
 * worker stalled, or cancelled because its source was deleted) is aborted.
 *
 * A hybrid source's run lists, then watches until its interval is over: the watch's changes are
 * written as deltas in merged batches, a dropped watch reconnects from where it was, and a watch
 * whose start point expired (or a trigger) makes the run list again before it watches on.
 */
export class CollectionWorker {
  readonly id = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly running = new Map<string, Execution>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private stopped = false;
  private readonly allowedHosts: AllowedHosts;

  constructor(
    private readonly app: AppContext,
    private readonly options: WorkerOptions,
  ) {
    this.allowedHosts = new AllowedHosts(app.config.sourceAllowedHosts, { allowPrivate: app.config.sourceAllowPrivate });
  }

  start(): void {
    this.timer = setInterval(() => void this.tick(), this.options.pollMs);
    this.timer.unref();
    void this.tick();
  }

  /** One round: queue what is due, claim what there is room for, start those runs. */
  tick(): Promise<void> {
    this.ticking ??= this.round().finally(() => {
      this.ticking = undefined;
    });
    return this.ticking;
  }

  private async round(): Promise<void> {
    if (this.stopped) return;
    const { sql, logger } = this.app;
    try {
      const now = this.app.now();
      await enqueueDue(sql, collectingTypes(), now);
      const busy = [...this.running.values()].filter((r) => !r.watching).length;
      const claimed = await claimRuns(sql, this.id, this.options.concurrency - busy, now, this.options.leaseMs);
      for (const run of claimed) this.launch(run);
      sourcesDueNotRunning.set(await countQueued(sql));
    } catch (error) {
      logger.warn({ err: error }, 'collection scheduling round failed');
    }
  }

  /** Resolves when every run this worker started has ended. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running.values()].map((r) => r.done));
  }

  /** Runs of this worker that are watching now. */
  get watching(): number {
    return [...this.running.values()].filter((r) => r.watching).length;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.ticking;
    for (const { controller } of this.running.values()) controller.abort(new Error('the worker is stopping'));
    await this.idle();
  }

  private launch(run: ClaimedRun): void {
    const execution: Execution = { controller: new AbortController(), done: Promise.resolve(), watching: false };
    execution.done = this.execute(run, execution)
      .catch((error: unknown) => this.app.logger.error({ err: error, run: run.id }, 'collection run could not be recorded'))
      .finally(() => this.running.delete(run.id));
    this.running.set(run.id, execution);
  }

  private async execute(run: ClaimedRun, execution: Execution): Promise<void> {
    const { sql, logger, config } = this.app;
    const { controller } = execution;
    const started = performance.now();
    const counts: Counts = { ...emptyReconcileResult(), batches: 0, lists: 0, watch_events: 0, watch_reconnects: 0, reconcile_ms: 0 };
    const source = await getSource(sql, run.tenant_id, run.source_id);
    const type = source ? collectorType(source.collector_type) : undefined;
    const intervalMs = Number(source?.schedule_config.interval_minutes ?? 60) * 60_000;
    const watchUntil = this.app.now().getTime() + intervalMs;
    const heartbeat = setInterval(() => {
      renewLease(sql, run.id, this.id, this.app.now(), this.options.leaseMs, execution.watching ? counts : undefined)
        .then((lease) => {
          if (!lease.held) controller.abort(new Error('the run was cancelled or taken over by another worker'));
          else if (lease.resync) execution.stopWatch?.('resync');
          else if (this.app.now().getTime() >= watchUntil) execution.stopWatch?.('due');
        })
        .catch((error: unknown) => logger.warn({ err: error, run: run.id }, 'could not renew a collection lease'));
    }, Math.max(50, Math.floor(this.options.leaseMs / 3)));
    heartbeat.unref();
    let status: 'succeeded' | 'partial' | 'failed' | 'cancelled' = 'succeeded';
    let error: string | null = null;
    let credentials: CredentialDocument | undefined;
    let components: Components = {};
    try {
      if (!source || !type?.collect) throw new Error(source ? `collector type ${source.collector_type} does not collect` : 'the source is gone');
      credentials = source.credentials && config.masterKey
        ? await loadCredentials(sql, new MasterKeys(config.masterKey, config.previousMasterKey), run.tenant_id, source.id)
        : undefined;
      const collection: Collection = { run, source, type, credentials, counts, signal: controller.signal, resume: new Map(), components: {} };
      await this.list(collection);
      components = collection.components;
      const failedParts = Object.entries(components).filter(([, c]) => c.status === 'unhealthy');
      if (failedParts.length > 0) {
        status = 'partial';
        error = failedParts.map(([name, c]) => `${name}: ${c.message ?? 'failed'}`).join('; ').slice(0, 2000);
      }
      if (source.config.collection_mode === 'hybrid' && type.watch) {
        if (this.watching < (this.options.watches ?? 100)) {
          await recordOnSource(sql, source.id, { status: status === 'partial' ? 'partial' : 'succeeded', error, durationMs: Math.round(performance.now() - started), components }, this.app.now());
          await this.follow(collection, execution, watchUntil);
        } else {
          logger.warn({ run: run.id, source: source.name }, 'watch limit reached (CINV_WORKER_WATCHES): the source is listed on its schedule only');
        }
      }
    } catch (caught) {
      const cancelled = controller.signal.aborted;
      status = cancelled ? 'cancelled' : 'failed';
      error = cancelled ? messageOf(controller.signal.reason) : this.failureText(caught, { run: run.id, source: source?.name }, credentials);
    } finally {
      clearInterval(heartbeat);
      this.setWatching(execution, false);
    }
    const durationMs = Math.round(performance.now() - started);
    const recorded = await sql.begin((tx) =>
      finishRun(tx, { id: run.id, worker: this.id, sourceId: run.source_id }, { status, counts, error, durationMs, components, requeue: this.stopped }, this.app.now()),
    );
    const typeLabel = source?.collector_type ?? 'unknown';
    collectionRuns.inc({ collector_type: typeLabel, outcome: status });
    collectionDuration.observe({ collector_type: typeLabel }, durationMs / 1000);
    recordsCollected.inc({ collector_type: typeLabel }, counts.received);
    logger.info({ run: run.id, source: source?.name, status, durationMs, recorded, received: counts.received }, 'collection run ended');
  }

  /** A full list, as a snapshot in batches, within the source's `config.timeout`. */
  private async list(collection: Collection): Promise<void> {
    const { source, type, counts } = collection;
    const timeoutSeconds = typeof source.config.timeout === 'number' ? source.config.timeout : undefined;
    const signal = timeoutSeconds ? AbortSignal.any([collection.signal, AbortSignal.timeout(timeoutSeconds * 1000)]) : collection.signal;
    const resume = new Map<string, string>();
    const components: Components = {};
    const component = (name: string, error?: unknown) => {
      components[name] =
        error === undefined
          ? { status: 'healthy' }
          : { status: 'unhealthy', message: this.failureText(error, { run: collection.run.id, source: source.name, component: name }, collection.credentials) };
    };
    for await (const batch of type.collect!({ source: this.collectedSource(source), credentials: collection.credentials, signal, component, allowedHosts: this.allowedHosts })) {
      signal.throwIfAborted();
      await this.reconcile(collection, batch.scopeId, 'snapshot', batch.records, []);
      if (batch.resume) resume.set(batch.resume.key, batch.resume.version);
    }
    signal.throwIfAborted();
    counts.lists++;
    collection.resume = resume;
    collection.components = components;
  }

  /**
   * Watches until the run's interval is over (the next run lists again) or the run is aborted:
   * reconnects a dropped watch from the newest start points (waiting longer after each attempt
   * that delivered nothing), and lists again when a trigger asks or the start points expired.
   */
  private async follow(collection: Collection, execution: Execution, until: number): Promise<void> {
    const { sql, logger } = this.app;
    const { run, source, type, counts } = collection;
    const retryMs = this.options.watchRetryMs ?? 1000;
    let wait = retryMs;
    this.setWatching(execution, true);
    await markWatching(sql, run.id, this.id, this.app.now());
    while (this.app.now().getTime() < until) {
      collection.signal.throwIfAborted();
      const stop = new AbortController();
      execution.stopWatch = (why) => stop.abort(why);
      const signal = AbortSignal.any([collection.signal, stop.signal]);
      let delivered = false;
      let relist = false;
      try {
        const component = (name: string, error?: unknown) => {
          if (error !== undefined) {
            logger.warn({ run: run.id, source: source.name, component: name, err: this.failureText(error, { run: run.id, source: source.name, component: name }, collection.credentials) }, 'watch component failed');
          }
        };
        const watch = type.watch!({ source: this.collectedSource(source), credentials: collection.credentials, signal, component, allowedHosts: this.allowedHosts, from: Object.fromEntries(collection.resume) });
        for await (const deltas of coalesce(watch, this.options.watchBatchObjects ?? 500, this.options.watchBatchWaitMs ?? 1000)) {
          for (const scope of deltas.scopes) {
            // a bookmark moves the start point and writes nothing
            if (scope.upserts.length + scope.deletions.length > 0) await this.reconcile(collection, scope.scopeId, 'delta', scope.upserts, scope.deletions);
          }
          for (const [key, version] of deltas.resume) collection.resume.set(key, version);
          counts.watch_events += deltas.events;
          watchEvents.inc({ collector_type: type.type }, deltas.events);
          delivered = true;
          if (signal.aborted) break;
        }
      } catch (caught) {
        if (collection.signal.aborted) throw caught;
        if (caught instanceof WatchExpired) relist = true;
        else if (!stop.signal.aborted) logger.warn({ run: run.id, source: source.name, err: this.failureText(caught, { run: run.id, source: source.name }, collection.credentials) }, 'watch dropped; reconnecting');
      } finally {
        execution.stopWatch = undefined;
        stop.abort('done');
      }
      collection.signal.throwIfAborted();
      const stopped = stop.signal.reason as WatchStop | 'done';
      if (stopped === 'due') return;
      if (relist || stopped === 'resync') {
        await markListing(sql, run.id, this.id);
        this.setWatching(execution, false);
        await this.list(collection);
        this.setWatching(execution, true);
        await markWatching(sql, run.id, this.id, this.app.now());
        wait = retryMs;
        continue;
      }
      counts.watch_reconnects++;
      if (delivered) {
        wait = retryMs;
      } else {
        await sleep(wait, undefined, { signal: collection.signal });
        wait = Math.min(wait * 2, MAX_WATCH_RETRY_MS);
      }
    }
  }

  private async reconcile(collection: Collection, scopeId: string | null, mode: 'snapshot' | 'delta', records: readonly UniversalRecord[], deletions: readonly string[]): Promise<void> {
    const { config } = this.app;
    const started = performance.now();
    const result = await reconcile(
      this.app.sql,
      { tenantId: collection.run.tenant_id, sourceId: collection.source.id, scopeId, mode, records, deletions },
      { now: this.app.now(), batchSize: config.reconcileBatchSize, statementTimeoutMs: config.bulkStatementTimeoutMs },
    );
    addReconcileResult(collection.counts, result);
    collection.counts.batches++;
    collection.counts.reconcile_ms += Math.round(performance.now() - started);
  }

  /**
   * What a person reads about a failure (the source's last error, its health, the run): the
   * failure's own words, credentials struck out, for a collection failure; for a mistake in the
   * code, a sentence pointing to the log line that holds the whole error under the same id.
   */
  private failureText(error: unknown, where: { run: string; source?: string; component?: string }, credentials?: CredentialDocument): string {
    if (!isInternalFailure(error)) return messageOf(error, credentials);
    const errorId = randomUUID();
    const redact = (text: string | undefined) => (text === undefined ? undefined : redactCredentials(text, credentials));
    // logged by hand rather than as `err`: the text and stack go through the same redaction
    const failure = error instanceof Error ? { type: error.name, message: redact(error.message), stack: redact(error.stack) } : { value: redact(String(error)) };
    this.app.logger.error({ errorId, ...where, failure }, 'collection failed on an internal error');
    return `The collector failed unexpectedly (internal error ${errorId}); see the server log`;
  }

  private collectedSource(source: SourceRow) {
    return { id: source.id, name: source.name, endpoint: source.endpoint, config: source.config };
  }

  private setWatching(execution: Execution, watching: boolean): void {
    if (execution.watching === watching) return;
    execution.watching = watching;
    watchesActive.inc(watching ? 1 : -1);
  }
}
