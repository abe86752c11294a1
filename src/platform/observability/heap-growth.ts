import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * How much V8's heap may grow, relative to what survived the last full collection, before the next
 * one while bulk writes run (`--heap-growing-percent`, read by V8 at every full collection).
 *
 * A reconcile batch holds a few megabytes of records and builds strings of the same size for its
 * statements (jsonb_to_recordset parameters, change records), and all of it is garbage once the
 * batch commits. By default V8 lets the heap grow up to fourfold between full collections when the
 * process allocates fast, so a 500 MB push held 350 MB of resident memory for about 90 MB of heap
 * in use. Growing by a tenth, the same push peaked at 195 MB, at the same speed. Requests are
 * served with V8's default policy again once no reconcile runs: with a small live heap a tight
 * factor means frequent full collections, which cost the list about a tenth of its throughput.
 */
const STREAM_GROWING_PERCENT = 10;

/**
 * The same for a reconcile of records already in memory (a collection, a JSON push). Every full
 * collection marks those records, and the number of collections grows as the factor shrinks: a
 * first load of 143 834 objects spent 16.5-17.9 s of the process's CPU at a tenth, 13.4-15.0 s at
 * 30 % (peak RSS 8 % higher, against fourfold with V8's default).
 */
const IN_MEMORY_GROWING_PERCENT = 30;

/** Holds in place: long streams, and reconciles of records in memory. */
const holders = { large: 0, inMemory: 0 };

/** The tightest factor the holds in place ask for; 0 (V8's default, derived from collection and allocation speeds) with none. */
export const heldGrowingPercent = (): number =>
  holders.large > 0 ? STREAM_GROWING_PERCENT : holders.inMemory > 0 ? IN_MEMORY_GROWING_PERCENT : 0;

function applyGrowingPercent(): void {
  setFlagsFromString(`--heap-growing-percent=${heldGrowingPercent()}`);
}

let collect: (() => void) | undefined;

/**
 * A full collection now. The growing factor takes effect at the next full collection, and the
 * first one after a quiet spell may be far off: the limit set then allowed the default growth, and
 * a bulk write's first seconds filled it (a 500 MB push peaked at 200 MB in its first three seconds,
 * then stayed near 150 MB). V8 offers a collection only to contexts created with `--expose-gc`.
 */
export function collectNow(): void {
  if (!collect) {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  }
  collect();
}

/**
 * Keeps the heap tight until the returned release is called (once); holds nest across concurrent
 * writes, the tightest applying. `large`: a long write whose live heap stays small (an NDJSON
 * stream, one batch at a time), held at a tenth and worth a full collection first so that the tight
 * limit applies from its first batch. Otherwise a reconcile of records already in memory, held at
 * 30 % without that collection: the limit would start just above the records, and each batch's
 * garbage would then cost a full collection over all of them (an unchanged re-collection of
 * 143 834 objects took 4.8–5.0 s with it, 3.7 s without).
 */
export function holdHeapTight(options: { large?: boolean } = {}): () => void {
  const kind = options.large ? 'large' : 'inMemory';
  const first = holders.large + holders.inMemory === 0;
  holders[kind]++;
  applyGrowingPercent();
  if (first && options.large) collectNow();
  let released = false;
  return () => {
    if (released) return;
    released = true;
    holders[kind]--;
    applyGrowingPercent();
  };
}

/** Whether a hold is in place (for tests). */
export const heapHeldTight = (): boolean => holders.large + holders.inMemory > 0;
