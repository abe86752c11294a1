import type { Expr, PathStep, Query, Value } from '../../platform/query-language/ast.js';
import { excerptAt, QueryError } from '../../platform/query-language/parse.js';

export type ParamValue = string | number | boolean;

/** The names of a query's parameters (`$namespace`), in the order they first appear. */
export function paramsOf(query: Query): string[] {
  const names: string[] = [];
  const value = (v: Value) => {
    if (v.type === 'param' && !names.includes(v.name)) names.push(v.name);
  };
  const expr = (e: Expr): void => {
    if (e.kind === 'and' || e.kind === 'or') e.items.forEach(expr);
    else if (e.kind === 'not') expr(e.expr);
    else if (e.kind === 'compare') value(e.value);
    else if (e.kind === 'in') e.values.forEach(value);
  };
  query.path.forEach((step) => step.kind !== 'hop' && expr(step));
  return names;
}

/**
 * The query with each `$name` replaced by its value: a number compares as a number, text as an
 * unquoted word would (so `$replicas` = 3 matches the JSON number 3). A parameter without a value
 * is an error at its position.
 */
export function bindParams(text: string, query: Query, params: Readonly<Record<string, ParamValue>>): Query {
  const bind = (v: Value): Value => {
    if (v.type !== 'param') return v;
    const given = Object.hasOwn(params, v.name) ? params[v.name] : undefined;
    if (given === undefined) {
      throw new QueryError({
        message: `at line ${v.at.line}, column ${v.at.column}: the parameter $${v.name} has no value (params.${v.name})`,
        line: v.at.line,
        column: v.at.column,
        offset: v.at.offset,
        excerpt: excerptAt(text, v.at.offset),
      });
    }
    return typeof given === 'number'
      ? { type: 'number', value: given, text: String(given) }
      : { type: 'string', text: String(given), quoted: false };
  };
  const expr = (e: Expr): Expr => {
    switch (e.kind) {
      case 'and':
      case 'or':
        return { ...e, items: e.items.map(expr) };
      case 'not':
        return { ...e, expr: expr(e.expr) };
      case 'compare':
        return { ...e, value: bind(e.value) };
      case 'in':
        return { ...e, values: e.values.map(bind) };
      default:
        return e;
    }
  };
  return { ...query, path: query.path.map((step): PathStep => (step.kind === 'hop' ? step : expr(step))) };
}
