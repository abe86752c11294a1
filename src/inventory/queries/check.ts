import type { At, Expr, Field, Hop, Pipe, Query, TimeValue, Value } from '../../platform/query-language/ast.js';
import { excerptAt, QueryError } from '../../platform/query-language/parse.js';
import { fieldText, nearest, QUERY_FIELDS, type FieldDef } from './fields.js';

export const MAX_HOPS = 6;
export const MAX_DEPTH = 5;
export const MAX_PAGE = 1000;
export const MAX_PATTERN = 256;
export const CHANGE_TYPES = ['CREATED', 'UPDATED', 'DELETED'] as const;

/** What the checks need to know beyond the query's text. */
export interface CheckContext {
  /** The moment relative times count back from: the query's `as_of`, or now. */
  moment: Date;
  /** Whether the query reads the inventory at a moment (some fields are known only now). */
  atMoment: boolean;
  /** The relationship types the inventory knows. */
  relationshipTypes: readonly string[];
}

const UNITS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

function problem(text: string, at: At, message: string, suggestions?: string[]): QueryError {
  const hint = suggestions && suggestions.length > 0 ? ` (did you mean ${suggestions.join(', ')}?)` : '';
  return new QueryError({
    message: `at line ${at.line}, column ${at.column}: ${message}${hint}`,
    line: at.line,
    column: at.column,
    offset: at.offset,
    excerpt: excerptAt(text, at.offset),
    ...(suggestions && suggestions.length > 0 ? { suggestions } : {}),
  });
}

/** Checks a parsed query against the fields and relationship types cinv knows; throws a QueryError. */
export function checkQuery(text: string, query: Query, context: CheckContext): void {
  const fail = (at: At, message: string, suggestions?: string[]) => problem(text, at, message, suggestions);

  const time = (value: TimeValue, at: At): string => {
    const resolved = resolveTime(value, context.moment);
    if (resolved === undefined) throw fail(at, `"${value.text}" is not a moment (now, now-24h, 2026-11-30T10:00:00Z)`);
    return resolved;
  };
  const definition = (field: Field, { needPath = true } = {}): FieldDef => {
    const def = QUERY_FIELDS[field.name];
    if (!def) throw fail(field.at, `unknown field "${field.name}"`, nearest(field.name, Object.keys(QUERY_FIELDS)));
    if (def.kind === 'json' && needPath && field.path.length === 0)
      throw fail(field.at, `${field.name} needs a path: ${field.name}.spec.replicas`);
    if (def.kind !== 'json' && field.path.length > 0)
      throw fail(field.at, `${field.name} has no paths; only raw_data and type_data do`);
    if (def.presentOnly && context.atMoment)
      throw fail(field.at, `${field.name} is known only of the present, not at a moment`);
    return def;
  };
  const value = (def: FieldDef, field: Field, v: Value, at: At) => {
    if (def.kind === 'timestamp') {
      const moment =
        v.type === 'time'
          ? resolveTime(v, context.moment)
          : resolveTime({ type: 'time', text: valueText(v), relative: null }, context.moment);
      if (moment === undefined)
        throw fail(at, `${field.name} compares with a moment (now-24h, 2026-11-30T10:00:00Z), not "${valueText(v)}"`);
      return;
    }
    if (v.type === 'time' && v.relative !== null && def.kind !== 'json') {
      throw fail(at, `${fieldText(field)} is not a time: quote "${v.text}" to compare it as text`);
    }
    if (def.kind === 'bigint' && !/^\d+$/.test(valueText(v))) throw fail(at, `${field.name} is a whole number`);
    if (def.kind === 'uuid' && !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(valueText(v)))
      throw fail(at, `${field.name} is a UUID`);
    if (def.values && !def.values.includes(valueText(v)))
      throw fail(at, `${field.name} is one of ${def.values.join(', ')}`, nearest(valueText(v), def.values));
  };

  const expr = (e: Expr): void => {
    switch (e.kind) {
      case 'and':
      case 'or':
        return e.items.forEach(expr);
      case 'not':
        return expr(e.expr);
      case 'any':
        return;
      case 'compare':
        return value(definition(e.field), e.field, e.value, e.at);
      case 'in': {
        const def = definition(e.field);
        return e.values.forEach((v) => value(def, e.field, v, e.at));
      }
      case 'exists':
        definition(e.field);
        return;
      case 'text': {
        const def = definition(e.field);
        if (def.kind !== 'text' && def.kind !== 'json')
          throw fail(
            e.at,
            `${e.op === 'matches' ? 'a pattern' : e.op} applies to text, and ${e.field.name} is not text`,
          );
        if (e.op === 'matches' && e.value.length > MAX_PATTERN)
          throw fail(e.at, `a pattern may be ${MAX_PATTERN} characters long at most`);
        return;
      }
      case 'changed':
        if (e.field) definition(e.field, { needPath: false });
        for (const type of e.changeTypes ?? []) {
          if (!(CHANGE_TYPES as readonly string[]).includes(type))
            throw fail(e.at, `unknown change type ${type}`, nearest(type, CHANGE_TYPES));
        }
        return window(e.since, e.until, e.at);
      case 'created':
      case 'archived':
        return window(e.since, e.until, e.at);
    }
  };
  const window = (since: TimeValue | null, until: TimeValue | null, at: At) => {
    const from = since ? time(since, at) : undefined;
    const to = until ? time(until, at) : undefined;
    if (from !== undefined && to !== undefined && Date.parse(from) > Date.parse(to))
      throw fail(at, 'the window ends before it starts');
  };
  const hop = (h: Hop) => {
    if (h.min > h.max) throw fail(h.at, `a depth range runs from the smaller to the larger (${h.max}..${h.min})`);
    if (h.max > MAX_DEPTH) throw fail(h.at, `a hop goes ${MAX_DEPTH} relationships deep at most`);
    if (h.max < 1) throw fail(h.at, 'a hop goes at least one relationship deep');
    for (const type of h.types ?? []) {
      if (!context.relationshipTypes.includes(type.name))
        throw fail(type.at, `unknown relationship type "${type.name}"`, nearest(type.name, context.relationshipTypes));
    }
  };

  const hops = query.path.filter((step): step is Hop => step.kind === 'hop');
  if (hops.length > MAX_HOPS) throw fail(hops[MAX_HOPS]!.at, `a query takes ${MAX_HOPS} hops at most`);
  for (const step of query.path) {
    if (step.kind === 'hop') hop(step);
    else expr(step);
  }
  checkPipes(query.pipes, definition, fail, hops.length > 0);
}

function checkPipes(
  pipes: readonly Pipe[],
  definition: (field: Field, options?: { needPath?: boolean }) => FieldDef,
  fail: (at: At, message: string) => QueryError,
  hasHops: boolean,
) {
  const seen = new Map<string, Pipe>();
  for (const pipe of pipes) {
    const kind = pipe.kind === 'aggregate' ? 'aggregate' : pipe.kind;
    if (seen.has(kind)) throw fail(pipe.at, `${describePipe(pipe)} may appear once`);
    seen.set(kind, pipe);
    switch (pipe.kind) {
      case 'sort':
        pipe.keys.forEach((key) => definition(key.field));
        break;
      case 'limit':
        if (pipe.n < 1 || pipe.n > MAX_PAGE) throw fail(pipe.at, `limit takes 1 to ${MAX_PAGE}`);
        break;
      case 'fields':
        pipe.fields.forEach((field) => definition(field, { needPath: false }));
        break;
      case 'aggregate': {
        pipe.by.forEach((field) => definition(field));
        if (pipe.field) {
          const def = definition(pipe.field);
          if (def.kind !== 'json' && def.kind !== 'bigint')
            throw fail(pipe.at, `${pipe.fn} takes a number: a raw_data or type_data path`);
        }
        break;
      }
      case 'return':
        if (!hasHops) throw fail(pipe.at, 'return first or last chooses an end of a path: the query has no hop');
        break;
      case 'with_changes':
        break;
    }
  }
  const aggregate = seen.get('aggregate');
  if (aggregate) {
    for (const other of ['sort', 'fields', 'with_changes'] as const) {
      const pipe = seen.get(other);
      if (pipe) throw fail(pipe.at, `${describePipe(pipe)} does not go with ${describePipe(aggregate)}`);
    }
  }
}

const describePipe = (pipe: Pipe) =>
  pipe.kind === 'aggregate' ? pipe.fn : pipe.kind === 'with_changes' ? 'with changes' : pipe.kind;

/** A value's text as written. */
export const valueText = (v: Value): string => (v.type === 'number' ? v.text : v.text);

/** `now`, `now-24h`, a date or an ISO 8601 moment (UTC unless it names an offset), as ISO 8601. */
export function resolveTime(value: TimeValue, moment: Date): string | undefined {
  const relative = /^now(?:([+-])(\d+)([smhdw]))?$/i.exec(value.text);
  if (relative) {
    const offset = relative[1]
      ? (relative[1] === '-' ? -1 : 1) * Number(relative[2]) * UNITS[relative[3]!.toLowerCase()]!
      : 0;
    return new Date(moment.getTime() + offset).toISOString();
  }
  const iso = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/i.exec(
    value.text,
  );
  if (!iso) return undefined;
  const [, y, mo, d, h = '00', mi = '00', s = '00', fraction = '', zone] = iso;
  const offset =
    !zone || zone.toUpperCase() === 'Z' ? 'Z' : zone.includes(':') ? zone : `${zone.slice(0, 3)}:${zone.slice(3)}`;
  const text = `${y}-${mo}-${d}T${h}:${mi}:${s}${fraction}${offset}`;
  const ms = Date.parse(text);
  if (Number.isNaN(ms) || new Date(ms).getUTCFullYear() < 1 || new Date(ms).getUTCFullYear() > 9999) return undefined;
  // fractions finer than milliseconds are kept: the database reads microseconds
  return fraction.length > 4 ? text : new Date(ms).toISOString();
}
