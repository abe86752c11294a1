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
const BULK_GROWING_PERCENT = 10;

let holders = 0;

let collect: (() => void) | undefined;

/**
 * A full collection now. The growing factor takes effect at the next full collection, and the
 * first one after a quiet spell may be far off: the limit set then allowed the default growth, and
 * a bulk write's first seconds filled it (a 500 MB push peaked at 200 MB in its first three seconds,
 * then stayed near 150 MB). V8 offers a collection only to contexts created with `--expose-gc`.
 */
function collectNow(): void {
  if (!collect) {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  }
  collect();
}

/**
 * Keeps the heap tight until the returned release is called (once); holds nest across concurrent
 * writes. `large`: a long write whose live heap stays small (an NDJSON stream, one batch at a time),
 * worth a full collection first so that the tight limit applies from its first batch. Not for a
 * reconcile of records already in memory: the limit would start just above them, and each batch's
 * garbage would then cost a full collection over all of them (an unchanged re-collection of
 * 143 834 objects took 4.8–5.0 s with it, 3.7 s without).
 */
export function holdHeapTight(options: { large?: boolean } = {}): () => void {
  if (holders++ === 0) {
    setFlagsFromString(`--heap-growing-percent=${BULK_GROWING_PERCENT}`);
    if (options.large) collectNow();
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    // 0 is V8's default: the factor it derives from collection and allocation speeds
    if (--holders === 0) setFlagsFromString('--heap-growing-percent=0');
  };
}

/** Whether a hold is in place (for tests). */
export const heapHeldTight = (): boolean => holders > 0;
