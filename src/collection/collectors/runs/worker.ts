import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { collectingTypes } from '../../types/registry.js';
import type { AppContext } from '../../../context.js';
import type { AllowedHosts } from '../../../platform/net/endpoint.js';
import { sourcesDueNotRunning } from '../../../platform/observability/metrics.js';
import { allowedHostsOf } from '../../../platform/net/endpoint.js';
import type { Claimant, ExecutionOptions } from './claimant.js';
import { RunExecution } from './execution.js';
import { claimRuns, type ClaimedRun } from './leases.js';
import { countQueued, enqueueDue } from './runs.js';

export interface WorkerOptions extends ExecutionOptions {
  /** Runs this worker executes at once (CINV_WORKER_CONCURRENCY). */
  concurrency: number;
  /** How often the worker looks for due sources and claimable runs. */
  pollMs: number;
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
 * whose start point expired (or a trigger) makes the run list again before it watches on. Each
 * run is a RunExecution; this class schedules them.
 */
export class CollectionWorker {
  readonly id = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly running = new Map<string, { execution: RunExecution; done: Promise<void> }>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private stopped = false;
  private readonly allowedHosts: AllowedHosts;
  private readonly claimant: Claimant;

  constructor(
    private readonly app: AppContext,
    private readonly options: WorkerOptions,
  ) {
    this.allowedHosts = allowedHostsOf(app.config);
    this.claimant = {
      id: this.id,
      options,
      allowedHosts: this.allowedHosts,
      stopping: () => this.stopped,
      watching: () => this.watching,
    };
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
      const busy = [...this.running.values()].filter((r) => !r.execution.watching).length;
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
    return [...this.running.values()].filter((r) => r.execution.watching).length;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.ticking;
    for (const { execution } of this.running.values()) execution.controller.abort(new Error('the worker is stopping'));
    await this.idle();
  }

  private launch(run: ClaimedRun): void {
    const execution = new RunExecution(this.app, this.claimant, run);
    const done = execution
      .execute()
      .catch((error: unknown) =>
        this.app.logger.error({ err: error, run: run.id }, 'collection run could not be recorded'),
      )
      .finally(() => this.running.delete(run.id));
    this.running.set(run.id, { execution, done });
  }
}
