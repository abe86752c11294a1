import type { Sql } from 'postgres';
import type { Fragment } from '../auth/scope.js';
import { asJson } from '../db/database.js';
import { invalidFilter } from '../errors.js';

export const OPERATORS = [
  'eq',
  'ne',
  'gt',
  'gte',
  'lt',
  'lte',
  'like',
  'ilike',
  'startswith',
  'in',
  'nin',
  'null',
  'notnull',
] as const;
export type Operator = (typeof OPERATORS)[number];

const VALUELESS: ReadonlySet<Operator> = new Set(['null', 'notnull']);
const TEXT_ONLY: ReadonlySet<Operator> = new Set(['like', 'ilike', 'startswith']);
const NUMBER = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a value is a UUID in its text form (any case). */
export const isUuid = (value: string): boolean => UUID.test(value);

export type FieldKind = 'text' | 'timestamp' | 'uuid';

export interface FieldDef {
  kind: FieldKind;
  /** Qualified column, e.g. `ci.name`. */
  column: string;
  /** Allowed values for eq/ne/in/nin, when the column is an enumeration. */
  values?: readonly string[];
  /** A text-array column: the filter matches when any element matches (e.g. changed fields). */
  array?: boolean;
}

export interface FilterSpec {
  fields: Record<string, FieldDef>;
  /** Prefixes that address a path inside a jsonb column: `raw_data.spec.replicas`. */
  json?: Record<string, string>;
}

interface ParsedBase {
  raw: string;
  field: string;
  op: Operator;
  /** The value part (undefined for null/notnull); for in/nin the comma-separated list. */
  value: string | undefined;
}
export type ParsedFilter =
  | (ParsedBase & { target: 'column'; def: FieldDef })
  | (ParsedBase & { target: 'json'; column: string; path: string[] });

/** Whether a timestamp's date is one of the calendar (JavaScript rolls 2024-02-30 over into March; PostgreSQL refuses it). */
function realDate(value: string): boolean {
  const [year, month, day] = value.slice(0, 10).split('-').map(Number) as [number, number, number];
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/** A timestamp without an offset is read as UTC, whatever the server's or database's time zone. */
function asUtc(value: string): string {
  if (!value.includes('T') && !value.includes(' ')) return `${value}T00:00:00Z`;
  return /(?:Z|[+-]\d{2}:?\d{2})$/i.test(value) ? value : `${value}Z`;
}

function parseOne(raw: string, spec: FilterSpec): ParsedFilter {
  // split on the first two colons only: values such as timestamps contain colons
  const first = raw.indexOf(':');
  if (first <= 0) throw invalidFilter(raw, 'expected field:operator:value');
  const second = raw.indexOf(':', first + 1);
  const field = raw.slice(0, first);
  const op = (second === -1 ? raw.slice(first + 1) : raw.slice(first + 1, second)) as Operator;
  const value = second === -1 ? undefined : raw.slice(second + 1);
  if (!OPERATORS.includes(op)) throw invalidFilter(raw, `unknown operator "${op}"; use one of ${OPERATORS.join(', ')}`);
  if (VALUELESS.has(op) && value !== undefined) throw invalidFilter(raw, `operator "${op}" takes no value`);
  if (!VALUELESS.has(op) && (value === undefined || value === ''))
    throw invalidFilter(raw, `operator "${op}" needs a value`);

  // own keys only: a field named `constructor` or `__proto__` is unknown, not Object's
  const def = Object.hasOwn(spec.fields, field) ? spec.fields[field] : undefined;
  if (def) {
    if (TEXT_ONLY.has(op) && def.kind !== 'text')
      throw invalidFilter(raw, `operator "${op}" applies to text fields only`);
    for (const item of op === 'in' || op === 'nin' ? value!.split(',') : value === undefined ? [] : [value]) {
      if (
        def.kind === 'timestamp' &&
        (!ISO_TIMESTAMP.test(item) || Number.isNaN(Date.parse(item)) || !realDate(item))
      ) {
        throw invalidFilter(raw, `"${item}" is not an ISO 8601 timestamp`);
      }
      if (def.kind === 'uuid' && !TEXT_ONLY.has(op) && !UUID.test(item))
        throw invalidFilter(raw, `"${item}" is not a UUID`);
      if (def.values && ['eq', 'ne', 'in', 'nin'].includes(op) && !def.values.includes(item)) {
        throw invalidFilter(raw, `"${item}" is not one of ${def.values.join(', ')}`);
      }
    }
    const normalized = def.kind === 'timestamp' && value !== undefined ? value.split(',').map(asUtc).join(',') : value;
    return { raw, field, op, value: normalized, target: 'column', def };
  }
  const dot = field.indexOf('.');
  const prefix = field.slice(0, dot);
  const column = dot > 0 && spec.json && Object.hasOwn(spec.json, prefix) ? spec.json[prefix] : undefined;
  if (column) {
    const path = field.slice(dot + 1).split('.');
    if (path.some((segment) => segment === '')) throw invalidFilter(raw, 'empty segment in the JSON path');
    return { raw, field, op, value, target: 'json', column, path };
  }
  const known = [...Object.keys(spec.fields), ...Object.keys(spec.json ?? {}).map((p) => `${p}.<path>`)];
  throw invalidFilter(raw, `unknown field "${field}"; filterable fields are ${known.join(', ')}`);
}

/** Parses repeated `filter=field:operator:value` parameters; throws a 400 naming the bad filter. */
export function parseFilters(raw: readonly string[] | undefined, spec: FilterSpec): ParsedFilter[] {
  return (raw ?? []).map((text) => parseOne(text, spec));
}

export const escapeLike = (text: string): string => text.replace(/[\\%_]/g, (c) => `\\${c}`);

function likePattern(op: Operator, value: string): string {
  return op === 'startswith' ? `${escapeLike(value)}%` : `%${escapeLike(value)}%`;
}

function columnCondition(sql: Sql, filter: ParsedFilter & { target: 'column' }): Fragment {
  const { def, op, value } = filter;
  // timestamps travel as text: a parameter typed timestamptz would pass through a JS Date and lose
  // its microseconds
  const cast = def.kind === 'timestamp' ? sql`::text::timestamptz` : def.kind === 'uuid' ? sql`::uuid` : sql``;
  const arrayCast =
    def.kind === 'timestamp' ? sql`::text[]::timestamptz[]` : def.kind === 'uuid' ? sql`::uuid[]` : sql`::text[]`;
  if (def.array) {
    // a text[] column matches when one of its elements does; equality and lists are written as
    // containment and overlap, which a GIN index on the column serves
    const column = sql(def.column);
    const list = (value ?? '').split(',');
    switch (op) {
      case 'eq':
        return sql`${column} @> ${[value ?? '']}::text[]`;
      case 'ne':
        return sql`not (${column} @> ${[value ?? '']}::text[])`;
      case 'in':
        return sql`${column} && ${list}::text[]`;
      case 'nin':
        return sql`not (${column} && ${list}::text[])`;
      case 'null':
        return sql`cardinality(${column}) = 0`;
      case 'notnull':
        return sql`cardinality(${column}) > 0`;
      default:
        return sql`exists (select 1 from unnest(${column}) as f where ${scalarCondition(sql, sql`f`, op, value, sql``, sql`::text[]`)})`;
    }
  }
  return scalarCondition(sql, sql`${sql(def.column)}`, op, value, cast, arrayCast);
}

function scalarCondition(
  sql: Sql,
  expr: Fragment,
  op: Operator,
  value: string | undefined,
  cast: Fragment,
  arrayCast: Fragment,
): Fragment {
  const v = value ?? '';
  switch (op) {
    case 'eq':
      return sql`${expr} = ${v}${cast}`;
    case 'ne':
      return sql`${expr} is distinct from ${v}${cast}`;
    case 'gt':
      return sql`${expr} > ${v}${cast}`;
    case 'gte':
      return sql`${expr} >= ${v}${cast}`;
    case 'lt':
      return sql`${expr} < ${v}${cast}`;
    case 'lte':
      return sql`${expr} <= ${v}${cast}`;
    case 'like':
    case 'startswith':
      return sql`${expr} like ${likePattern(op, v)}`;
    case 'ilike':
      return sql`${expr} ilike ${likePattern(op, v)}`;
    case 'in':
      return sql`${expr} = any(${v.split(',')}${arrayCast})`;
    case 'nin':
      return sql`(${expr} is null or not (${expr} = any(${v.split(',')}${arrayCast})))`;
    case 'null':
      return sql`${expr} is null`;
    case 'notnull':
      return sql`${expr} is not null`;
  }
}

/** `{"a": {"b": value}}` for path [a, b]: lets equality use the jsonb GIN index (`@>`). */
function nest(path: readonly string[], value: unknown): unknown {
  return path.reduceRight<unknown>((inner, key) => ({ [key]: inner }), value);
}

function jsonCondition(sql: Sql, filter: ParsedFilter & { target: 'json' }): Fragment {
  const { column, path, op, value } = filter;
  const node = sql`(${sql(column)} #> ${path}::text[])`;
  const text = sql`(${sql(column)} #>> ${path}::text[])`;
  const v = value ?? '';
  const numeric = NUMBER.test(v);
  const containable = path.every((segment) => !/^\d+$/.test(segment));
  const equals = (): Fragment => {
    if (!containable) return sql`${text} = ${v}`;
    const candidates = [nest(path, v)];
    if (numeric) candidates.push(nest(path, Number(v)));
    if (v === 'true' || v === 'false') candidates.push(nest(path, v === 'true'));
    return sql`(${candidates.map((c) => sql`${sql(column)} @> ${sql.json(asJson(c))}::jsonb`).reduce((a, b) => sql`${a} or ${b}`)})`;
  };
  // numbers compare as numbers when both sides are numeric, otherwise as text
  const ordered = (cmp: Fragment): Fragment =>
    numeric
      ? sql`(case when jsonb_typeof(${node}) = 'number' then ${text}::numeric end) ${cmp} ${v}::numeric`
      : sql`${text} ${cmp} ${v}`;
  switch (op) {
    case 'eq':
      return equals();
    case 'ne':
      return sql`not coalesce(${equals()}, false)`;
    case 'gt':
      return ordered(sql`>`);
    case 'gte':
      return ordered(sql`>=`);
    case 'lt':
      return ordered(sql`<`);
    case 'lte':
      return ordered(sql`<=`);
    case 'like':
    case 'startswith':
      return sql`${text} like ${likePattern(op, v)}`;
    case 'ilike':
      return sql`${text} ilike ${likePattern(op, v)}`;
    case 'in':
      return sql`${text} = any(${v.split(',')}::text[])`;
    case 'nin':
      return sql`(${text} is null or not (${text} = any(${v.split(',')}::text[])))`;
    case 'null':
      return sql`(${node} is null or jsonb_typeof(${node}) = 'null')`;
    case 'notnull':
      return sql`(${node} is not null and jsonb_typeof(${node}) <> 'null')`;
  }
}

/** One `WHERE` fragment per filter; values are always bound parameters. */
export function compileFilters(sql: Sql, filters: readonly ParsedFilter[]): Fragment[] {
  return filters.map((filter) =>
    filter.target === 'column' ? columnCondition(sql, filter) : jsonCondition(sql, filter),
  );
}
