import type { AllowedHosts } from '../../../platform/net/endpoint.js';

/** The worker's settings a run follows. */
export interface ExecutionOptions {
  /** How long a claim holds without renewal; a dead worker's runs are taken over after it. */
  leaseMs: number;
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

/** What a run's execution needs of the worker that claimed it. */
export interface Claimant {
  id: string;
  options: ExecutionOptions;
  allowedHosts: AllowedHosts;
  /** The worker is stopping: a run it cancels is to be taken up again soon. */
  stopping(): boolean;
  /** Runs of the worker that are watching now. */
  watching(): number;
}
