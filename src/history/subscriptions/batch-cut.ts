import { PAST_TRANSACTION, type FeedPlace, type FeedSelection, type RecordContent } from '../records/feed.js';

/** How large a batch may grow (CINV_SUBSCRIPTION_BATCH_RECORDS, CINV_SUBSCRIPTION_BATCH_BYTES). */
export interface BatchLimits {
  most: number;
  bytes: number;
}

/** The records of the next batch and where the subscription's feed continues after them. */
export interface CutRecords {
  /** Their ids and exact times, in order; none when no scanned record is delivered to the subscription. */
  records: { id: string; at: string }[];
  /** The commit time of the batch's first record (undefined without records). */
  committedAt: Date | undefined;
  next: FeedPlace;
}

/**
 * Which scanned entries (at least one) go into the next batch: the selected ones in feed order, at
 * most `most` of them or about `bytes` of their JSON texts, the first one whatever its size.
 * `textOf` writes out an entry's record; it is asked for the entries up to the first one left out.
 */
export function cutRecords(
  entries: readonly FeedSelection[],
  scan: number,
  limits: BatchLimits,
  textOf: (content: RecordContent) => string,
): CutRecords {
  const records: { id: string; at: string }[] = [];
  let size = 0;
  let next = entries[0]!.place;
  let passed = 0;
  let committedAt: Date | undefined;
  for (const entry of entries) {
    const json = entry.content ? textOf(entry.content) : undefined;
    if (json !== undefined) {
      if (records.length > 0 && (records.length === limits.most || size + json.length > limits.bytes)) break;
      records.push({ id: entry.place.id, at: entry.at });
      size += json.length + 1;
      committedAt ??= entry.committedAt;
    }
    next = entry.place;
    passed++;
  }
  // a scan that came back short read every place to its end: the last transaction is done with, and
  // the place says so, so that only a later position gives this subscription work (subscriptionsToDeliver)
  if (passed === entries.length && entries.length < scan) next = { position: next.position, id: PAST_TRANSACTION };
  return { records, committedAt, next };
}
