import { setFlagsFromString } from 'node:v8';

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

/** Keeps the heap tight until the returned release is called (once); holds nest across concurrent writes. */
export function holdHeapTight(): () => void {
  if (holders++ === 0) setFlagsFromString(`--heap-growing-percent=${BULK_GROWING_PERCENT}`);
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
