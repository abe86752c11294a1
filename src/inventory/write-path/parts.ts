import { md5 } from 'js-md5';

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
 * parts. The database computes the same (`partExpression` in store.ts). A reconcile in lanes
 * computes it for every record before its first statement, and for ids of a few dozen characters
 * js-md5 takes 60 ms for 143 834 of them where node:crypto's one-shot digest, most of whose cost is
 * the call into OpenSSL, takes 140-340 ms.
 */
export function partOf(externalId: string): number {
  return md5.array(externalId)[0]! % SOURCE_PARTS;
}
