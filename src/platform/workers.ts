import type { Logger } from './observability/logger.js';

/**
 * A job that runs beside the API until the process stops: the collection worker, the sweeps, the
 * search jobs, subscription delivery, the outbox indexer. The server and the command line start and
 * stop every one of them through this one interface, so a new job is one entry in a list.
 */
export interface BackgroundWorker {
  /** Named in the log when it starts and when it fails to stop. */
  readonly name: string;
  start(): void | Promise<void>;
  stop(): Promise<void>;
}

/** Wraps a job whose start hands back the handle that stops it (a schedule, a loop). */
export function startedBy(name: string, begin: () => { stop(): Promise<void> } | Promise<{ stop(): Promise<void> }>) {
  let handle: { stop(): Promise<void> } | undefined;
  return {
    name,
    async start() {
      handle = await begin();
    },
    async stop() {
      await handle?.stop();
    },
  } satisfies BackgroundWorker;
}

export interface RunningWorkers {
  readonly names: readonly string[];
  stop(): Promise<void>;
}

/**
 * Starts the workers in order; if one fails to start, those already started are stopped before the
 * error is thrown, so a failed start leaves no loop running. Stopping waits for all of them, each
 * finishing what it holds (a run's lease, a delivery in flight); one that fails to stop is logged
 * and does not keep the others from stopping.
 */
export async function startWorkers(workers: readonly BackgroundWorker[], logger: Logger): Promise<RunningWorkers> {
  const started: BackgroundWorker[] = [];
  const stopAll = async () => {
    const results = await Promise.allSettled(started.map((worker) => worker.stop()));
    results.forEach((result, i) => {
      if (result.status === 'rejected')
        logger.error({ err: result.reason, worker: started[i]!.name }, 'worker did not stop cleanly');
    });
  };
  for (const worker of workers) {
    try {
      await worker.start();
    } catch (error) {
      await stopAll();
      throw error;
    }
    started.push(worker);
  }
  if (started.length > 0) logger.debug({ workers: started.map((w) => w.name) }, 'background workers started');
  return { names: started.map((w) => w.name), stop: stopAll };
}

/**
 * A worker that catches up with a backlog every `pollMs` (the identity worker with the change feed,
 * the quality worker with its queue): one catching up at a time, the next `pollMs` after it ends.
 * `catchUp` answers how much it did; a failure is logged and tried again on the next round.
 */
export class CatchUpLoop {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly pollMs: number,
    private readonly catchUp: () => Promise<number>,
    private readonly logger: Logger,
    private readonly said: { done: string; failed: string },
  ) {}

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.catchUp()
        .then(
          (done) => {
            if (done > 0) this.logger.debug({ done }, this.said.done);
          },
          (error: unknown) => this.logger.error({ err: error }, this.said.failed),
        )
        .finally(() => {
          this.running = undefined;
          this.schedule(this.pollMs);
        });
    }, delay);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
