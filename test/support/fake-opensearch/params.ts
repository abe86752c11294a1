import { badRequest, unsupported } from './errors.js';
import { isObject, type Json } from './json.js';

export function expectObject(value: unknown, what: string): Json {
  if (!isObject(value)) throw badRequest('parsing_exception', `[${what}] must be an object`);
  return value;
}

export function allowKeys(object: Json, allowed: readonly string[], what: string): void {
  const unknown = Object.keys(object).find((key) => !allowed.includes(key));
  if (unknown !== undefined) throw unsupported(`[${unknown}] in [${what}]`);
}

/** A request body or clause that must be an object of the known keys. */
export function objectParams(value: unknown, what: string, allowed: readonly string[]): Json {
  const object = expectObject(value, what);
  allowKeys(object, allowed, what);
  return object;
}

/** Query, aggregation and action clauses are objects with exactly one key naming the clause or field. */
export function singleEntry(value: unknown, what: string): [string, unknown] {
  const entries = isObject(value) ? Object.entries(value) : [];
  const [entry] = entries;
  if (entries.length !== 1 || !entry) throw badRequest('parsing_exception', `[${what}] must hold exactly one entry`);
  return entry;
}

export function intParam(value: unknown, fallback: number, what: string): number {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0)
    throw badRequest('parsing_exception', `[${what}] must be a non-negative integer`);
  return number;
}

export function boostParam(value: unknown): number {
  const boost = value === undefined ? 1 : Number(value);
  if (!Number.isFinite(boost)) throw badRequest('parsing_exception', '[boost] must be a number');
  return boost;
}

/** Wildcard patterns (`*`, `?`, `\` escapes) as used by wildcard queries, index patterns and `_source` filters. */
export function wildcardRegExp(pattern: string, caseInsensitive = false): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern.charAt(i);
    if (char === '*') source += '.*';
    else if (char === '?') source += '.';
    else {
      const literal = char === '\\' && i + 1 < pattern.length ? pattern.charAt(++i) : char;
      source += literal.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    }
  }
  return new RegExp(`^${source}$`, caseInsensitive ? 'is' : 's');
}

/** Index, alias and template expressions: `_all` and anything with `*` name many. */
export const isPattern = (expression: string) => expression === '_all' || expression.includes('*');
export const patternRegExp = (expression: string) => wildcardRegExp(expression === '_all' ? '*' : expression);
