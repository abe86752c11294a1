import { hash } from 'node:crypto';

/**
 * A source's CIs fall into this many parts by a hash of their external id, each part with a lock
 * of its own, so that one large reconcile writes them in parallel lanes (one transaction per lane
 * at a time) while the parts stay disjoint: no two lanes ever write the same CI, the same
 * relationship owner or the same pending reference. Fixed, not a setting: processes that split a
 * source differently would lock different sets of rows under the same lock.
 */
export const SOURCE_PARTS = 2;

/** Every part, in order. */
export const ALL_PARTS: readonly number[] = Array.from({ length: SOURCE_PARTS }, (_, part) => part);

/**
 * The part of an external id: the first byte of its MD5 digest (of the UTF-8 text), modulo the
 * parts. The database computes the same (`partExpression` in store.ts). The one-shot digest costs
 * a third of a Hash object's, which a reconcile in lanes makes for every record.
 */
export function partOf(externalId: string): number {
  return hash('md5', externalId, 'buffer')[0]! % SOURCE_PARTS;
}
