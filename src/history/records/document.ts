import { pathTokens, splitTokens } from '../../platform/query/tokens.js';
import type { FieldChange } from './diff.js';

/**
 * The search document of a change record: the tokens it is found by, in four groups that weigh
 * differently (PostgreSQL tsvector weights A to D, OpenSearch token fields with boosts). Built here
 * once, for the tsvector the writer stores and for the documents the indexer sends to OpenSearch,
 * with the same tokenizer the query side uses (src/platform/query/tokens.ts), so both backends match the same way.
 */
export interface DocumentTokens {
  /** The CI name (A). */
  name: string[];
  /** Namespace and CI type (B). */
  meta: string[];
  /** Changed field paths, whole and by segment (C). */
  field: string[];
  /** Scalar leaves of old and new values (D). */
  value: string[];
}

export interface Documentable {
  ci_name: string;
  ci_namespace: string | null;
  ci_type: string;
  changes: readonly FieldChange[];
}

// Bounds that keep one record's document small whatever it changed (a tsvector holds at most 1 MB).
const MAX_FIELD_CHANGES = 2000;
const MAX_LEAVES_PER_CHANGE = 200;
const MAX_TOKENS = 4000;

/** Scalar leaves of a JSON value, as text, at most `limit` of them. */
function leaves(value: unknown, limit: number, out: string[] = []): string[] {
  if (out.length >= limit || value === null || value === undefined) return out;
  if (typeof value === 'object') {
    for (const child of Array.isArray(value) ? value : Object.values(value)) {
      leaves(child, limit, out);
      if (out.length >= limit) break;
    }
  } else {
    out.push(String(value));
  }
  return out;
}

/** The tokens of a change record; a token appears once, in its strongest group. */
export function documentTokens(record: Documentable): DocumentTokens {
  const seen = new Set<string>();
  let room = MAX_TOKENS;
  const take = (tokens: Iterable<string>, into: string[]) => {
    for (const token of tokens) {
      if (room === 0) return;
      if (token === '' || seen.has(token)) continue;
      seen.add(token);
      into.push(token);
      room--;
    }
  };
  const document: DocumentTokens = { name: [], meta: [], field: [], value: [] };
  take(splitTokens(record.ci_name), document.name);
  take(
    [...(record.ci_namespace === null ? [] : splitTokens(record.ci_namespace)), ...splitTokens(record.ci_type)],
    document.meta,
  );
  const changes = record.changes.slice(0, MAX_FIELD_CHANGES);
  for (const change of changes) take(pathTokens(change.field), document.field);
  for (const change of changes) {
    for (const leaf of leaves([change.old_value, change.new_value], MAX_LEAVES_PER_CHANGE))
      take(splitTokens(leaf), document.value);
  }
  return document;
}

const lexeme = (token: string): string => `'${token.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;

/** The document as tsvector text (one position per lexeme, weighted by group), cast with ::tsvector. */
export function toTsvectorText(tokens: DocumentTokens): string {
  const weighted: string[] = [];
  for (const [group, weight] of [
    ['name', 'A'],
    ['meta', 'B'],
    ['field', 'C'],
    ['value', 'D'],
  ] as const) {
    for (const token of tokens[group]) weighted.push(`${lexeme(token)}:1${weight}`);
  }
  return weighted.join(' ');
}
