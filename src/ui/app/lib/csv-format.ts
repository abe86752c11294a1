import { stringify } from 'csv-stringify/browser/esm/sync';

/**
 * RFC 4180 CSV text (CRLF lines), for downloads the browser assembles from API pages, written as the
 * server writes its CSV (csv-stringify): a text cell starting with `=`, `+`, `-`, `@`, TAB or CR gets
 * a leading `'`, so that a spreadsheet shows a name or value such as `=HYPERLINK(...)` as text rather
 * than running it; numbers stay literals, null is an empty cell, objects and arrays are JSON text.
 */
export function csvText(header: readonly string[], rows: Iterable<readonly unknown[]>): string {
  return stringify([header, ...rows], {
    escape_formulas: true,
    record_delimiter: '\r\n',
    // naming a delimiter turns off the quoting of cells holding a bare CR or LF unless asked for
    quote_record_delimiter: true,
    cast: { boolean: (value) => String(value) },
  });
}
