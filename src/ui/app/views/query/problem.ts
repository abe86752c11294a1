import { parseQuery, QueryError } from '../../../../platform/query-language/parse.js';
import type { EditorProblem } from '../../components/query-editor';
import type { ApiError } from '../../lib/api';

/** The parser's complaint about the text as it stands, or none; an empty text is no complaint yet. */
export function localProblem(text: string): EditorProblem | undefined {
  if (text.trim() === '') return undefined;
  try {
    parseQuery(text);
    return undefined;
  } catch (error) {
    if (!(error instanceof QueryError)) return undefined;
    const { offset, line, column, message, expected } = error.problem;
    return { offset, line, column, message: message.replace(/^at line \d+, column \d+: /, ''), expected };
  }
}

const strings = (value: unknown): string[] | undefined =>
  Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : undefined;

/** The server's 422 for the query (`INVALID_QUERY`), as a problem at its position; other errors are not the text's. */
export function serverProblem(error: ApiError | undefined): EditorProblem | undefined {
  if (!error || error.code !== 'INVALID_QUERY') return undefined;
  const { offset, line, column } = error.details;
  if (typeof offset !== 'number' || typeof line !== 'number' || typeof column !== 'number') return undefined;
  return {
    offset,
    line,
    column,
    message: error.message.replace(/^The query is not valid /, '').replace(/^at line \d+, column \d+: /, ''),
    expected: strings(error.details.expected),
    suggestions: strings(error.details.suggestions),
  };
}

/** Whether the query walks relationships: its answer can be drawn as a graph. */
export function hops(text: string): number {
  try {
    return parseQuery(text).path.filter((step) => step.kind === 'hop').length;
  } catch {
    return 0;
  }
}
