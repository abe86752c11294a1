import { validationFailed } from '../errors.js';
import { MAX_WHOLE_TOKEN, partsOf } from './tokens.js';

/**
 * The change-search language (the same for `/changes/search` and `/changes?search=`, on both
 * backends): words are ANDed, `or` between two words ORs them, `-word` excludes, and "quoted
 * text" matches whole tokens exactly instead of by prefix. Matching is case-insensitive.
 */
export interface Term {
  text: string;
  quoted: boolean;
  negated: boolean;
}

/** A query: every group must match; a group matches when one of its terms does. */
export type ParsedQuery = Term[][];

/** The tokens a text is searchable by: itself lowercased, and its alphanumeric parts. */
export interface Tokens {
  whole: string;
  parts: string[];
}

// Documents keep whole tokens up to MAX_WHOLE_TOKEN and parts up to MAX_PART_TOKEN characters; a
// longer term can only match through its parts.
const MAX_WHOLE = MAX_WHOLE_TOKEN;

/** Tokenizes a query term the way documents are tokenized (tokens.ts). */
export function tokensOf(text: string): Tokens {
  const whole = text.toLowerCase();
  return { whole, parts: [...new Set(partsOf(whole))] };
}

/** Whether any token of the term can be in a document at all. */
const searchable = (tokens: Tokens): boolean => tokens.whole.length <= MAX_WHOLE || tokens.parts.length > 0;

/** Parses the query text; throws a 422 naming `field` when nothing positive is left to match. */
export function parseQuery(text: string, field = 'query'): ParsedQuery {
  const words: { term?: Term; or?: true }[] = [];
  const pattern = /(-?)"([^"]*)"?|(\S+)/g;
  for (const match of text.matchAll(pattern)) {
    if (match[3] !== undefined) {
      const raw = match[3];
      if (raw.toLowerCase() === 'or') {
        words.push({ or: true });
        continue;
      }
      const negated = raw.startsWith('-') && raw.length > 1;
      const body = negated ? raw.slice(1) : raw;
      words.push({ term: { text: body, quoted: false, negated } });
    } else if (match[2]!.trim() !== '') {
      words.push({ term: { text: match[2]!.trim(), quoted: true, negated: match[1] === '-' } });
    }
  }
  const groups: ParsedQuery = [];
  let joinNext = false;
  for (const word of words) {
    if (word.or) {
      joinNext = groups.length > 0;
      continue;
    }
    if (joinNext) groups.at(-1)!.push(word.term!);
    else groups.push([word.term!]);
    joinNext = false;
  }
  if (!groups.some((group) => group.every((term) => !term.negated))) {
    throw validationFailed([
      { field, location: 'query', message: 'needs at least one word or "quoted text" that is not excluded with -' },
    ]);
  }
  const unsearchable = groups.flat().find((term) => !searchable(tokensOf(term.text)));
  if (unsearchable) {
    throw validationFailed([
      {
        field,
        location: 'query',
        message: `"${unsearchable.text.slice(0, 40)}…" is longer than any indexed token (200 characters, or parts of 100)`,
      },
    ]);
  }
  return groups;
}

// ---- PostgreSQL: a tsquery over the weighted document of cinv_change_search_document ----

const lexeme = (text: string): string => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;

/**
 * A term matches a token that starts with it (or equals it, when quoted or one character long):
 * names, values and paths are whole tokens as well as parts, so `app-0-7c9f0`, `nginx:1.25` or
 * `db-1.prod` find what they name, and `7c9f0` or `prod` the names that contain them. A term
 * longer than any whole token (200 characters) matches where all its parts occur.
 */
function termTsquery(term: Term): string {
  const tokens = tokensOf(term.text);
  const prefix = !term.quoted && tokens.whole.length > 1 ? ':*' : '';
  const matched =
    tokens.whole.length <= MAX_WHOLE ? `${lexeme(tokens.whole)}${prefix}` : `(${tokens.parts.map(lexeme).join(' & ')})`;
  return term.negated ? `!${matched}` : matched;
}

/** The query as tsquery text, to be cast with `::tsquery` (no parsing or stemming on the way). */
export function toTsquery(query: ParsedQuery): string {
  return query
    .map((group) => (group.length === 1 ? termTsquery(group[0]!) : `(${group.map(termTsquery).join(' | ')})`))
    .join(' & ');
}

// ---- OpenSearch: bool clauses over the token fields the indexer fills ----

/** Token fields of the change-record index and how much a match in each weighs. */
export const TOKEN_FIELDS: readonly { field: string; boost: number }[] = [
  { field: 'tokens.name', boost: 4 },
  { field: 'tokens.meta', boost: 2 },
  { field: 'tokens.field', boost: 1.5 },
  { field: 'tokens.value', boost: 1 },
];

type Clause = Record<string, unknown>;

const anyField = (kind: 'term' | 'prefix', value: string): Clause => ({
  bool: {
    should: TOKEN_FIELDS.map(({ field, boost }) => ({ [kind]: { [field]: { value, boost } } })),
    minimum_should_match: 1,
  },
});

function termClause(term: Term): Clause {
  const tokens = tokensOf(term.text);
  if (tokens.whole.length > MAX_WHOLE) return { bool: { must: tokens.parts.map((part) => anyField('term', part)) } };
  return anyField(!term.quoted && tokens.whole.length > 1 ? 'prefix' : 'term', tokens.whole);
}

/** The query as OpenSearch clauses: `must` for what has to match, `must_not` for exclusions. */
export function toOpenSearch(query: ParsedQuery): { must: Clause[]; must_not: Clause[] } {
  const must: Clause[] = [];
  const mustNot: Clause[] = [];
  for (const group of query) {
    if (group.length === 1 && group[0]!.negated) {
      mustNot.push(termClause(group[0]!));
    } else if (group.length === 1) {
      must.push(termClause(group[0]!));
    } else {
      const options = group.map((term) =>
        term.negated ? { bool: { must_not: [termClause(term)] } } : termClause(term),
      );
      must.push({ bool: { should: options, minimum_should_match: 1 } });
    }
  }
  return { must, must_not: mustNot };
}
