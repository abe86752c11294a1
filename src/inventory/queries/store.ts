import type { Sql } from 'postgres';
import type { Expr, Field, HistoryExpr, Query } from '../../platform/query-language/ast.js';
import { changeColumnsOf, columnsOf, visibleTo, type Fragment } from '../../platform/auth/scope.js';
import { QUERY_FIELDS } from './fields.js';
import { cisOf, hiddenCte, matchCondition, matchInvariant, pathCtes, withCtes } from './path-store.js';
import { besideTheRow, historyRecords, type PredicateContext } from './predicates.js';

export interface SortKey {
  field: Field;
  desc: boolean;
}

/** What the CIs of an answer page are read with. */
export interface PageShape {
  columns: readonly Field[];
  sort: readonly SortKey[];
  limit: number;
  /** The sort values and CI id of the last row of the previous page. */
  after?: { keys: (string | null)[]; ciId: string };
  /** Answer what matches now (or at `as_of`) and did not at this moment. */
  compareTo?: PredicateContext;
}

export interface PageRow {
  ci_id: string;
  values: unknown[];
  keys: (string | null)[];
}

/** A field's value on the row `row`: the column, or the JSON at a path. */
function valueOf(ctx: PredicateContext, row: string, field: Field): Fragment {
  const { sql } = ctx;
  const def = QUERY_FIELDS[field.name]!;
  const beside = besideTheRow(ctx, row, def);
  if (beside) return beside;
  if (def.kind === 'json' && field.path.length > 0)
    return sql`(${sql(row)}.${sql(field.name)} #> ${field.path}::text[])`;
  return sql`${sql(row)}.${sql(def.column)}`;
}

/** A sort key that is never null (a missing value sorts as the smallest), so a keyset position is exact. */
function sortValue(ctx: PredicateContext, row: string, field: Field): Fragment {
  const { sql } = ctx;
  const value = valueOf(ctx, row, field);
  switch (QUERY_FIELDS[field.name]!.kind) {
    case 'json':
      // inside an array jsonb orders by kind as documented, null first; a bare empty array sorts below null
      return sql`jsonb_build_array(coalesce(${value}, 'null'::jsonb))`;
    case 'timestamp':
      return sql`coalesce(${value}, '-infinity'::timestamptz)`;
    case 'bigint':
      return sql`coalesce(${value}, -1)`;
    case 'uuid':
      // a CI that observes no host has no identity_id
      return sql`coalesce(${value}, '00000000-0000-0000-0000-000000000000'::uuid)`;
    default:
      return sql`coalesce(${value}, '')`;
  }
}

/** A keyset position's value, bound as its key's type. */
function boundKey(ctx: PredicateContext, field: Field, text: string | null): Fragment {
  const { sql } = ctx;
  switch (QUERY_FIELDS[field.name]!.kind) {
    // bound as text: a parameter the server types as jsonb or timestamptz is serialised by the client
    // (a JSON string, a JavaScript date), which is not the key's text
    case 'json':
      return sql`${text}::text::jsonb`;
    case 'timestamp':
      return sql`${text}::text::timestamptz`;
    case 'bigint':
      return sql`${text}::bigint`;
    case 'uuid':
      return sql`${text}::uuid`;
    default:
      return sql`${text}::text`;
  }
}

/** Rows after the position, in the sort's order whatever each key's direction: an `or` chain. */
function afterPosition(ctx: PredicateContext, row: string, shape: PageShape): Fragment {
  const { sql } = ctx;
  const after = shape.after!;
  let condition: Fragment = sql`${sql(row)}.ci_id > ${after.ciId}::uuid`;
  for (let i = shape.sort.length - 1; i >= 0; i--) {
    const { field, desc } = shape.sort[i]!;
    const key = sortValue(ctx, row, field);
    const value = boundKey(ctx, field, after.keys[i] ?? null);
    condition = sql`(${key} ${desc ? sql`<` : sql`>`} ${value} or (${key} = ${value} and ${condition}))`;
  }
  return condition;
}

function orderBy(ctx: PredicateContext, row: string, sort: readonly SortKey[]): Fragment {
  const { sql } = ctx;
  const keys = sort.map(({ field, desc }) => sql`${sortValue(ctx, row, field)} ${desc ? sql`desc` : sql`asc`}`);
  return [...keys, sql`${sql(row)}.ci_id asc`].reduce((a, b) => sql`${a}, ${b}`);
}

/** The answer's CIs as a condition on `row`, and the CTEs it needs; a path without hops needs none. */
function answerOf(ctx: PredicateContext, query: Query, shape: Pick<PageShape, 'compareTo'>) {
  const { sql } = ctx;
  const simple = query.path.length === 1 && !shape.compareTo;
  if (simple) {
    const match = query.path[0] as Expr;
    return {
      ctes: [] as Fragment[],
      within: (row: string) => matchCondition(ctx, row, match),
      invariant: matchInvariant(ctx, match),
    };
  }
  const now = pathCtes(ctx, query);
  const ctes = [...now.ctes];
  let ids = sql`select id from ${sql(now.answer)}`;
  if (shape.compareTo) {
    const then = pathCtes(shape.compareTo, query, 't_');
    ctes.push(...then.ctes);
    ids = sql`${ids} except select id from ${sql(then.answer)}`;
  }
  ctes.push(sql`matched as (${ids})`);
  const within = (row: string) => sql`${sql(row)}.ci_id in (select id from matched)`;
  return { ctes, within, invariant: within };
}

/** The statement of one answer page: `limit + 1` rows, so the caller knows whether more follow. */
export function pageStatement(ctx: PredicateContext, query: Query, shape: PageShape): Fragment {
  const { sql } = ctx;
  const { ctes, within, invariant } = answerOf(ctx, query, shape);
  const where = (row: string) =>
    shape.after ? sql`${within(row)} and ${afterPosition(ctx, row, shape)}` : within(row);
  const columns = shape.columns.map((field, i) => sql`${valueOf(ctx, 'ci', field)} as ${sql(`c${i}`)}`);
  const keys = shape.sort.map(({ field }, i) => sql`(${sortValue(ctx, 'ci', field)})::text as ${sql(`k${i}`)}`);
  const select = [sql`ci.ci_id`, ...columns, ...keys].reduce((a, b) => sql`${a}, ${b}`);
  const body = sql`select ${select} from ${cisOf(ctx, 'ci', where, invariant)} ci
    order by ${orderBy(ctx, 'ci', shape.sort)} limit ${shape.limit + 1}`;
  return ctes.length > 0 ? sql`${withCtes(sql, ctes)} ${body}` : body;
}

export async function readPage(tx: Sql, ctx: PredicateContext, query: Query, shape: PageShape): Promise<PageRow[]> {
  const rows = await tx<Record<string, unknown>[]>`${pageStatement(ctx, query, shape)}`;
  return rows.map((row) => ({
    ci_id: row.ci_id as string,
    values: shape.columns.map((_, i) => row[`c${i}`]),
    keys: shape.sort.map((_, i) => row[`k${i}`] as string | null),
  }));
}

/** How many CIs hops reached outside the principal's data scopes (0 for a principal who sees all). */
export async function countHidden(tx: Sql, ctx: PredicateContext, query: Query): Promise<number> {
  const { sql } = ctx;
  const hidden = hiddenCte(ctx, query);
  if (!hidden) return 0;
  const [row] = await tx<
    { hidden: number }[]
  >`${withCtes(sql, [...pathCtes(ctx, query).ctes, hidden])} select hidden from hidden`;
  return row?.hidden ?? 0;
}

export interface AggregateShape {
  fn: 'count' | 'min' | 'max' | 'sum' | 'avg';
  field: Field | null;
  by: readonly Field[];
  limit: number;
  compareTo?: PredicateContext;
}

/** A number at a JSON path (null when it holds no number), or a numeric column. */
function numberOf(ctx: PredicateContext, row: string, field: Field): Fragment {
  const { sql } = ctx;
  if (QUERY_FIELDS[field.name]!.kind !== 'json') return sql`${valueOf(ctx, row, field)}::numeric`;
  const node = valueOf(ctx, row, field);
  return sql`(case when jsonb_typeof(${node}) = 'number' then (${node} #>> '{}')::numeric end)`;
}

/** A group's key: a column as it is, a JSON value as its text. */
function groupValue(ctx: PredicateContext, row: string, field: Field): Fragment {
  const { sql } = ctx;
  if (QUERY_FIELDS[field.name]!.kind === 'json') return sql`(${sql(row)}.${sql(field.name)} #>> ${field.path}::text[])`;
  return valueOf(ctx, row, field);
}

/** The CI columns the write path keeps counts by (ci_counts, sql/0029 and 0035). */
const COUNTED = new Set(['ci_type', 'namespace', 'status', 'scope_id', 'source_id']);

/** Whether a match names counted columns alone (with any operator), and no history. */
function onCounted(e: Expr): boolean {
  switch (e.kind) {
    case 'and':
    case 'or':
      return e.items.every(onCounted);
    case 'not':
      return onCounted(e.expr);
    case 'any':
      return true;
    case 'compare':
    case 'in':
    case 'exists':
    case 'text':
      return COUNTED.has(e.field.name);
    default:
      return false;
  }
}

const joined = (sql: Sql, parts: readonly Fragment[]) => parts.reduce((a, b) => sql`${a}, ${b}`);

/**
 * `count` (by counted columns) of the present inventory matched on counted columns alone: from
 * the counts the write path keeps and the deltas not folded in yet, exact, a few rows per instance,
 * type and namespace. Counting the CIs themselves reads every one (1 s at 1 000 000 CIs).
 */
function countedStatement(ctx: PredicateContext, query: Query, shape: AggregateShape): Fragment | undefined {
  const { sql, principal } = ctx;
  const match = query.path[0] as Expr;
  const counted =
    ctx.asOf === undefined &&
    !shape.compareTo &&
    query.path.length === 1 &&
    shape.fn === 'count' &&
    shape.by.every((field) => COUNTED.has(field.name) && field.path.length === 0) &&
    onCounted(match);
  if (!counted) return undefined;
  const keys = shape.by.map((_, i) => sql`${sql(`g${i}`)}`);
  const part = (table: string, n: string) => {
    const groups = shape.by.map((field, i) => sql`ci.${sql(QUERY_FIELDS[field.name]!.column)} as ${keys[i]!}`);
    return sql`select ${joined(sql, [...groups, sql`ci.${sql(n)} as n`])} from ${sql(table)} ci
      where ${visibleTo(sql, principal, columnsOf('ci'))} and ${matchCondition(ctx, 'ci', match)}`;
  };
  const select = joined(sql, [...keys, sql`coalesce(sum(n), 0)::int as count`, sql`null::numeric as value`]);
  const grouped = keys.length > 0 ? sql`group by ${joined(sql, keys)} having sum(n) > 0` : sql``;
  const order = joined(sql, [sql`count desc`, ...keys.map((key) => sql`${key} asc nulls first`)]);
  return sql`select ${select} from (${part('ci_counts', 'cis')} union all ${part('ci_count_deltas', 'delta')}) counted
    ${grouped} order by ${order} limit ${shape.limit + 1}`;
}

/** The statement of `count`, `count by …` or `min/max/sum/avg(…) by …`: the largest groups first. */
export function aggregateStatement(ctx: PredicateContext, query: Query, shape: AggregateShape): Fragment {
  const { sql } = ctx;
  const counted = countedStatement(ctx, query, shape);
  if (counted) return counted;
  const { ctes, within, invariant } = answerOf(ctx, query, shape);
  const groups = shape.by.map((field, i) => sql`${groupValue(ctx, 'ci', field)} as ${sql(`g${i}`)}`);
  const measure = shape.field
    ? sql`${sql.unsafe(shape.fn)}(${numberOf(ctx, 'ci', shape.field)}) as value`
    : sql`null::numeric as value`;
  const select = [...groups, sql`count(*)::int as count`, measure].reduce((a, b) => sql`${a}, ${b}`);
  const groupBy = shape.by.length > 0 ? sql.unsafe(`group by ${shape.by.map((_, i) => i + 1).join(', ')}`) : sql``;
  const order = shape.field ? sql`value desc nulls last, count desc` : sql`count desc`;
  const then = shape.by.map((_, i) => sql`${sql(`g${i}`)} asc nulls first`);
  const body = sql`select ${select} from ${cisOf(ctx, 'ci', within, invariant)} ci ${groupBy}
    order by ${[order, ...then].reduce((a, b) => sql`${a}, ${b}`)} limit ${shape.limit + 1}`;
  return ctes.length > 0 ? sql`${withCtes(sql, ctes)} ${body}` : body;
}

export interface AggregateRow {
  groups: (string | null)[];
  count: number;
  value: string | null;
}

export async function readAggregate(
  tx: Sql,
  ctx: PredicateContext,
  query: Query,
  shape: AggregateShape,
): Promise<AggregateRow[]> {
  const rows = await tx<Record<string, unknown>[]>`${aggregateStatement(ctx, query, shape)}`;
  return rows.map((row) => ({
    groups: shape.by.map((_, i) => (row[`g${i}`] ?? null) as string | null),
    count: row.count as number,
    value: (row.value ?? null) as string | null,
  }));
}

export interface ChangeRow {
  ci_id: string;
  id: string;
  change_type: string;
  changed_at: Date;
  changes: unknown;
}

/** The change records beside each CI of a page: those the query's history predicates matched, else its latest. */
export function changesBeside(
  tx: Sql,
  ctx: PredicateContext,
  ciIds: readonly string[],
  history: readonly HistoryExpr[],
  perCi: number,
): Promise<ChangeRow[]> {
  const { sql, principal } = ctx;
  if (ciIds.length === 0) return Promise.resolve([]);
  const matched = history.length > 0 ? historyRecords(ctx, history) : sql`true`;
  return tx<ChangeRow[]>`
    select cr.ci_id, cr.id::text as id, cr.change_type, cr.changed_at, cr.changes
    from unnest(${ciIds as string[]}::uuid[]) as p(ci_id)
    cross join lateral (
      select cr.* from change_records cr
      where cr.tenant_id = ${principal.tenantId} and cr.ci_id = p.ci_id and ${visibleTo(sql, principal, changeColumnsOf('cr'))}
        and cr.changes <> '[]'::jsonb and ${matched}
        ${ctx.asOf ? sql`and cr.changed_at <= ${ctx.asOf}::text::timestamptz` : sql``}
      order by cr.changed_at desc, cr.id desc limit ${perCi}) cr
    order by cr.ci_id, cr.changed_at desc, cr.id desc`;
}

/** The plan PostgreSQL would run for a statement, without running it. */
export async function planOf(tx: Sql, statement: Fragment): Promise<unknown> {
  const [row] = await tx<{ 'QUERY PLAN': unknown }[]>`explain (format json) ${statement}`;
  return row?.['QUERY PLAN'];
}
