import { setTimeout as sleep } from 'node:timers/promises';
import { WatchExpired, type CollectContext, type CollectorType, type CredentialDocument } from '../../types/plugin.js';
import { collectorType } from '../../types/registry.js';
import type { AppContext } from '../../../context.js';
import { newBulkLoad, type BulkLoad } from '../../../inventory/write-path/reconcile.js';
import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import {
  collectionDuration,
  collectionRuns,
  recordsCollected,
  watchesActive,
  watchEvents,
} from '../../../platform/observability/metrics.js';
import { collectionCredentials, getSource, type SourceRow } from '../../sources/service.js';
import { sourceListed } from '../../../inventory/quality/service.js';
import type { Claimant } from './claimant.js';
import { failedPartsText, failureText, messageOf, type FailureSite } from './failures.js';
import { markListing, markWatching, renewLease, type ClaimedRun } from './leases.js';
import { LIST_PART_BATCHES, ListWriter } from './list-writer.js';
import { finishRun, recordOnSource, type Components } from './runs.js';
import { coalesce, type Deltas } from './watch.js';
import { emptyCounts, reconcileBatch, type Counts } from './writes.js';

const MAX_WATCH_RETRY_MS = 30_000;

/** Why a watch was stopped from outside: a trigger asked for a new list, or the run's interval is over. */
type WatchStop = 'resync' | 'due';

/** One run's collection: the source, its type, its credentials and what it did so far. */
interface Collection {
  source: SourceRow;
  type: CollectorType;
  credentials: CredentialDocument | undefined;
  signal: AbortSignal;
  /** Where the watch starts, per key: from the list, then moved on by every batch written. */
  resume: Map<string, string>;
  /** How each part of the latest list went, as the type reported it. */
  components: Components;
  /** What the reconciles of the latest list (page by page) and of the watch after it share. */
  load: BulkLoad;
}

const collectedSource = (source: SourceRow) => ({
  id: source.id,
  name: source.name,
  endpoint: source.endpoint,
  config: source.config,
});

/**
 * One claimed run, from its source to its recorded outcome: lists the source as a snapshot in
 * batches, watches a hybrid source until its interval is over, renews the run's lease meanwhile
 * and records how it went on the run and its source. Losing the lease (taken over, or cancelled
 * because the source was deleted or disabled) aborts it.
 */
export class RunExecution {
  readonly controller = new AbortController();
  /** Watching (hybrid, after its list): it does not hold one of the worker's `concurrency` slots. */
  watching = false;
  /** Stops the current watch (not the run). */
  private stopWatch: ((why: WatchStop) => void) | undefined;
  private readonly started = performance.now();
  private readonly counts: Counts = emptyCounts();
  private status: 'succeeded' | 'partial' | 'failed' | 'cancelled' = 'succeeded';
  private error: string | null = null;
  private credentials: CredentialDocument | undefined;
  /** How the first list's parts went: what the run and its source report. */
  private components: Components = {};

  constructor(
    private readonly app: AppContext,
    private readonly worker: Claimant,
    private readonly run: ClaimedRun,
  ) {}

  async execute(): Promise<void> {
    const source = await getSource(this.app.sql, this.run.tenant_id, this.run.source_id);
    const type = source ? collectorType(source.collector_type) : undefined;
    const intervalMs = Number(source?.schedule_config.interval_minutes ?? 60) * 60_000;
    const watchUntil = this.app.now().getTime() + intervalMs;
    const heartbeat = this.startHeartbeat(watchUntil);
    try {
      if (!source || !type?.collect)
        throw new Error(source ? `collector type ${source.collector_type} does not collect` : 'the source is gone');
      await this.collect(source, type, watchUntil);
    } catch (caught) {
      const cancelled = this.controller.signal.aborted;
      this.status = cancelled ? 'cancelled' : 'failed';
      this.error = cancelled
        ? messageOf(this.controller.signal.reason)
        : this.failureText(caught, { run: this.run.id, source: source?.name });
    } finally {
      clearInterval(heartbeat);
      this.setWatching(false);
    }
    await this.finish(source);
  }

  /** Renews the lease every third of it; tells the watch to stop when a trigger asks or the interval is over. */
  private startHeartbeat(watchUntil: number): NodeJS.Timeout {
    const { sql, logger } = this.app;
    const heartbeat = setInterval(
      () => {
        renewLease(
          sql,
          this.run.id,
          this.worker.id,
          this.app.now(),
          this.worker.options.leaseMs,
          this.watching ? this.counts : undefined,
        )
          .then((lease) => {
            if (!lease.held) this.controller.abort(new Error('the run was cancelled or taken over by another worker'));
            else if (lease.resync) this.stopWatch?.('resync');
            else if (this.app.now().getTime() >= watchUntil) this.stopWatch?.('due');
          })
          .catch((error: unknown) =>
            logger.warn({ err: error, run: this.run.id }, 'could not renew a collection lease'),
          );
      },
      Math.max(50, Math.floor(this.worker.options.leaseMs / 3)),
    );
    heartbeat.unref();
    return heartbeat;
  }

  /** The list, and for a hybrid source the watch after it (as long as the worker may watch one more). */
  private async collect(source: SourceRow, type: CollectorType, watchUntil: number): Promise<void> {
    const { sql, logger } = this.app;
    this.credentials = await collectionCredentials(this.app, this.run.tenant_id, source);
    const collection: Collection = {
      source,
      type,
      credentials: this.credentials,
      signal: this.controller.signal,
      resume: new Map(),
      components: {},
      load: newBulkLoad(),
    };
    await this.list(collection);
    this.components = collection.components;
    const failedParts = failedPartsText(this.components);
    if (failedParts !== undefined) {
      this.status = 'partial';
      this.error = failedParts;
    }
    if (source.config.collection_mode !== 'hybrid' || !type.watch) return;
    if (this.worker.watching() >= (this.worker.options.watches ?? 100)) {
      logger.warn(
        { run: this.run.id, source: source.name },
        'watch limit reached (CINV_WORKER_WATCHES): the source is listed on its schedule only',
      );
      return;
    }
    const listed = {
      status: this.status === 'partial' ? ('partial' as const) : ('succeeded' as const),
      error: this.error,
      durationMs: this.elapsedMs(),
      components: this.components,
    };
    await recordOnSource(sql, source.id, listed, this.app.now());
    await this.follow(collection, watchUntil);
  }

  /** A full list, as a snapshot in batches, within the source's `config.timeout`. */
  private async list(collection: Collection): Promise<void> {
    const { source, type } = collection;
    const listedAt = this.app.now();
    const timeoutSeconds = typeof source.config.timeout === 'number' ? source.config.timeout : undefined;
    const signal = timeoutSeconds
      ? AbortSignal.any([collection.signal, AbortSignal.timeout(timeoutSeconds * 1000)])
      : collection.signal;
    const resume = new Map<string, string>();
    const components: Components = {};
    collection.load = newBulkLoad();
    const component = (name: string, error?: unknown) => {
      components[name] =
        error === undefined
          ? { status: 'healthy' }
          : {
              status: 'unhealthy',
              message: this.failureText(error, { run: this.run.id, source: source.name, component: name }),
            };
    };
    const writer = new ListWriter(
      (scopeId, records) => this.reconcile(collection, scopeId, 'snapshot', records, []),
      LIST_PART_BATCHES * this.app.config.reconcileBatchSize,
    );
    try {
      for await (const batch of type.collect!(this.contextFor(collection, signal, component))) {
        signal.throwIfAborted();
        await writer.add(batch.scopeId, batch.records);
        this.counts.batches++;
        if (batch.resume) resume.set(batch.resume.key, batch.resume.version);
      }
      signal.throwIfAborted();
      await writer.flush();
    } finally {
      // a failed list still waits for the write in flight: the run must not end while it writes
      await writer.settled();
    }
    this.counts.lists++;
    // a whole list: what it did not see, it did not see (data-quality freshness)
    if (failedPartsText(components) === undefined)
      await sourceListed(this.app, this.run.tenant_id, source.id, listedAt);
    collection.resume = resume;
    collection.components = components;
  }

  /**
   * Watches until the run's interval is over (the next run lists again) or the run is aborted:
   * reconnects a dropped watch from the newest start points (waiting longer after each attempt
   * that delivered nothing), and lists again when a trigger asks or the start points expired.
   */
  private async follow(collection: Collection, until: number): Promise<void> {
    const retryMs = this.worker.options.watchRetryMs ?? 1000;
    let wait = retryMs;
    this.setWatching(true);
    await markWatching(this.app.sql, this.run.id, this.worker.id, this.app.now());
    while (this.app.now().getTime() < until) {
      collection.signal.throwIfAborted();
      const { delivered, relist, stopped } = await this.watchOnce(collection);
      collection.signal.throwIfAborted();
      if (stopped === 'due') return;
      if (relist || stopped === 'resync') {
        await this.relist(collection);
        wait = retryMs;
        continue;
      }
      this.counts.watch_reconnects++;
      if (delivered) {
        wait = retryMs;
      } else {
        await sleep(wait, undefined, { signal: collection.signal });
        wait = Math.min(wait * 2, MAX_WATCH_RETRY_MS);
      }
    }
  }

  /** One connection of the watch, until it ends, fails or is stopped; says how it ended. */
  private async watchOnce(
    collection: Collection,
  ): Promise<{ delivered: boolean; relist: boolean; stopped: WatchStop | 'done' }> {
    const { logger } = this.app;
    const { source, type } = collection;
    const stop = new AbortController();
    this.stopWatch = (why) => stop.abort(why);
    const signal = AbortSignal.any([collection.signal, stop.signal]);
    let delivered = false;
    let relist = false;
    try {
      const component = (name: string, error?: unknown) => {
        if (error !== undefined) {
          logger.warn(
            {
              run: this.run.id,
              source: source.name,
              component: name,
              err: this.failureText(error, { run: this.run.id, source: source.name, component: name }),
            },
            'watch component failed',
          );
        }
      };
      const watch = type.watch!({
        ...this.contextFor(collection, signal, component),
        from: Object.fromEntries(collection.resume),
      });
      for await (const deltas of coalesce(
        watch,
        this.worker.options.watchBatchObjects ?? 500,
        this.worker.options.watchBatchWaitMs ?? 1000,
      )) {
        await this.writeDeltas(collection, deltas);
        delivered = true;
        if (signal.aborted) break;
      }
    } catch (caught) {
      if (collection.signal.aborted) throw caught;
      if (caught instanceof WatchExpired) relist = true;
      else if (!stop.signal.aborted)
        logger.warn(
          {
            run: this.run.id,
            source: source.name,
            err: this.failureText(caught, { run: this.run.id, source: source.name }),
          },
          'watch dropped; reconnecting',
        );
    } finally {
      this.stopWatch = undefined;
      stop.abort('done');
    }
    return { delivered, relist, stopped: stop.signal.reason as WatchStop | 'done' };
  }

  private async writeDeltas(collection: Collection, deltas: Deltas): Promise<void> {
    for (const scope of deltas.scopes) {
      // a bookmark moves the start point and writes nothing
      if (scope.upserts.length + scope.deletions.length > 0) {
        await this.reconcile(collection, scope.scopeId, 'delta', scope.upserts, scope.deletions);
        this.counts.batches++;
      }
    }
    for (const [key, version] of deltas.resume) collection.resume.set(key, version);
    this.counts.watch_events += deltas.events;
    watchEvents.inc({ collector_type: collection.type.type }, deltas.events);
  }

  /** A watching run lists everything again, then watches on from the new list. */
  private async relist(collection: Collection): Promise<void> {
    const { sql } = this.app;
    await markListing(sql, this.run.id, this.worker.id);
    this.setWatching(false);
    await this.list(collection);
    this.setWatching(true);
    await markWatching(sql, this.run.id, this.worker.id, this.app.now());
  }

  private reconcile(
    collection: Collection,
    scopeId: string | null,
    mode: 'snapshot' | 'delta',
    records: readonly UniversalRecord[],
    deletions: readonly string[],
  ): Promise<void> {
    const target = { tenantId: this.run.tenant_id, sourceId: collection.source.id, load: collection.load };
    return reconcileBatch(this.app, this.counts, target, { scopeId, mode, records, deletions });
  }

  /** Ends the run (unless it is no longer this worker's) and counts it in the metrics. */
  private async finish(source: SourceRow | undefined): Promise<void> {
    const { status, counts, error, components } = this;
    const durationMs = this.elapsedMs();
    const run = { id: this.run.id, worker: this.worker.id, sourceId: this.run.source_id };
    const recorded = await this.app.sql.begin((tx) =>
      finishRun(
        tx,
        run,
        { status, counts, error, durationMs, components, requeue: this.worker.stopping() },
        this.app.now(),
      ),
    );
    const typeLabel = source?.collector_type ?? 'unknown';
    collectionRuns.inc({ collector_type: typeLabel, outcome: status });
    collectionDuration.observe({ collector_type: typeLabel }, durationMs / 1000);
    recordsCollected.inc({ collector_type: typeLabel }, counts.received);
    this.app.logger.info(
      { run: this.run.id, source: source?.name, status, durationMs, recorded, received: counts.received },
      'collection run ended',
    );
  }

  private contextFor(
    collection: Collection,
    signal: AbortSignal,
    component: CollectContext['component'],
  ): CollectContext {
    return {
      source: collectedSource(collection.source),
      credentials: collection.credentials,
      signal,
      component,
      allowedHosts: this.worker.allowedHosts,
    };
  }

  private failureText(error: unknown, where: FailureSite): string {
    return failureText(this.app.logger, error, where, this.credentials);
  }

  private elapsedMs(): number {
    return Math.round(performance.now() - this.started);
  }

  private setWatching(watching: boolean): void {
    if (this.watching === watching) return;
    this.watching = watching;
    watchesActive.inc(watching ? 1 : -1);
  }
}
