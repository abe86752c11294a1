/**
 * The query language's words as the editor colours them, by the grammar's own lexical rules
 * (src/platform/query-language/grammar.peggy): keywords case-insensitive, fields and their paths,
 * operators, values (bare words, quoted strings, numbers, times, `$parameters`), hops with their
 * relationship types and depths, pipes. It reads any text, finished or not, so that what is being
 * typed is coloured too; whether the text parses is the parser's to say.
 */

export type TokenKind =
  | 'keyword'
  | 'field'
  | 'operator'
  | 'value'
  | 'string'
  | 'number'
  | 'time'
  | 'param'
  | 'hop'
  | 'relationship'
  | 'pipe'
  | 'punctuation'
  | 'space'
  | 'unknown';

export interface Token {
  kind: TokenKind;
  start: number;
  end: number;
  text: string;
}

export const KEYWORDS: ReadonlySet<string> = new Set(
  (
    'and or not in is null exists contains icontains starts istarts with matches changed created archived since ' +
    'until type sort asc desc limit fields count by min max sum avg return first last changes'
  ).split(' '),
);

/** The pipes, as the word after `|` names them. */
export const PIPE_NAMES: ReadonlySet<string> = new Set(
  'sort limit fields count min max sum avg return with'.split(' '),
);

/** Keywords after which a value follows (`contains x`, `since now-1d`, `type UPDATED`, `limit 20`). */
const BEFORE_VALUE = new Set(['contains', 'icontains', 'matches', 'since', 'until', 'type', 'limit']);

const PATTERNS = {
  space: /\s+/y,
  hopOpen: /<-\[|-\[/y,
  hopClose: /\]->|\]-|\]/y,
  operator: /!=|<=|>=|=|<|>|~/y,
  quoted: /"(?:\\.|[^"\\])*"?/y,
  param: /\$[A-Za-z_][A-Za-z0-9_]*/y,
  iso: /\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[Zz]|[+-]\d{2}:?\d{2})?)?(?![A-Za-z0-9_.:/@*+-])/y,
  now: /now(?:[+-]\d+[smhdw])?(?![A-Za-z0-9_.:/@*+-])/iy,
  number: /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![A-Za-z0-9_.:/@*+-])/y,
  depth: /\d+(?:\.\.\d+)?|\.\./y,
  identifier: /[A-Za-z_][A-Za-z0-9_]*/y,
  segment: /\.(?:[A-Za-z0-9_\-$@]+|"(?:\\.|[^"\\])*"?)/y,
  bareWord: /(?:(?!-\[)[A-Za-z0-9_.:/@*+-])+/y,
} as const;

function matchAt(pattern: RegExp, text: string, at: number): string | null {
  pattern.lastIndex = at;
  return pattern.exec(text)?.[0] ?? null;
}

/** Where the lexer stands: inside a hop's brackets, inside a list of values, what the last word was. */
interface State {
  inHop: boolean;
  /** Inside `in (…)` or `type (…)`: every item is a value. */
  inList: boolean;
  /** The last token that was not a space. */
  previous: Token | undefined;
  /** The one before it. */
  before: Token | undefined;
}

/** Whether a word here is a value rather than a field or keyword, by what precedes it. */
function expectsValue(state: State): boolean {
  const last = state.previous;
  if (!last) return false;
  if (state.inList) return last.text === '(' || last.text === ',';
  if (last.kind === 'operator') return last.text !== '*';
  if (last.kind !== 'keyword' && last.kind !== 'pipe') return false;
  const word = last.text.toLowerCase();
  if (word === 'with') return ['starts', 'istarts'].includes(state.before?.text.toLowerCase() ?? '');
  return BEFORE_VALUE.has(word);
}

/** A field with its path (`raw_data.metadata.labels."app.kubernetes.io/name"`), from an identifier. */
function fieldEnd(text: string, at: number): number {
  let end = at + matchAt(PATTERNS.identifier, text, at)!.length;
  for (let segment = matchAt(PATTERNS.segment, text, end); segment; segment = matchAt(PATTERNS.segment, text, end))
    end += segment.length;
  return end;
}

/** A word where a value stands: a time, a number, a quoted string, a parameter or a bare word. */
function valueToken(text: string, at: number): [TokenKind, number] | null {
  const forms: [TokenKind, RegExp][] = [
    ['string', PATTERNS.quoted],
    ['param', PATTERNS.param],
    ['time', PATTERNS.iso],
    ['time', PATTERNS.now],
    ['number', PATTERNS.number],
    ['value', PATTERNS.bareWord],
  ];
  for (const [kind, pattern] of forms) {
    const found = matchAt(pattern, text, at);
    if (found) return [kind, found.length];
  }
  return null;
}

/** Inside `-[ … ]->`: relationship types, `*`, depths and commas. */
function hopToken(text: string, at: number): [TokenKind, number] | null {
  const close = matchAt(PATTERNS.hopClose, text, at);
  if (close) return ['hop', close.length];
  const name = matchAt(PATTERNS.identifier, text, at);
  if (name) return ['relationship', name.length];
  const depth = matchAt(PATTERNS.depth, text, at);
  if (depth) return ['number', depth.length];
  if (text[at] === '*') return ['operator', 1];
  if (text[at] === ',') return ['punctuation', 1];
  return null;
}

/** A word where a field or keyword stands: a keyword, a pipe's name after `|`, or a field and its path. */
function wordToken(text: string, at: number, state: State): [TokenKind, number] | null {
  const identifier = matchAt(PATTERNS.identifier, text, at);
  if (!identifier) return null;
  const lower = identifier.toLowerCase();
  if (state.previous?.text === '|' && PIPE_NAMES.has(lower)) return ['pipe', identifier.length];
  if (KEYWORDS.has(lower) && text[at + identifier.length] !== '.') return ['keyword', identifier.length];
  return ['field', fieldEnd(text, at) - at];
}

/** The token at `at`, by what the state expects there. */
function nextToken(text: string, at: number, state: State): [TokenKind, number] {
  const space = matchAt(PATTERNS.space, text, at);
  if (space) return ['space', space.length];
  if (state.inHop) return hopToken(text, at) ?? ['unknown', 1];
  const hop = matchAt(PATTERNS.hopOpen, text, at);
  if (hop) return ['hop', hop.length];
  if (text[at] === '|') return ['pipe', 1];
  if ('(),'.includes(text[at]!)) return ['punctuation', 1];
  const operator = matchAt(PATTERNS.operator, text, at);
  if (operator) return ['operator', operator.length];
  if (expectsValue(state)) {
    const value = valueToken(text, at);
    if (value && !(value[0] === 'value' && /^(and|or)$/i.test(text.slice(at, at + value[1])))) return value;
  }
  if (text[at] === '*') return ['operator', 1];
  const word = wordToken(text, at, state);
  if (word) return word;
  const quoted = matchAt(PATTERNS.quoted, text, at);
  if (quoted) return ['string', quoted.length];
  const param = matchAt(PATTERNS.param, text, at);
  return param ? ['param', param.length] : ['unknown', 1];
}

/** What a token changes in the state: entering or leaving a hop, a list of values. */
function advance(state: State, token: Token): void {
  if (token.kind === 'space') return;
  if (token.kind === 'hop') state.inHop = token.text.endsWith('[');
  const last = state.previous?.text.toLowerCase();
  if (token.text === '(' && (last === 'in' || last === 'type')) state.inList = true;
  if (token.text === ')') state.inList = false;
  state.before = state.previous;
  state.previous = token;
}

/** The text cut into tokens, end to end: every character belongs to one. */
export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  const state: State = { inHop: false, inList: false, previous: undefined, before: undefined };
  for (let at = 0; at < text.length;) {
    const [kind, length] = nextToken(text, at, state);
    const token = { kind, start: at, end: at + length, text: text.slice(at, at + length) };
    tokens.push(token);
    advance(state, token);
    at += length;
  }
  return tokens;
}

export interface Segment {
  text: string;
  kind: TokenKind;
  /** Part of the span a syntax error points at. */
  error: boolean;
}

/**
 * The text as coloured pieces, with the error's span (from `errorAt` to the end of the token
 * there, one character at least) marked; an error at the very end marks a space after the text.
 */
export function highlight(text: string, errorAt?: number): Segment[] {
  const tokens = tokenize(text);
  if (errorAt === undefined) return tokens.map((t) => ({ text: t.text, kind: t.kind, error: false }));
  const at = Math.max(0, Math.min(errorAt, text.length));
  const hit = tokens.find((t) => t.start <= at && at < t.end && t.kind !== 'space');
  const end = hit ? hit.end : Math.min(text.length, at + 1);
  const segments: Segment[] = [];
  for (const t of tokens) {
    const cuts = [t.start, ...[at, end].filter((cut) => cut > t.start && cut < t.end), t.end];
    for (let i = 0; i + 1 < cuts.length; i++)
      segments.push({
        text: text.slice(cuts[i], cuts[i + 1]),
        kind: t.kind,
        error: cuts[i]! >= at && cuts[i]! < end,
      });
  }
  if (at >= text.length) segments.push({ text: ' ', kind: 'space', error: true });
  return segments;
}
