import type { UniversalRecord } from '../../../inventory/write-path/records.js';

/**
 * Reconcile batches per part of a list (ListWriter): enough for each of the two lanes to send a
 * batch while it prepares the next. Measured on a collection of 185 200 objects (batches of 1000):
 * parts of two batches 49 s, of ten 44.7 s, of twenty 43.0 s, for twice the records held.
 */
export const LIST_PART_BATCHES = 10;

/**
 * Writes a list's pages in parts of about `size` records of one scope, one part at a time, while
 * the pages of the next part are fetched. A part larger than a reconcile batch is written in
 * lanes (ReconcileOptions.lanes), so a list of a large source keeps the database's cores busy
 * and its fetching overlaps its writing; page by page, each page was one small transaction on one
 * connection, fetched only once the page before it was written.
 */
export class ListWriter {
  private scopeId: string | null = null;
  private held: UniversalRecord[] = [];
  private writing: Promise<void> | undefined;

  constructor(
    private readonly write: (scopeId: string | null, records: UniversalRecord[]) => Promise<void>,
    private readonly size: number,
  ) {}

  /** Takes a page; waits only when the part it fills must wait for the write before it. */
  async add(scopeId: string | null, records: readonly UniversalRecord[]): Promise<void> {
    if (this.held.length > 0 && (scopeId !== this.scopeId || this.held.length + records.length > this.size))
      await this.send();
    this.scopeId = scopeId;
    for (const record of records) this.held.push(record);
  }

  /** Writes what is held and waits for every write. */
  async flush(): Promise<void> {
    if (this.held.length > 0) await this.send();
    await this.writing;
  }

  /** Waits for the write in flight, failed or not. */
  async settled(): Promise<void> {
    await this.writing?.catch(() => {});
  }

  /** Starts writing what is held, once the write before it has ended (its failure is thrown here). */
  private async send(): Promise<void> {
    await this.writing;
    const writing = this.write(this.scopeId, this.held);
    // a failure is reported by the next add, flush or settled; until then it is not unhandled
    writing.catch(() => {});
    this.writing = writing;
    this.held = [];
  }
}
