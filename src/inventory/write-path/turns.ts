import { unavailable } from '../../platform/errors.js';

const tails = new Map<string, Promise<void>>();

const DEFAULT_WAIT_MS = 30_000;

/**
 * Runs `work` after every earlier call with the same key has finished, so that reconciles of one
 * source in this process never interleave. A caller that would wait longer than `waitMs` gets a
 * 503 instead: the client retries later rather than holding a connection open behind a long load.
 */
export async function inTurn<T>(key: string, work: () => Promise<T>, waitMs = DEFAULT_WAIT_MS): Promise<T> {
  const previous = tails.get(key);
  let done!: () => void;
  const mine = new Promise<void>((resolve) => (done = resolve));
  // the next caller waits for this one, whether it ran, failed or gave up waiting
  const tail = (previous ?? Promise.resolve()).then(() => mine);
  tails.set(key, tail);
  try {
    if (previous) await waitFor(previous, waitMs);
    return await work();
  } finally {
    done();
    if (tails.get(key) === tail) tails.delete(key);
  }
}

async function waitFor(turn: Promise<void>, waitMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(unavailable('Another ingest into this source is still running; retry shortly', 'source_busy', 5)),
      waitMs,
    );
  });
  try {
    await Promise.race([turn, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
