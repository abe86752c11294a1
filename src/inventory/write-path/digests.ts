import { setImmediate as nextTurn } from 'node:timers/promises';
import { onTheWire } from '../../platform/db/pipeline.js';
import { contentHash } from './content.js';
import type { UniversalRecord } from './records.js';

/** Hashing between two looks at the socket: an answer waits at most about this long. */
const SLICE_MS = 0.5;

/**
 * The content digests of one batch, computed while the process waits for the database on the batch
 * before: a slice at a time, with a turn of the event loop between slices, until the awaited answer
 * is in. The hashing thus fills whatever the database takes (the lookup of a re-collection, the
 * writes of a first load) without delaying the next statement by more than a slice, and both cores
 * work without guessing which wait is the longer.
 */
export class Digests {
  private readonly hashes: string[] = [];

  constructor(private readonly records: readonly UniversalRecord[]) {}

  /** Hashes slices until `answered` settles or every record is hashed. */
  async whileWaiting(answered: PromiseLike<unknown>): Promise<void> {
    let settled = false;
    const settle = () => {
      settled = true;
    };
    answered.then(settle, settle);
    await onTheWire();
    while (!settled && this.hashes.length < this.records.length) {
      this.slice();
      await nextTurn();
    }
  }

  /** How many records are hashed so far. */
  get hashed(): number {
    return this.hashes.length;
  }

  /** Every digest, by position; hashes what is left. */
  all(): string[] {
    while (this.hashes.length < this.records.length) this.slice();
    return this.hashes;
  }

  /** Hashes for about SLICE_MS (at least one record: records differ a lot in size). */
  private slice(): void {
    const until = performance.now() + SLICE_MS;
    do this.hashes.push(contentHash(this.records[this.hashes.length]!));
    while (this.hashes.length < this.records.length && performance.now() < until);
  }
}
