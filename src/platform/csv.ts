import { stringify, type Options } from 'csv-stringify/sync';

/**
 * How every CSV of the service is written (csv-stringify): RFC 4180 quoting, and formula escaping as
 * OWASP recommends. A text cell starting with `=`, `+`, `-`, `@`, TAB or CR (or their full-width
 * forms) gets a leading `'`, so that a spreadsheet shows a name, value or User-Agent such as
 * `=HYPERLINK(...)` as text instead of evaluating it. Numbers are written as their literal even when
 * negative: `-3` cannot be a formula, and a quote would turn it into text. Beyond that, a value is
 * shown as a spreadsheet shows it best: text as itself, booleans as `true`/`false`, null as an empty
 * cell; only objects and arrays are JSON text (which parses back exactly).
 *
 * A fresh object each call: the library fills its defaults into the one it is given. Naming a record
 * delimiter turns off the quoting of cells that hold a line break unless asked for again, and a bare
 * CR or LF in an unquoted cell would split its row.
 */
function csvOptions(recordDelimiter: string): Options {
  return {
    escape_formulas: true,
    record_delimiter: recordDelimiter,
    quote_record_delimiter: true,
    cast: { boolean: (value) => String(value) },
  };
}

/** CSV lines, each ended by a newline. */
export function csvRows(rows: readonly (readonly unknown[])[]): string {
  return stringify(rows as unknown[][], csvOptions('\n'));
}

/** Text the library writes unchanged: no quote, comma or line break, no formula character first. */
const PLAIN = /^(?![=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20])[^",\r\n]*$/;

/** A value's text before quoting and escaping, as csvOptions casts it. */
function textOf(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/**
 * The library's options for cells cut apart afterwards: NUL between cells, and a comma quoted as the
 * comma delimiter would be, so that each cell comes out as csvRows writes it.
 */
const cellOptions = (): Options => ({ ...csvOptions('\0'), delimiter: '\0', quoted_match: ',' });

/**
 * The library's cells for some values, in one call for all of them; one call per value where a
 * value holds a NUL, which the cells could not be cut apart at (nothing read from the database does:
 * PostgreSQL text and JSON refuse it, and JSON text escapes it).
 */
function formatted(values: unknown[]): string[] {
  const cells = stringify([values], cellOptions()).split('\0');
  // the record ends with its delimiter: one piece more than values
  if (cells.length === values.length + 1) return cells;
  return values.map((value) => csvRows([[value]]).slice(0, -1));
}

/**
 * Each value (text or a JSON value) as its CSV cell, exactly as csvRows writes it. A value whose text
 * the library would write unchanged is that text; the others (JSON with its quotes, text with commas
 * or line breaks, formula-like text) are formatted by one library call for all of them, each distinct
 * text once: field changes repeat the same objects and arrays across many records. Most cells are
 * plain, and the library's work for each cell cost more than the rest of the change export.
 */
export function csvCells(values: readonly unknown[]): string[] {
  const cells: string[] = [];
  // each distinct value the library formats, and where it is among them
  const places = new Map<string, number>();
  const others: unknown[] = [];
  const at: number[] = [];
  const from: number[] = [];
  for (const value of values) {
    const text = textOf(value);
    if (!PLAIN.test(text)) {
      // a number keeps its type, as the library never escapes a negative one (its key cannot be text's)
      const numeric = typeof value === 'number' || typeof value === 'bigint';
      const key = numeric ? `\0${text}` : text;
      let place = places.get(key);
      if (place === undefined) {
        place = others.push(numeric ? value : text) - 1;
        places.set(key, place);
      }
      at.push(cells.length);
      from.push(place);
    }
    cells.push(text);
  }
  if (others.length === 0) return cells;
  const library = formatted(others);
  for (let i = 0; i < at.length; i++) cells[at[i]!] = library[from[i]!]!;
  return cells;
}
