/**
 * What the editor offers at the cursor, from what the grammar expects there: the text up to the
 * word being typed is parsed with a character no rule accepts after it, so the parser's failure
 * lists everything that may come next (a field, a value, a relationship type, a pipe, keywords),
 * and the vocabulary (the server's names, and the paths seen in the data) fills each in.
 */
import { parseQuery, QueryError } from '../../../platform/query-language/parse.js';

export interface Vocabulary {
  ci_types: readonly string[];
  relationship_types: readonly string[];
  fields: readonly string[];
  paths: readonly string[];
}

export type CompletionKind = 'field' | 'keyword' | 'operator' | 'value' | 'relationship' | 'pipe' | 'hop' | 'time';

export interface Completion {
  label: string;
  /** The text that replaces the word being typed. */
  insert: string;
  kind: CompletionKind;
}

export interface CompletionContext {
  /** The word being typed, and where it stands: it is what a completion replaces. */
  word: string;
  from: number;
  to: number;
  /** What the grammar accepts where the word starts, as the parser names it. */
  expected: string[];
  /** The field a value is being typed for (`ci_type` in `ci_type = k8s.`). */
  field: string | undefined;
  /** The CI type the match at the cursor (or, in the pipes, the path's last match) names. */
  ciType: string | undefined;
}

/** No rule of the grammar accepts this character: parsing up to it fails right there. */
const SENTINEL = '\u0001';
const WORD = /[A-Za-z0-9_.$@":/+-]*$/;

const FIELD = 'a field';
const RELATIONSHIP = 'a relationship type';
const literal = (...words: string[]) => words.map((word) => JSON.stringify(word));

/**
 * Inside a hop or a pipe the parser names only the whole (`a hop`, `a pipe`) where it began, so
 * what may come next inside one is read from the text: the hop's types and its end, a pipe's
 * fields and words.
 */
const INSIDE: readonly (readonly [RegExp, string[]])[] = [
  [/(?:<-\[|-\[)\s*$/, [RELATIONSHIP, ...literal('*')]],
  [/(?:<-\[|-\[)\s*(?:[a-z_]\w*\s*,\s*)+$/, [RELATIONSHIP]],
  [/<-\[\s*(?:\*|[a-z_]\w*(?:\s*,\s*[a-z_]\w*)*)(?:\s+\d+(?:\s*\.\.\s*\d+)?)?\s+$/, literal(']-', ']->')],
  [/-\[\s*(?:\*|[a-z_]\w*(?:\s*,\s*[a-z_]\w*)*)(?:\s+\d+(?:\s*\.\.\s*\d+)?)?\s+$/, literal(']->')],
  [/\|\s*(?:sort|fields)\s+(?:[^|,]+,\s*)*$/i, [FIELD]],
  [/\|\s*sort\s+(?:[^|,]+,\s*)*[a-z_][^\s,|]*\s+$/i, literal('asc', 'desc')],
  [/\|\s*(?:count|(?:min|max|sum|avg)\s*\([^)]*\))\s+by\s+(?:[^|,]+,\s*)*$/i, [FIELD]],
  [/\|\s*(?:min|max|sum|avg)\s*\(\s*$/i, [FIELD]],
  [/\|\s*(?:count|(?:min|max|sum|avg)\s*\([^)]*\))\s+$/i, literal('by')],
  [/\|\s*return\s+$/i, literal('first', 'last')],
  [/\|\s*with\s+$/i, literal('changes')],
  [/\bi?starts\s+$/i, literal('with')],
];

/** What the grammar accepts after `before`; nothing when the text before already fails. */
export function expectedAfter(before: string): string[] {
  try {
    parseQuery(before + SENTINEL);
  } catch (error) {
    if (!(error instanceof QueryError)) throw error;
    if (error.problem.offset === before.length) return error.problem.expected ?? [];
    // the failure lies earlier: inside a hop or a pipe, or the text before is wrong already
    return INSIDE.find(([pattern]) => pattern.test(before))?.[1] ?? [];
  }
  return [];
}

/** A field's path cut into its whole segments and the one being typed; dots inside quotes do not cut. */
export function splitPath(text: string): { whole: string[]; typed: string } {
  const whole: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (quoted && char === '\\' && i + 1 < text.length) current += text[++i];
    else if (char === '"') quoted = !quoted;
    else if (char === '.' && !quoted) {
      whole.push(current);
      current = '';
    } else current += char;
  }
  return { whole, typed: current };
}

/** The path part of a query (before its first pipe), quoted strings skipped. */
function pathPart(text: string): string {
  const pipe = text.replace(/"(?:\\.|[^"\\])*"?/g, (quoted) => '_'.repeat(quoted.length)).indexOf('|');
  return pipe === -1 ? text : text.slice(0, pipe);
}

/** The `ci_type = X` of the match the cursor is in (or of the path's last match, past the pipes). */
export function ciTypeAt(before: string, whole: string): string | undefined {
  const inPipes = pathPart(before).length < before.length;
  const path = inPipes ? pathPart(whole) : before;
  const match = path.slice(Math.max(0, path.lastIndexOf(']-')));
  const found = /\bci_type\s*=\s*(?:"((?:\\.|[^"\\])*)"|([^\s()"|]+))/.exec(match);
  return found ? (found[1] ?? found[2])!.replace(/-\[.*$/, '') : undefined;
}

/** The field a value is being typed for: before a comparison, or inside `in (…)`. */
function fieldBeforeValue(before: string): string | undefined {
  const compared = /([a-z_][A-Za-z0-9_.$@"-]*)\s*(?:!=|<=|>=|=|<|>)\s*$/.exec(before);
  if (compared) return compared[1];
  return /([a-z_][A-Za-z0-9_.$@"-]*)\s+(?:not\s+)?in\s*\([^()]*$/i.exec(before)?.[1];
}

export function completionContext(text: string, cursor: number): CompletionContext {
  const upTo = text.slice(0, cursor);
  const word = WORD.exec(upTo)![0];
  const before = upTo.slice(0, upTo.length - word.length);
  const end = cursor + (/^[A-Za-z0-9_.$@"-]*/.exec(text.slice(cursor))?.[0].length ?? 0);
  return {
    word,
    from: before.length,
    to: end,
    expected: expectedAfter(before),
    field: fieldBeforeValue(before),
    ciType: ciTypeAt(before, text),
  };
}

const PIPES: readonly string[] = [
  'sort ',
  'limit ',
  'fields ',
  'count',
  'count by ',
  'min(',
  'max(',
  'sum(',
  'avg(',
  'return first',
  'with changes',
];
const HOPS: readonly string[] = ['-[', '<-[', '-[*]->', '<-[*]-'];
const OPERATORS: readonly string[] = ['=', '!=', '<', '<=', '>', '>='];
const TEXT_OPERATORS: readonly string[] = ['contains ', 'icontains ', 'starts with ', 'istarts with ', 'matches '];
const CHANGE_TYPES: readonly string[] = ['CREATED', 'UPDATED', 'DELETED', 'REACTIVATED'];
const TIMES: readonly string[] = ['now', 'now-1h', 'now-24h', 'now-7d'];
const STATUSES: readonly string[] = ['active', 'inactive', 'archived'];
const TIME_FIELDS = new Set(['created_at', 'updated_at', 'status_updated_at', 'last_seen']);

const of = (kind: CompletionKind, items: readonly string[], suffix = ''): Completion[] =>
  items.map((item) => ({ label: item.trim(), insert: item + suffix, kind }));

/** The fields and paths a field may be: the columns, then the JSON paths (the documents themselves as `raw_data.`). */
function fieldsOf(vocabulary: Vocabulary): Completion[] {
  const columns = vocabulary.fields.map((name) => (name === 'raw_data' || name === 'type_data' ? `${name}.` : name));
  return of('field', [...columns, ...vocabulary.paths]);
}

/** The values a field takes that the vocabulary knows: CI types, statuses, relative times. */
function valuesOf(field: string | undefined, vocabulary: Vocabulary): Completion[] {
  if (field === 'ci_type') return of('value', vocabulary.ci_types, ' ');
  if (field === 'status') return of('value', STATUSES, ' ');
  if (field !== undefined && TIME_FIELDS.has(field)) return of('time', TIMES, ' ');
  return [];
}

/** The completions one thing the parser expects stands for. */
function forExpected(expected: string, context: CompletionContext, vocabulary: Vocabulary): Completion[] {
  if (expected.startsWith('"')) {
    const text = JSON.parse(expected) as string;
    if (/^[a-z]+$/i.test(text)) return of('keyword', [text], ' ');
    return text === '*' || text.startsWith(']') ? of('hop', [text], text === '*' ? '' : ' ') : [];
  }
  if (expected.startsWith('a field')) return fieldsOf(vocabulary);
  if (expected === 'a value') return valuesOf(context.field, vocabulary);
  if (expected.startsWith('a time')) return of('time', TIMES, ' ');
  if (expected === 'a relationship type') return of('relationship', vocabulary.relationship_types);
  if (expected.startsWith('a pipe')) return of('pipe', PIPES);
  if (expected.startsWith('a hop')) return of('hop', HOPS);
  if (expected.startsWith('a comparison')) return of('operator', OPERATORS, ' ');
  if (expected.startsWith('contains,')) return of('operator', TEXT_OPERATORS);
  if (expected.startsWith('a change type')) return of('value', CHANGE_TYPES, ' ');
  return [];
}

/** A list short enough to read at a glance (and to need no scrolling); typing narrows it. */
const MAX_SHOWN = 16;

/**
 * The completions at the context, those beginning with the word typed (case aside), exact-case
 * first; what the word already is in full is not offered again.
 */
export function completions(context: CompletionContext, vocabulary: Vocabulary): Completion[] {
  const word = context.word.toLowerCase();
  const offered = context.expected
    .flatMap((expected) => forExpected(expected, context, vocabulary))
    .filter((c) => c.label.toLowerCase().startsWith(word) && c.label !== context.word);
  const all = [...new Map(offered.map((c) => [c.label, c])).values()];
  const exact = all.filter((c) => c.label.startsWith(context.word));
  return [...exact, ...all.filter((c) => !exact.includes(c))].slice(0, MAX_SHOWN);
}
