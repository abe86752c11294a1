import type { At, Expr, Field, Hop, Pipe, Query, TimeValue, Value } from '../../platform/query-language/ast.js';
import { excerptAt, QueryError } from '../../platform/query-language/parse.js';
import { fieldText, nearest, QUERY_FIELDS, type FieldDef } from './fields.js';

export const MAX_HOPS = 6;
export const MAX_DEPTH = 5;
export const MAX_PAGE = 1000;
export const MAX_PATTERN = 256;
/** How deep and, or and not may nest in a match, and how many segments a path has: the statement nests as deep. */
export const MAX_NESTING = 64;
export const MAX_PATH = 64;
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
  const checker = new Checker(text, context);
  const hops = query.path.filter((step): step is Hop => step.kind === 'hop');
  if (hops.length > MAX_HOPS) throw checker.fail(hops[MAX_HOPS]!.at, `a query takes ${MAX_HOPS} hops at most`);
  for (const step of query.path) {
    if (step.kind === 'hop') checker.hop(step);
    else checker.expr(step);
  }
  checkPipes(
    query.pipes,
    (field, options) => checker.definition(field, options),
    (at, message) => checker.fail(at, message),
    hops.length > 0,
  );
}

/** The checks of one query's names, values and hops. */
class Checker {
  constructor(
    private readonly text: string,
    private readonly context: CheckContext,
  ) {}

  fail(at: At, message: string, suggestions?: string[]): QueryError {
    return problem(this.text, at, message, suggestions);
  }

  private time(value: TimeValue, at: At): string {
    const resolved = resolveTime(value, this.context.moment);
    if (resolved === undefined)
      throw this.fail(at, `"${value.text}" is not a moment (now, now-24h, 2026-11-30T10:00:00Z)`);
    return resolved;
  }

  definition(field: Field, { needPath = true, wildcard = false } = {}): FieldDef {
    const def = QUERY_FIELDS[field.name];
    if (!def)
      throw this.fail(field.at, `unknown field "${field.name}"`, nearest(field.name, Object.keys(QUERY_FIELDS)));
    if (def.kind === 'json' && needPath && field.path.length === 0)
      throw this.fail(field.at, `${field.name} needs a path: ${field.name}.spec.replicas`);
    if (def.kind !== 'json' && field.path.length > 0)
      throw this.fail(field.at, `${field.name} has no paths; only raw_data and type_data do`);
    if (field.path.length > MAX_PATH) throw this.fail(field.at, `a path has ${MAX_PATH} segments at most`);
    if (field.wildcards && !wildcard)
      throw this.fail(field.at, 'a * segment (every element) works with exists and not exists only');
    if (def.presentOnly && this.context.atMoment)
      throw this.fail(field.at, `${field.name} is known only of the present, not at a moment`);
    return def;
  }

  private value(def: FieldDef, field: Field, v: Value, at: At): void {
    const text = valueText(v);
    if (def.kind === 'timestamp') {
      const moment = resolveTime(v.type === 'time' ? v : { type: 'time', text, relative: null }, this.context.moment);
      if (moment === undefined)
        throw this.fail(at, `${field.name} compares with a moment (now-24h, 2026-11-30T10:00:00Z), not "${text}"`);
      return;
    }
    if (v.type === 'time' && v.relative !== null && def.kind !== 'json')
      throw this.fail(at, `${fieldText(field)} is not a time: quote "${v.text}" to compare it as text`);
    if (def.kind === 'bigint' && !/^\d+$/.test(text)) throw this.fail(at, `${field.name} is a whole number`);
    if (def.kind === 'uuid' && !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(text))
      throw this.fail(at, `${field.name} is a UUID`);
    if (def.values && !def.values.includes(text))
      throw this.fail(at, `${field.name} is one of ${def.values.join(', ')}`, nearest(text, def.values));
  }

  expr(e: Expr, depth = 0): void {
    const nests = e.kind === 'and' || e.kind === 'or' || e.kind === 'not';
    if (nests && depth >= MAX_NESTING)
      throw this.fail(e.at, `a match nests and, or and not ${MAX_NESTING} levels deep at most`);
    switch (e.kind) {
      case 'and':
      case 'or':
        return e.items.forEach((item) => this.expr(item, depth + 1));
      case 'not':
        return this.expr(e.expr, depth + 1);
      case 'any':
        return;
      case 'compare':
        return this.value(this.definition(e.field), e.field, e.value, e.at);
      case 'in': {
        const def = this.definition(e.field);
        return e.values.forEach((v) => this.value(def, e.field, v, e.at));
      }
      case 'exists':
        this.definition(e.field, { wildcard: true });
        return;
      case 'text':
        return this.textMatch(e);
      case 'changed':
        if (e.field) this.definition(e.field, { needPath: false });
        for (const type of e.changeTypes ?? []) {
          if (!(CHANGE_TYPES as readonly string[]).includes(type))
            throw this.fail(e.at, `unknown change type ${type}`, nearest(type, CHANGE_TYPES));
        }
        return this.window(e.since, e.until, e.at);
      case 'created':
      case 'archived':
        return this.window(e.since, e.until, e.at);
    }
  }

  private textMatch(e: Extract<Expr, { kind: 'text' }>): void {
    const def = this.definition(e.field);
    if (def.kind !== 'text' && def.kind !== 'json')
      throw this.fail(
        e.at,
        `${e.op === 'matches' ? 'a pattern' : e.op} applies to text, and ${e.field.name} is not text`,
      );
    if (e.op === 'matches' && e.value.length > MAX_PATTERN)
      throw this.fail(e.at, `a pattern may be ${MAX_PATTERN} characters long at most`);
  }

  private window(since: TimeValue | null, until: TimeValue | null, at: At): void {
    const from = since ? this.time(since, at) : undefined;
    const to = until ? this.time(until, at) : undefined;
    if (from !== undefined && to !== undefined && Date.parse(from) > Date.parse(to))
      throw this.fail(at, 'the window ends before it starts');
  }

  hop(h: Hop): void {
    if (h.min > h.max) throw this.fail(h.at, `a depth range runs from the smaller to the larger (${h.max}..${h.min})`);
    if (h.max > MAX_DEPTH) throw this.fail(h.at, `a hop goes ${MAX_DEPTH} relationships deep at most`);
    if (h.max < 1) throw this.fail(h.at, 'a hop goes at least one relationship deep');
    const known = this.context.relationshipTypes;
    for (const type of h.types ?? []) {
      if (!known.includes(type.name))
        throw this.fail(type.at, `unknown relationship type "${type.name}"`, nearest(type.name, known));
    }
  }
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
