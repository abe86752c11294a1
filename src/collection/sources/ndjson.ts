import { isUtf8 } from 'node:buffer';
import type { Readable } from 'node:stream';
import { isBrokenCompression, malformedCompression } from '../../platform/http/body.js';
import { AppError, validationFailed, type FieldError } from '../../platform/errors.js';
import { compileBody, MAX_JSON_DEPTH, nestsDeeperThan, toFieldErrors } from '../../platform/validation.js';
import { unstorableText } from '../../inventory/write-path/reconcile.js';
import { MAX_KEY_LENGTH, UniversalRecord } from '../../inventory/write-path/records.js';

/**
 * Universal-format pushes as NDJSON (`application/x-ndjson`): one record per line, and in delta
 * mode `{"delete": "<external_id>"}` lines. The body is read as a stream and handed on in batches,
 * so a push of any size holds one batch (and one line) in memory at a time; it is never buffered
 * whole. Lines are numbered from 0 like the items of a JSON body, and a line that is not a valid
 * record stops the push with an error naming it (`items.<index>`).
 */

const validateRecord = compileBody(UniversalRecord);

export { decodedBody } from '../../platform/http/body.js';

export interface NdjsonBatch {
  records: UniversalRecord[];
  deletions: string[];
}

/** Lines of a byte stream, each at most `maxLineBytes` (413 beyond). */
async function* lines(body: Readable, maxLineBytes: number): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      let start = 0;
      for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
        const piece = chunk.subarray(start, nl);
        if (pendingBytes + piece.length > maxLineBytes) throw lineTooLong(maxLineBytes);
        yield pending.length > 0 ? Buffer.concat([...pending, piece]) : piece;
        pending = [];
        pendingBytes = 0;
        start = nl + 1;
      }
      const rest = chunk.subarray(start);
      pendingBytes += rest.length;
      if (pendingBytes > maxLineBytes) throw lineTooLong(maxLineBytes);
      if (rest.length > 0) pending.push(Buffer.from(rest));
    }
  } catch (error) {
    throw isBrokenCompression(error) ? malformedCompression() : error;
  }
  if (pendingBytes > 0) yield Buffer.concat(pending);
}

const lineTooLong = (limit: number) =>
  new AppError(413, 'HTTP_413', `An NDJSON line exceeds CINV_BODY_LIMIT_BYTES (${limit} bytes)`, { limit });

/**
 * A line's text. Bytes that are not UTF-8 stop the push like an invalid record does: decoded
 * leniently they would be stored as replacement characters, changing the data without a word.
 */
function textOf(bytes: Buffer, index: number): string {
  if (!isUtf8(bytes)) {
    throw new AppError(
      400,
      'HTTP_400',
      `NDJSON line ${index} (items.${index}, counted from 0) is not valid UTF-8; send the text encoded as UTF-8`,
      {
        field: `items.${index}`,
        line: index,
      },
    );
  }
  return bytes.toString('utf8');
}

function refuse(index: number, errors: FieldError[]): never {
  throw validationFailed(
    errors.map((e) => ({ ...e, field: e.field === '(root)' ? `items.${index}` : `items.${index}.${e.field}` })),
  );
}

/**
 * Text a batch may hold before it is handed on, whatever its record count: the reconcile of a
 * batch holds several times its text in memory (parsed records, digests, change records), so a
 * push of large records would otherwise take memory in proportion to the record size.
 */
export const NDJSON_BATCH_CHARS = 4 * 1024 * 1024;

/**
 * Parses and validates the lines into batches of `batchSize` records (and deletions), or fewer
 * when they hold `NDJSON_BATCH_CHARS` of text. Blank lines are skipped but counted, so indexes
 * match line numbers.
 */
export async function* ndjsonBatches(
  body: Readable,
  options: { mode: 'snapshot' | 'delta'; batchSize: number; maxLineBytes: number },
): AsyncGenerator<NdjsonBatch> {
  let batch: NdjsonBatch = { records: [], deletions: [] };
  let batchChars = 0;
  let index = -1;
  // delta mode: an id may be upserted or deleted, not both (no order to apply them in)
  const upserted = new Set<string>();
  const deleted = new Set<string>();
  for await (const bytes of lines(body, options.maxLineBytes)) {
    index++;
    const line = textOf(bytes, index);
    if (line.trim() === '') continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      refuse(index, [{ field: '(root)', location: 'body', message: 'is not a JSON document' }]);
    }
    if (nestsDeeperThan(value, MAX_JSON_DEPTH))
      refuse(index, [
        { field: '(root)', location: 'body', message: `must not nest deeper than ${MAX_JSON_DEPTH} levels` },
      ]);
    // NUL characters and unpaired surrogates reach a parsed line only through \u escapes
    const unstorable = line.includes('\\u') ? unstorableText(value) : undefined;
    if (unstorable) refuse(index, [{ field: '(root)', location: 'body', message: unstorable }]);
    if (typeof value === 'object' && value !== null && !Array.isArray(value) && 'delete' in value) {
      const id = (value as { delete: unknown }).delete;
      if (options.mode !== 'delta')
        refuse(index, [
          { field: 'delete', location: 'body', message: 'deletions are accepted in delta mode only (?mode=delta)' },
        ]);
      if (Object.keys(value).length !== 1 || typeof id !== 'string' || id === '' || id.length > MAX_KEY_LENGTH) {
        refuse(index, [
          {
            field: 'delete',
            location: 'body',
            message: `must be the only key, an external id of 1 to ${MAX_KEY_LENGTH} characters`,
          },
        ]);
      }
      if (upserted.has(id))
        refuse(index, [
          {
            field: 'delete',
            location: 'body',
            message: 'is also listed as a record; send an id as a record or as a deletion, not both',
          },
        ]);
      deleted.add(id);
      batch.deletions.push(id);
    } else {
      if (!validateRecord(value)) refuse(index, toFieldErrors(validateRecord.errors, 'body'));
      const record = value as UniversalRecord;
      if (options.mode === 'delta') {
        if (deleted.has(record.external_id))
          refuse(index, [{ field: 'external_id', location: 'body', message: 'is also listed as a deletion' }]);
        upserted.add(record.external_id);
      }
      batch.records.push(record);
    }
    batchChars += line.length;
    if (batch.records.length + batch.deletions.length >= options.batchSize || batchChars >= NDJSON_BATCH_CHARS) {
      yield batch;
      batch = { records: [], deletions: [] };
      batchChars = 0;
    }
  }
  if (batch.records.length + batch.deletions.length > 0) yield batch;
}
