import type { Sql } from 'postgres';
import type { Fragment } from '../../platform/auth/scope.js';
import { AppError } from '../../platform/errors.js';
import type { Expr, Field, Value } from '../../platform/query-language/ast.js';
import { excerptAt } from '../../platform/query-language/parse.js';
import { escapeLike } from '../../platform/query/filters.js';
import { CHANGE_TYPES } from '../changes/schema.js';
import { SEVERITIES } from '../records/kinds.js';

/**
 * The change a rule's match may name beside the CI (docs/readable-changes.md): `change.kind`,
 * `change.severity` (ordered: info < low < medium < high), `change.type` (CREATED, UPDATED,
 * DELETED) and `change.field` (any field change's path). A match sees the record as the shipped
 * rules classified it.
 */
export const CHANGE_FIELDS = ['kind', 'severity', 'type', 'field'] as const;
type ChangeField = (typeof CHANGE_FIELDS)[number];

export const isChangeField = (field: Field): boolean => field.name === 'change';

type Leaf = Extract<Expr, { kind: 'compare' | 'in' | 'exists' | 'text' }>;

function refuse(text: string, at: Expr['at'], message: string): AppError {
  return new AppError(
    422,
    'INVALID_QUERY',
    `The query is not valid at line ${at.line}, column ${at.column}: ${message}`,
    {
      message: `at line ${at.line}, column ${at.column}: ${message}`,
      line: at.line,
      column: at.column,
      offset: at.offset,
      excerpt: excerptAt(text, at.offset),
    },
  );
}

const valueText = (v: Value): string | undefined => (v.type === 'string' || v.type === 'number' ? v.text : undefined);

/** Refuses what a change field cannot be asked (a 422 with the position); the CI's fields are the query language's to check. */
export function checkChangeFields(text: string, e: Expr): void {
  switch (e.kind) {
    case 'and':
    case 'or':
      return e.items.forEach((item) => checkChangeFields(text, item));
    case 'not':
      return checkChangeFields(text, e.expr);
    case 'changed':
    case 'created':
    case 'archived':
      throw refuse(text, e.at, 'a change rule reads the change itself: name change.type, change.field or change.kind');
    case 'any':
      return;
    default:
      if (isChangeField(e.field)) checkLeaf(text, e);
  }
}

function checkLeaf(text: string, e: Leaf): void {
  const [name, ...rest] = e.field.path;
  if (!name || rest.length > 0 || !(CHANGE_FIELDS as readonly string[]).includes(name))
    throw refuse(text, e.field.at, `unknown change field; a rule names change.${CHANGE_FIELDS.join(', change.')}`);
  if (e.kind === 'exists') throw refuse(text, e.at, `change.${name} always has a value: compare it`);
  if (e.kind === 'text' && (name === 'severity' || name === 'type' || e.op === 'matches'))
    throw refuse(text, e.at, `change.${name} takes =, !=, in${name === 'severity' ? ', <, <=, >, >=' : ''} here`);
  const values = e.kind === 'compare' ? [e.value] : e.kind === 'in' ? e.values : [];
  for (const value of values) {
    const v = valueText(value);
    if (v === undefined) throw refuse(text, e.at, `change.${name} is compared with a word or a quoted text`);
    if (name === 'severity' && !(SEVERITIES as readonly string[]).includes(v))
      throw refuse(text, e.at, `a severity is one of ${SEVERITIES.join(', ')}`);
    if (name === 'type' && !(CHANGE_TYPES as readonly string[]).includes(v.toUpperCase()))
      throw refuse(text, e.at, `a change type is one of ${CHANGE_TYPES.join(', ')}`);
  }
  if (e.kind === 'compare' && !['=', '!='].includes(e.op) && name !== 'severity')
    throw refuse(text, e.at, `change.${name} takes = and != (only change.severity is ordered)`);
}

const severityRank = (sql: Sql, value: Fragment) => sql`array_position(${[...SEVERITIES]}::text[], ${value})`;

const ORDERED = (sql: Sql): Record<string, Fragment> => ({ '<': sql`<`, '<=': sql`<=`, '>': sql`>`, '>=': sql`>=` });

/** One change-field comparison over the change record `cr`, its kind and severity as the shipped rules set them (`base`). */
function changeCondition(sql: Sql, e: Leaf, base: string): Fragment {
  const name = e.field.path[0] as ChangeField;
  if (name === 'field') return fieldCondition(sql, e);
  const b = sql(base);
  const column = name === 'type' ? sql`cr.change_type` : name === 'kind' ? sql`${b}.kind` : sql`${b}.severity`;
  const normal = (v: Value) => (name === 'type' ? valueText(v)!.toUpperCase() : valueText(v)!);
  switch (e.kind) {
    case 'compare': {
      const value = normal(e.value);
      if (name === 'severity' && !['=', '!='].includes(e.op))
        return sql`${severityRank(sql, column)} ${ORDERED(sql)[e.op]!} ${severityRank(sql, sql`${value}::text`)}`;
      return e.op === '=' ? sql`${column} is not distinct from ${value}` : sql`${column} is distinct from ${value}`;
    }
    case 'in': {
      const values = e.values.map(normal);
      return e.negated
        ? sql`not coalesce(${column} = any(${values}::text[]), false)`
        : sql`coalesce(${column} = any(${values}::text[]), false)`;
    }
    case 'text':
      return textCondition(sql, column, e.op, e.value);
    default:
      throw new Error(`not a change comparison: ${e.kind}`);
  }
}

function textCondition(sql: Sql, target: Fragment, op: string, value: string): Fragment {
  const pattern = op === 'starts' || op === 'istarts' ? `${escapeLike(value)}%` : `%${escapeLike(value)}%`;
  return op === 'icontains' || op === 'istarts'
    ? sql`coalesce(${target} ilike ${pattern}, false)`
    : sql`coalesce(${target} like ${pattern}, false)`;
}

/** `change.field`: some field change of the record has the path (`!=`, `not in`: none has). */
function fieldCondition(sql: Sql, e: Leaf): Fragment {
  const some = (condition: Fragment) =>
    sql`exists (select 1 from jsonb_array_elements(cr.changes) as c where ${condition})`;
  const path = sql`(c ->> 'field')`;
  switch (e.kind) {
    case 'compare':
      return e.op === '='
        ? some(sql`${path} = ${valueText(e.value)!}`)
        : sql`not ${some(sql`${path} = ${valueText(e.value)!}`)}`;
    case 'in': {
      const inside = some(sql`${path} = any(${e.values.map((v) => valueText(v)!)}::text[])`);
      return e.negated ? sql`not ${inside}` : inside;
    }
    case 'text':
      return some(textCondition(sql, path, e.op, e.value));
    default:
      throw new Error(`not a change comparison: ${e.kind}`);
  }
}

/**
 * A rule's match as SQL over the change record `cr`, its shipped verdict `base` (the record's
 * own columns when it was just written) and its CI `ci` (configuration_items' columns): change
 * fields compiled here, everything else by the query language (`ciCondition`).
 */
export function matchCondition(sql: Sql, e: Expr, base: string, ciCondition: (leaf: Expr) => Fragment): Fragment {
  const inner = (item: Expr) => matchCondition(sql, item, base, ciCondition);
  switch (e.kind) {
    case 'and':
      return sql`(${e.items.map(inner).reduce((a, b) => sql`${a} and ${b}`)})`;
    case 'or':
      return sql`(${e.items.map(inner).reduce((a, b) => sql`${a} or ${b}`)})`;
    case 'not':
      return sql`(not coalesce(${inner(e.expr)}, false))`;
    case 'any':
      return sql`true`;
    case 'compare':
    case 'in':
    case 'exists':
    case 'text':
      return isChangeField(e.field) ? changeCondition(sql, e, base) : sql`coalesce(${ciCondition(e)}, false)`;
    default:
      return ciCondition(e);
  }
}
