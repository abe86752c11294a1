import { PassThrough, type Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Sql } from 'postgres';
import type { Principal } from '../../platform/auth/principal.js';
import { csvCells, csvRows } from '../../platform/csv.js';
import type { Logger } from '../../platform/observability/logger.js';
import type { FieldChange } from '../records/diff.js';
import { CSV_COLUMNS } from './schema.js';
import { exportBatch, type ChangeCriteria, type ExportRecord, type Position } from '../records/store.js';

/**
 * Change records per batch. Each batch is its own short query, so the connection is free between
 * batches: the embedded database has one session for the whole process, and a server-side cursor
 * would hold it (and, on PostgreSQL, a transaction and a pooled connection) for as long as the
 * slowest client takes to download. Keyset batches cost one index range scan each, give the same
 * code on both databases, and leave nothing open when a client goes away. A thousand records keep
 * the two batches alive at a time (one written, one read ahead) small: larger batches were no
 * faster and let the heap grow further between collections.
 */
export const EXPORT_BATCH_RECORDS = 1000;

export interface ExportWindow {
  /** Change records to skip before the first row. */
  offset: number;
  /** At most this many change records; undefined exports every match. */
  limit: number | undefined;
}

export interface ExportContext {
  sql: Sql;
  logger: Logger;
  principal: Principal;
  /** Each batch's statement timeout (CINV_BULK_STATEMENT_TIMEOUT). */
  statementTimeoutMs: number;
}

type Batch = ExportRecord[];

/** Resolves when the stream can take more, or when it is gone (destroyed streams never drain). */
function writable(out: PassThrough): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      out.off('drain', done);
      out.off('close', done);
      resolve();
    };
    out.on('drain', done);
    out.on('close', done);
  });
}

const HEADER = csvRows([CSV_COLUMNS]);

/**
 * Records formatted and written at a time, with a turn of the event loop between slices: the next
 * batch's query (a transaction of a few round trips) goes on meanwhile, where the export otherwise
 * waited for it for about a fifth of its time. A slice's text (some 50 KB) also stays below V8's
 * regular object size (128 KiB), above which strings are made in old space.
 */
const SLICE_RECORDS = 128;

/**
 * How much formatted CSV may wait for a slow client: two batches' worth, so formatting the next
 * batch overlaps sending this one without the heap growing with the export.
 */
const BUFFERED_BYTES = 1024 * 1024;

class ChangeExport {
  readonly out = new PassThrough({ highWaterMark: BUFFERED_BYTES });
  private header = true;
  private fetched = 0;
  private records = 0;
  private rows = 0;
  private readonly started = Date.now();

  constructor(
    private readonly context: ExportContext,
    private readonly criteria: ChangeCriteria,
    private readonly window: ExportWindow,
  ) {}

  /** How many records the next batch asks for; 0 once the explicit limit is reached. */
  wanted(): number {
    const left = this.window.limit === undefined ? Infinity : this.window.limit - this.fetched;
    return Math.min(EXPORT_BATCH_RECORDS, left);
  }

  fetch(records: number, position: Position | undefined): Promise<Batch> {
    const offset = position ? 0 : this.window.offset;
    return exportBatch(this.context.sql, this.context.principal, this.criteria, {
      records,
      offset,
      position,
      statementTimeoutMs: this.context.statementTimeoutMs,
    });
  }

  /** Writes one row per field change, a slice of records at a time. */
  async write(batch: Batch): Promise<boolean> {
    let ready = true;
    for (let start = 0; start < batch.length; start += SLICE_RECORDS) {
      ready = this.out.write(this.format(batch.slice(start, start + SLICE_RECORDS)));
      await nextTurn();
      if (this.out.destroyed) return false;
    }
    if (!ready) {
      await writable(this.out);
      if (this.out.destroyed) return false;
    }
    return true;
  }

  /** The CSV lines of some records, the header first when nothing was written yet. */
  format(records: Batch): string {
    const changes = records.map((record) => JSON.parse(record.changes) as FieldChange[]);
    const values: unknown[] = [];
    for (let i = 0; i < records.length; i++) {
      const record = records[i]!;
      // microseconds are kept for the keyset position; the file shows milliseconds like the JSON API
      values.push(
        record.id,
        `${record.changed_at.slice(0, 23)}Z`,
        record.change_type,
        record.ci_id,
        record.ci_name,
        record.ci_namespace,
        record.ci_type,
        record.kind,
        record.severity,
      );
      for (const change of changes[i]!) values.push(change.field, change.old_value, change.new_value);
    }
    const cells = csvCells(values);
    const lines: string[] = this.header ? [HEADER] : [];
    this.header = false;
    let next = 0;
    for (let i = 0; i < records.length; i++) {
      // a record's own cells lead each of its rows
      const prefix = `${cells[next]},${cells[next + 1]},${cells[next + 2]},${cells[next + 3]},${cells[next + 4]},${cells[next + 5]},${cells[next + 6]},${cells[next + 7]},${cells[next + 8]},`;
      next += 9;
      for (let n = changes[i]!.length; n > 0; n--, next += 3)
        lines.push(`${prefix}${cells[next]},${cells[next + 1]},${cells[next + 2]}\n`);
      this.rows += changes[i]!.length;
    }
    this.records += records.length;
    return lines.join('');
  }

  async pump(first: Batch, asked: number): Promise<void> {
    let batch = first;
    let size = asked;
    for (;;) {
      this.fetched += batch.length;
      const last = batch.at(-1);
      const next = batch.length < size || !last ? 0 : this.wanted();
      // the next batch is read while this one is written: the database and the formatting overlap
      const pending = next > 0 && last ? this.fetch(next, [last.position ?? last.changed_at, last.id]) : undefined;
      // a client that leaves meanwhile means nobody awaits it; its failure is not worth a crash
      pending?.catch(() => undefined);
      if (!(await this.write(batch))) return this.finish(false);
      if (!pending) break;
      batch = await pending;
      size = next;
      if (this.out.destroyed) return this.finish(false);
    }
    // an export without rows still has its header line
    if (this.header) this.out.write(HEADER);
    this.out.end();
    this.finish(true);
  }

  fail(error: unknown): void {
    this.context.logger.error({ err: error, rows: this.rows }, 'change export failed');
    // destroying the body aborts the response: the client sees a broken download, not a short file
    this.out.destroy(error instanceof Error ? error : new Error(String(error)));
  }

  finish(complete: boolean): void {
    const elapsedMs = Date.now() - this.started;
    this.context.logger.info({ rows: this.rows, records: this.records, complete, elapsedMs }, 'change export ended');
  }
}

/**
 * The CSV export of the global history: a header, then one row per field change, cells written as
 * src/platform/csv.ts says (formula-like text escaped). The first batch is read before anything is sent, so a failing query still
 * answers with the error envelope; later batches follow as the client reads. A client that
 * disconnects destroys the stream, which stops the loop before its next query.
 */
export async function openChangeExport(
  context: ExportContext,
  criteria: ChangeCriteria,
  window: ExportWindow,
): Promise<Readable> {
  const job = new ChangeExport(context, criteria, window);
  const wanted = job.wanted();
  const first = wanted > 0 ? await job.fetch(wanted, undefined) : [];
  // destroying the body (the client left) stops the pump before its next batch
  job.pump(first, wanted).catch((error: unknown) => job.fail(error));
  return job.out;
}
