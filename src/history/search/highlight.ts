import type { FieldChange } from '../records/diff.js';
import { MAX_WHOLE_TOKEN, pathTokens, splitTokens } from '../../platform/query/tokens.js';
import { tokensOf, type ParsedQuery, type Term } from '../../platform/query/text-query.js';

export type MatchedIn = 'name' | 'namespace' | 'ci_type' | 'field' | 'old_value' | 'new_value';

/** Where a result matched the query, with an excerpt: HTML-escaped text, matches inside <em>. */
export interface Match {
  in: MatchedIn;
  /** The field path of a field, old_value or new_value match. */
  field?: string;
  excerpt: string;
}

interface Searchable {
  ci_name: string;
  ci_namespace: string | null;
  ci_type: string;
  changes: readonly FieldChange[];
}

const MAX_MATCHES = 10;
const EXCERPT_CONTEXT = 40;
const MAX_LEAVES = 200;

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** The tokens a stored text is found by (src/platform/query/tokens.ts): a value's whole and parts, a path's segments. */
const textTokens = (text: string, path: boolean): Set<string> => new Set(path ? pathTokens(text) : splitTokens(text));

/** Whether a term matches a text the way the search index does (see termTsquery in src/platform/query/text-query.ts). */
function termMatches(term: Term, text: string, segments: boolean): boolean {
  const tokens = tokensOf(term.text);
  const available = textTokens(text, segments);
  if (tokens.whole.length > MAX_WHOLE_TOKEN) return tokens.parts.every((part) => available.has(part));
  const prefix = !term.quoted && tokens.whole.length > 1;
  return prefix ? [...available].some((token) => token.startsWith(tokens.whole)) : available.has(tokens.whole);
}

/** The text with the first place each term occurs marked, cut to a window around the first mark. */
function excerpt(text: string, terms: readonly Term[]): string {
  const lower = text.toLowerCase();
  const spans: [number, number][] = [];
  for (const term of terms) {
    const { whole, parts } = tokensOf(term.text);
    for (const needle of [whole, ...parts]) {
      const at = lower.indexOf(needle);
      if (at !== -1 && needle.length > 0) {
        spans.push([at, at + needle.length]);
        break;
      }
    }
  }
  spans.sort((a, b) => a[0] - b[0]);
  const merged = spans.reduce<[number, number][]>((out, span) => {
    const last = out.at(-1);
    if (last && span[0] <= last[1]) last[1] = Math.max(last[1], span[1]);
    else out.push([...span]);
    return out;
  }, []);
  const from = Math.max(0, (merged[0]?.[0] ?? 0) - EXCERPT_CONTEXT);
  const to = Math.min(text.length, (merged.at(-1)?.[1] ?? 0) + EXCERPT_CONTEXT);
  let out = from > 0 ? '…' : '';
  let at = from;
  for (const [start, end] of merged) {
    if (end <= from || start >= to) continue;
    out += `${escapeHtml(text.slice(at, start))}<em>${escapeHtml(text.slice(start, end))}</em>`;
    at = end;
  }
  out += escapeHtml(text.slice(at, to)) + (to < text.length ? '…' : '');
  return out;
}

/** Scalar leaves of a JSON value as text, as the search document takes them. */
function leaves(value: unknown, out: string[] = []): string[] {
  if (out.length >= MAX_LEAVES || value === null || value === undefined) return out;
  if (typeof value === 'object') {
    for (const child of Array.isArray(value) ? value : Object.values(value)) leaves(child, out);
  } else {
    out.push(String(value));
  }
  return out;
}

/**
 * Which parts of a change record the query's positive terms match: name, namespace, type, field
 * paths, old and new values. Exclusions have nothing to show.
 */
export function matchesOf(record: Searchable, query: ParsedQuery): Match[] {
  const terms = query.flat().filter((term) => !term.negated);
  const found: Match[] = [];
  const add = (where: MatchedIn, text: string | null, field?: string, segments = false) => {
    if (text === null || found.length >= MAX_MATCHES) return;
    const hits = terms.filter((term) => termMatches(term, text, segments));
    if (hits.length === 0) return;
    const match: Match = { in: where, excerpt: excerpt(text, hits) };
    if (field !== undefined) match.field = field;
    found.push(match);
  };
  add('name', record.ci_name);
  add('namespace', record.ci_namespace);
  add('ci_type', record.ci_type);
  for (const change of record.changes) add('field', change.field, change.field, true);
  for (const change of record.changes) {
    for (const [where, value] of [
      ['old_value', change.old_value],
      ['new_value', change.new_value],
    ] as const) {
      for (const text of new Set(leaves(value))) add(where, text, change.field);
    }
  }
  return found;
}
