import type { Query } from './ast.js';
import { parse as generatedParse, SyntaxError as GeneratedSyntaxError } from './parser.generated.js';

interface PeggyFailure {
  location: { start: { offset: number; line: number; column: number } };
  expected: PeggyExpectation[] | null;
  found: string | null;
}

/** A query that does not parse, or names what does not exist, said where and what was expected. */
export interface QueryProblem {
  message: string;
  line: number;
  column: number;
  offset: number;
  /** What the grammar would have accepted there, for a syntax error. */
  expected?: string[];
  /** The line of the query with a caret under the position. */
  excerpt: string;
  /** The nearest known names, for an unknown field or relationship type. */
  suggestions?: string[];
}

export class QueryError extends Error {
  constructor(readonly problem: QueryProblem) {
    super(problem.message);
  }
}

/** The query's line holding `offset`, with a caret under it; long lines are cut around it. */
export function excerptAt(text: string, offset: number): string {
  const start = text.lastIndexOf('\n', offset - 1) + 1;
  const endOfLine = text.indexOf('\n', offset);
  const line = text.slice(start, endOfLine === -1 ? undefined : endOfLine);
  const column = offset - start;
  const from = Math.max(0, column - 40);
  const shown = (from > 0 ? '…' : '') + line.slice(from, from + 80) + (line.length > from + 80 ? '…' : '');
  return `${shown}\n${' '.repeat(column - from + (from > 0 ? 1 : 0))}^`;
}

interface PeggyExpectation {
  type: string;
  description?: string;
  text?: string;
}

const described = (e: PeggyExpectation) =>
  e.type === 'literal' ? JSON.stringify(e.text) : e.type === 'end' ? 'the end of the query' : (e.description ?? e.type);

const run = (text: string): Query => (generatedParse as (input: string) => Query)(text);

/** What the grammar expects where a parse failed; past a keyword that needs a space, what follows the space. */
function expectedAt(text: string, failure: PeggyFailure): string[] {
  const expected = [...new Set((failure.expected ?? []).map(described))].filter((e) => e !== 'whitespace');
  if (expected.length > 0 || failure.location.start.offset !== text.length) return expected;
  try {
    run(`${text} `);
  } catch (again) {
    if (again instanceof GeneratedSyntaxError) {
      const next = again as unknown as PeggyFailure;
      return [...new Set((next.expected ?? []).map(described))].filter((e) => e !== 'whitespace');
    }
  }
  return [];
}

/** Parentheses may nest this deep: the parser descends through several rules for each. */
export const MAX_PARENTHESES = 100;

/** The offset of the first parenthesis nested deeper than MAX_PARENTHESES (quoted text aside). */
function tooDeep(text: string): number | undefined {
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (quoted && char === '\\') i++;
    else if (char === '"') quoted = !quoted;
    else if (!quoted && char === '(' && ++depth > MAX_PARENTHESES) return i;
    else if (!quoted && char === ')') depth = Math.max(0, depth - 1);
  }
  return undefined;
}

/** A problem at an offset that no grammar rule reports: nesting too deep to read. */
function nestingProblem(text: string, offset: number, message: string): QueryError {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - (before.lastIndexOf('\n') + 1) + 1;
  return new QueryError({
    message: `at line ${line}, column ${column}: ${message}`,
    line,
    column,
    offset,
    expected: [],
    excerpt: excerptAt(text, offset),
  });
}

/** Parses a query into its tree, or throws a QueryError naming the position and what was expected. */
export function parseQuery(text: string): Query {
  const deep = tooDeep(text);
  if (deep !== undefined) throw nestingProblem(text, deep, `parentheses nest ${MAX_PARENTHESES} deep at most`);
  try {
    return run(text);
  } catch (error) {
    // a chain of not, or a nesting no limit above caught, deeper than the parser's stack
    if (error instanceof RangeError) throw nestingProblem(text, 0, 'the query nests too deeply to be read');
    if (!(error instanceof GeneratedSyntaxError)) throw error;
    const failure = error as unknown as PeggyFailure;
    const { start } = failure.location;
    const expected = expectedAt(text, failure);
    const found = failure.found;
    const message = `at line ${start.line}, column ${start.column}: expected ${
      expected.length > 0 ? listed(expected) : 'something else'
    } but found ${found === null ? 'the end of the query' : JSON.stringify(found)}`;
    throw new QueryError({ message, ...start, expected, excerpt: excerptAt(text, start.offset) });
  }
}

const listed = (items: string[]) =>
  items.length <= 1 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
