import { setImmediate as nextTurn } from 'node:timers/promises';
import { contentHash } from './content.js';
import type { UniversalRecord } from './records.js';

/** Records hashed between two looks at the socket: about 0.4 ms of work. */
const SLICE = 50;

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
    // the first turn puts the statements just queued on the wire
    await nextTurn();
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

  private slice(): void {
    const end = Math.min(this.hashes.length + SLICE, this.records.length);
    for (let i = this.hashes.length; i < end; i++) this.hashes.push(contentHash(this.records[i]!));
  }
}
