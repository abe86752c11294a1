import type { Sql } from 'postgres';
import type { Expr, Field, HistoryExpr, TextOp, Value } from '../../platform/query-language/ast.js';
import type { Principal } from '../../platform/auth/principal.js';
import { and, changeColumnsOf, or, visibleTo, type Fragment } from '../../platform/auth/scope.js';
import { asJson } from '../../platform/db/database.js';
import { escapeLike } from '../../platform/query/filters.js';
import { resolveTime, valueText } from './check.js';
import { QUERY_FIELDS, type FieldDef } from './fields.js';

/** What a predicate is compiled against. */
export interface PredicateContext {
  sql: Sql;
  principal: Principal;
  /** The moment relative times count back from, and where history windows end: `as_of`, or now. */
  moment: Date;
  /** Set when the query reads the inventory at a moment: history then ends there. */
  asOf: string | undefined;
}

const NUMBER = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

const moment = (ctx: PredicateContext, v: Value) =>
  resolveTime(v.type === 'time' ? v : { type: 'time', text: valueText(v), relative: null }, ctx.moment)!;

/** `{"a": {"b": value}}` for path [a, b]: equality through the jsonb GIN index (`@>`). */
const nest = (path: readonly string[], value: unknown): unknown =>
  path.reduceRight<unknown>((inner, key) => ({ [key]: inner }), value);

/**
 * A field kept beside the CI's row rather than in it: `last_seen`, and `identity_id` (the host
 * identity the CI observes: now, or at the moment through the identity's links); undefined for
 * the row's own columns.
 */
export function besideTheRow(ctx: PredicateContext, row: string, def: FieldDef): Fragment | undefined {
  const { sql } = ctx;
  if (def.column === 'last_seen')
    return sql`(select ls.last_seen from ci_last_seen ls where ls.ci_id = ${sql(row)}.ci_id)`;
  if (def.column !== 'identity_id') return undefined;
  if (ctx.asOf === undefined)
    return sql`(select o.identity_id from identity_observations o where o.ci_id = ${sql(row)}.ci_id and o.kind = 'host')`;
  const at = sql`${ctx.asOf}::text::timestamptz`;
  return sql`(select l.identity_id from identity_links l
    where l.ci_id = ${sql(row)}.ci_id and l.kind = 'host' and l.linked_from <= ${at} and (l.linked_until is null or l.linked_until > ${at})
    limit 1)`;
}

/** The column of `field` on the row `row`. */
function column(ctx: PredicateContext, row: string, def: FieldDef): Fragment {
  const { sql } = ctx;
  return besideTheRow(ctx, row, def) ?? sql`${sql(row)}.${sql(def.column)}`;
}

/** How a value binds for a column of its kind. */
function bound(ctx: PredicateContext, def: FieldDef, v: Value): Fragment {
  const { sql } = ctx;
  switch (def.kind) {
    case 'timestamp':
      return sql`${moment(ctx, v)}::text::timestamptz`;
    case 'uuid':
      return sql`${valueText(v)}::uuid`;
    case 'bigint':
      return sql`${valueText(v)}::bigint`;
    default:
      return sql`${valueText(v)}::text`;
  }
}

function likeOf(op: TextOp, text: string): string {
  return op === 'starts' || op === 'istarts' ? `${escapeLike(text)}%` : `%${escapeLike(text)}%`;
}

function textMatch(ctx: PredicateContext, target: Fragment, op: TextOp, text: string): Fragment {
  const { sql } = ctx;
  if (op === 'matches') return sql`${target} ~ ${text}`;
  return op === 'icontains' || op === 'istarts'
    ? sql`${target} ilike ${likeOf(op, text)}`
    : sql`${target} like ${likeOf(op, text)}`;
}

/** A key as an SQL/JSON path string literal's content: quotes, backslashes and control characters escaped. */
const escapedKey = (key: string): string =>
  [...key]
    .map((c) =>
      c === '"' || c === '\\' ? `\\${c}` : c < ' ' ? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}` : c,
    )
    .join('');

/** A path segment as SQL/JSON path text: an index, or a quoted key. */
const jsonPathStep = (segment: string): string =>
  /^\d+$/.test(segment) ? `[${segment}]` : `."${escapedKey(segment)}"`;

/**
 * `path exists` where `*` segments stand for every element of an array: each element holds the
 * rest of the path (not JSON null), and there is at least one. As an SQL/JSON path filter, nested
 * for each `*`, relative to `base` (`$` the document, `@` the element).
 */
function everyElement(base: string, path: readonly string[], wildcards: ReadonlySet<number>, from: number): string {
  const at = path.findIndex((_, i) => i >= from && wildcards.has(i));
  if (at < 0) return `exists(${base}${path.slice(from).map(jsonPathStep).join('')} ? (@ != null))`;
  const elements = `${base}${path.slice(from, at).map(jsonPathStep).join('')}[*]`;
  return `(exists(${elements}) && !exists(${elements} ? (!(${everyElement('@', path, wildcards, at + 1)}))))`;
}

/** A JSON path's predicates: equality by containment, order by number when both sides are numbers. */
function jsonPredicate(ctx: PredicateContext, row: string, field: Field, e: Expr): Fragment {
  const { sql } = ctx;
  const doc = sql`${sql(row)}.${sql(field.name)}`;
  const path = field.path;
  const node = sql`(${doc} #> ${path}::text[])`;
  const text = sql`(${doc} #>> ${path}::text[])`;
  const equals = (v: Value): Fragment => {
    const literal = valueText(v);
    const candidates: unknown[] = [literal];
    if (v.type === 'number') candidates.push(Number(literal));
    if (v.type === 'string' && !v.quoted && (literal === 'true' || literal === 'false'))
      candidates.push(literal === 'true');
    if (v.type === 'string' && !v.quoted && literal === 'null') candidates.push(null);
    // an index in the path cannot be written as containment
    if (path.some((segment) => /^\d+$/.test(segment))) return sql`${text} = ${literal}`;
    return or(
      sql,
      candidates.map((c) => sql`${doc} @> ${sql.json(asJson(nest(path, c)))}::jsonb`),
    );
  };
  switch (e.kind) {
    case 'compare': {
      if (e.op === '=') return equals(e.value);
      if (e.op === '!=') return sql`not coalesce(${equals(e.value)}, false)`;
      const cmp = sql.unsafe(e.op);
      const literal = valueText(e.value);
      return e.value.type === 'number' || (NUMBER.test(literal) && e.value.type !== 'string')
        ? sql`(case when jsonb_typeof(${node}) = 'number' then ${text}::numeric end) ${cmp} ${literal}::numeric`
        : sql`${text} ${cmp} ${literal}`;
    }
    case 'in': {
      const any = or(sql, e.values.map(equals));
      return e.negated ? sql`not coalesce(${any}, false)` : any;
    }
    case 'exists': {
      const every = field.wildcards ? `$ ? (${everyElement('$', path, new Set(field.wildcards), 0)})` : undefined;
      const present = every
        ? sql`jsonb_path_exists(${doc}, ${every}::jsonpath)`
        : sql`(${node} is not null and jsonb_typeof(${node}) <> 'null')`;
      return e.negated ? sql`not ${present}` : present;
    }
    case 'text':
      return textMatch(ctx, text, e.op, e.value);
    default:
      throw new Error(`not a field predicate: ${e.kind}`);
  }
}

function fieldPredicate(ctx: PredicateContext, row: string, e: Expr & { field: Field }): Fragment {
  const { sql } = ctx;
  const def = QUERY_FIELDS[e.field.name]!;
  if (def.kind === 'json') return jsonPredicate(ctx, row, e.field, e);
  const col = column(ctx, row, def);
  switch (e.kind) {
    case 'compare':
      if (e.op === '!=') return sql`${col} is distinct from ${bound(ctx, def, e.value)}`;
      return sql`${col} ${sql.unsafe(e.op)} ${bound(ctx, def, e.value)}`;
    case 'in': {
      const values = or(
        sql,
        e.values.map((v) => sql`${col} = ${bound(ctx, def, v)}`),
      );
      return e.negated ? sql`not coalesce(${values}, false)` : values;
    }
    case 'exists':
      return e.negated ? sql`${col} is null` : sql`${col} is not null`;
    case 'text':
      return textMatch(ctx, sql`${col}::text`, e.op, e.value);
    default:
      throw new Error(`not a field predicate: ${e.kind}`);
  }
}

/** The changed fields a `changed PATH` names: the path, what lies under it, or a field above it recorded whole. */
function changedField(ctx: PredicateContext, field: Field): Fragment {
  const { sql } = ctx;
  const parts = [field.name, ...field.path];
  const above = parts.map((_, i) => parts.slice(0, i + 1).join('.'));
  const path = parts.join('.');
  // the fields joined into one text hold the path wherever a field does: a test as cheap as the
  // column itself, so that the search of the fields runs for the few records that may hold it (a
  // day of 167 000 records searched one by one: 240 ms of 320)
  return sql`(cr.changed_fields && ${above}::text[]
    or (array_to_string(cr.changed_fields, ',') like ${`%${escapeLike(path)}.%`}
        and exists (select 1 from unnest(cr.changed_fields) as f where f like ${`${escapeLike(path)}.%`})))`;
}

/** The window of a history predicate, cut at the moment a query at a moment reads. */
function windowOf(ctx: PredicateContext, e: HistoryExpr, column: Fragment): Fragment[] {
  const { sql } = ctx;
  const parts: Fragment[] = [];
  if (e.since) parts.push(sql`${column} >= ${resolveTime(e.since, ctx.moment)!}::text::timestamptz`);
  if (e.until) parts.push(sql`${column} < ${resolveTime(e.until, ctx.moment)!}::text::timestamptz`);
  if (ctx.asOf !== undefined) parts.push(sql`${column} <= ${ctx.asOf}::text::timestamptz`);
  return parts;
}

/** `changed`, `created`, `archived`: the CI's own change records (or its creation), in the principal's scopes. */
function historyPredicate(ctx: PredicateContext, row: string, e: HistoryExpr): Fragment {
  const { sql, principal } = ctx;
  const r = sql(row);
  if (e.kind === 'created') return and(sql, [sql`true`, ...windowOf(ctx, e, sql`${r}.created_at`)]);
  const conditions = [
    sql`cr.tenant_id = ${r}.tenant_id`,
    sql`cr.ci_id = ${r}.ci_id`,
    visibleTo(sql, principal, changeColumnsOf('cr')),
    ...windowOf(ctx, e, sql`cr.changed_at`),
  ];
  if (e.kind === 'archived') conditions.push(sql`cr.change_type = 'DELETED'`);
  else if (e.kind === 'changed') {
    conditions.push(sql`cr.changes <> '[]'::jsonb`);
    if (e.changeTypes) conditions.push(sql`cr.change_type = any(${e.changeTypes}::text[])`);
    if (e.field) conditions.push(changedField(ctx, e.field));
  }
  return sql`exists (select 1 from change_records cr where ${and(sql, conditions)})`;
}

/** The SQL condition of one match on the row `row`. */
export function predicate(ctx: PredicateContext, row: string, e: Expr): Fragment {
  const { sql } = ctx;
  switch (e.kind) {
    case 'and':
      return sql`(${and(
        sql,
        e.items.map((item) => predicate(ctx, row, item)),
      )})`;
    case 'or':
      return or(
        sql,
        e.items.map((item) => predicate(ctx, row, item)),
      );
    case 'not':
      // a CI without the field is one the predicate does not hold for
      return sql`not coalesce(${predicate(ctx, row, e.expr)}, false)`;
    case 'any':
      return sql`true`;
    case 'changed':
    case 'created':
    case 'archived':
      return historyPredicate(ctx, row, e);
    default:
      return fieldPredicate(ctx, row, e);
  }
}

/** Fields no write to a CI changes: its id, and when it was created (the way back never restores them). */
const INVARIANT_FIELDS = new Set(['ci_id', 'created_at']);
/** Fields ci_versions keeps (sql/0022): their values at a moment are one indexed row away. */
const VERSIONED_FIELDS = new Set(['name', 'namespace', 'ci_type', 'status', 'scope_id']);

/**
 * `e` with every predicate on a field outside `known` left open: null for open, which counts as
 * true where `holds` (so the result holds whenever `e` does) and as false under a `not` (so it
 * holds only when `e` does). History predicates read the CI's own records, which no write changes.
 */
function relaxed(
  ctx: PredicateContext,
  row: string,
  e: Expr,
  holds: boolean,
  known: ReadonlySet<string>,
): Fragment | null {
  const { sql } = ctx;
  switch (e.kind) {
    case 'and':
    case 'or': {
      const parts = e.items.map((item) => relaxed(ctx, row, item, holds, known));
      const join = (known: Fragment[]) => (e.kind === 'and' ? sql`(${and(sql, known)})` : or(sql, known));
      // where an open part counts as the join's neutral value it drops out; elsewhere it decides the whole
      if ((e.kind === 'and') === holds) {
        const known = parts.filter((part): part is Fragment => part !== null);
        return known.length > 0 ? join(known) : null;
      }
      return parts.some((part) => part === null) ? null : join(parts as Fragment[]);
    }
    case 'not': {
      const inner = relaxed(ctx, row, e.expr, !holds, known);
      return inner === null ? null : sql`not coalesce(${inner}, false)`;
    }
    case 'any':
      return null;
    case 'changed':
    case 'created':
    case 'archived':
      return historyPredicate(ctx, row, e);
    default:
      return known.has(e.field.name) ? fieldPredicate(ctx, row, e) : null;
  }
}

/** Whether `e` names a field ci_versions keeps. */
function namesVersioned(e: Expr): boolean {
  if (e.kind === 'and' || e.kind === 'or') return e.items.some(namesVersioned);
  if (e.kind === 'not') return namesVersioned(e.expr);
  const onField = e.kind === 'compare' || e.kind === 'in' || e.kind === 'exists' || e.kind === 'text';
  return onField && VERSIONED_FIELDS.has(e.field.name);
}

/**
 * A condition that every CI matching the match `e` (with its active default) at the moment
 * `ctx.asOf` meets as it is now: `e` read from what no write changes (the CI's id, its creation,
 * its history) and, when `e` names them, from the name, namespace, type, instance and status its
 * version then held (ci_versions). Undefined when `e` names none of these. A read of the past
 * narrows the CIs written since by it before taking them back.
 */
export function invariantCondition(ctx: PredicateContext, row: string, e: Expr): Fragment | undefined {
  const { sql } = ctx;
  const parts: Fragment[] = [];
  // the version's condition below holds all of this one (on the version's row, same CI): asked
  // twice, the query bench's history as_of a day back read its day of change records twice
  const asOf = ctx.asOf;
  const versioned = asOf !== undefined && namesVersioned(e);
  const direct = versioned ? null : relaxed(ctx, row, e, true, INVARIANT_FIELDS);
  if (direct) parts.push(direct);
  if (versioned) {
    const known = new Set([...INVARIANT_FIELDS, ...VERSIONED_FIELDS]);
    const then = relaxed(ctx, 'v', e, true, known) ?? sql`true`;
    const active = namesStatus(e) ? sql`` : sql`and v.status = 'active'`;
    const moment = sql`${asOf}::text::timestamptz`;
    parts.push(sql`exists (select 1 from ci_versions v
      where v.tenant_id = ${ctx.principal.tenantId} and v.ci_id = ${sql(row)}.ci_id and v.valid_from <= ${moment} and v.valid_to > ${moment} ${active} and ${then})`);
  }
  return parts.length > 0 ? and(sql, parts) : undefined;
}

/** Whether a match names the status (or archivals) itself; otherwise it reads the active inventory. */
export function namesStatus(e: Expr): boolean {
  switch (e.kind) {
    case 'and':
    case 'or':
      return e.items.some(namesStatus);
    case 'not':
      return namesStatus(e.expr);
    case 'archived':
      return true;
    case 'compare':
    case 'in':
    case 'exists':
    case 'text':
      return e.field.name === 'status';
    default:
      return false;
  }
}

/** The history predicates of a match that hold positively (not under a `not`): what `with changes` shows. */
export function historyOf(e: Expr): HistoryExpr[] {
  switch (e.kind) {
    case 'and':
    case 'or':
      return e.items.flatMap(historyOf);
    case 'changed':
    case 'archived':
      return [e];
    default:
      return [];
  }
}

/** The records of `historyOf`, as a condition on a change record `cr` of the CI. */
export function historyRecords(ctx: PredicateContext, history: readonly HistoryExpr[]): Fragment {
  const { sql } = ctx;
  return or(
    sql,
    history.map((e) => {
      const parts = [...windowOf(ctx, e, sql`cr.changed_at`)];
      if (e.kind === 'archived') parts.push(sql`cr.change_type = 'DELETED'`);
      if (e.kind === 'changed') {
        if (e.changeTypes) parts.push(sql`cr.change_type = any(${e.changeTypes}::text[])`);
        if (e.field) parts.push(changedField(ctx, e.field));
      }
      return sql`(${and(sql, parts)})`;
    }),
  );
}
