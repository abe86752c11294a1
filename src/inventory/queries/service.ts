import { can, type Action, type Permission, type Principal, type Resource } from '../../platform/auth/principal.js';
import type { AppContext } from '../../context.js';
import { AppError, forbidden, unprocessable, validationFailed } from '../../platform/errors.js';
import { savedViewFor } from '../saved-views/service.js';
import { bindParams, type ParamValue } from './params.js';
import { decodeCursor, encodeCursor, type CursorBinding } from '../../platform/http/cursor.js';
import type { Expr, Field, Query } from '../../platform/query-language/ast.js';
import { excerptAt, parseQuery, QueryError, type QueryProblem } from '../../platform/query-language/parse.js';
import { resolveMoment } from '../../history/baselines/service.js';
import { checkQuery, MAX_PAGE } from './check.js';
import { DEFAULT_COLUMNS, fieldText } from './fields.js';
import { historyOf, type PredicateContext } from './predicates.js';
import { unsteady } from './standing.js';

export { standingCondition } from './standing.js';
import { knownRelationshipTypes } from './relationship-types.js';
import {
  changesBeside,
  countHidden,
  readAggregate,
  readPage,
  type AggregateRow,
  type ChangeRow,
  type PageRow,
  type SortKey,
} from './store.js';
import { guardCost, type CostReport } from './cost.js';
import { patternObjection } from './pattern-store.js';

export interface QueryInput {
  /** The query's text; or `saved_view_id`, a saved view of the Query view holding it. */
  query?: string;
  saved_view_id?: string;
  /** Values of the query's `$name` parameters. */
  params?: Record<string, ParamValue>;
  as_of?: string;
  compare_to?: string;
  limit?: number;
  cursor?: string;
  explain?: boolean;
  allow_scan?: boolean;
}

export type QueryAnswer =
  | {
      kind: 'rows';
      columns: string[];
      rows: PageRow[];
      changes: ChangeRow[] | undefined;
      nextCursor: string | null;
      hidden: number;
      asOf: string | null;
      tookMs: number;
    }
  | {
      kind: 'aggregate';
      fn: string;
      field: string | null;
      by: string[];
      groups: AggregateRow[];
      truncated: boolean;
      hidden: number;
      asOf: string | null;
      tookMs: number;
    }
  | { kind: 'explain'; plan: CostReport; asOf: string | null };

const GROUPS_LIMIT = 1000;
const CHANGES_PER_CI = 20;

/** The query's syntax or names are wrong: a 422 saying where and what was expected there. */
const invalidQuery = (problem: QueryProblem) =>
  new AppError(422, 'INVALID_QUERY', `The query is not valid ${problem.message}`, { ...problem });

function mentions(query: Query, test: (e: Expr) => boolean): boolean {
  const walk = (e: Expr): boolean =>
    test(e) || ((e.kind === 'and' || e.kind === 'or') && e.items.some(walk)) || (e.kind === 'not' && walk(e.expr));
  return query.path.some((step) => step.kind !== 'hop' && walk(step));
}

/** Reading history or walking relationships takes their permission too, as their own endpoints do. */
function assertMayRead(principal: Principal, query: Query): void {
  const needs: Permission[] = [];
  if (query.path.length > 1) needs.push('relationships:read');
  const history = mentions(query, (e) => e.kind === 'changed' || e.kind === 'archived');
  if (history || query.pipes.some((p) => p.kind === 'with_changes')) needs.push('changes:read');
  const missing = needs.find((permission) => {
    const [resource, action] = permission.split(':') as [Resource, Action];
    return !can(principal, resource, action);
  });
  if (missing) throw forbidden(`This query needs the ${missing} permission`, { required: missing });
}

/** The query's `matches` predicates, in the order written. */
function patternsOf(query: Query): Extract<Expr, { kind: 'text' }>[] {
  const found: Extract<Expr, { kind: 'text' }>[] = [];
  const walk = (e: Expr): void => {
    if (e.kind === 'and' || e.kind === 'or') e.items.forEach(walk);
    else if (e.kind === 'not') walk(e.expr);
    else if (e.kind === 'text' && e.op === 'matches') found.push(e);
  };
  query.path.forEach((step) => step.kind !== 'hop' && walk(step));
  return found;
}

/** A pattern PostgreSQL cannot read is an error at its position, found before the query runs. */
async function checkPatterns(app: AppContext, text: string, query: Query): Promise<void> {
  for (const e of patternsOf(query)) {
    const objection = await patternObjection(app.sql, e.value);
    if (objection === undefined) continue;
    const { line, column, offset } = e.at;
    throw new QueryError({
      message: `at line ${line}, column ${column}: the pattern is not a regular expression PostgreSQL reads (${objection})`,
      line,
      column,
      offset,
      excerpt: excerptAt(text, offset),
    });
  }
}

/** Parses, binds the parameters and checks; a failure is a 422 with the position. */
async function prepared(
  app: AppContext,
  tenantId: string,
  text: string,
  params: Readonly<Record<string, ParamValue>>,
  moment: Date,
  atMoment: boolean,
): Promise<Query> {
  try {
    const query = bindParams(text, parseQuery(text), params);
    const relationshipTypes = await knownRelationshipTypes(app, query, tenantId);
    checkQuery(text, query, { moment, atMoment, relationshipTypes });
    await checkPatterns(app, text, query);
    return query;
  } catch (error) {
    if (error instanceof QueryError) throw invalidQuery(error.problem);
    throw error;
  }
}

/** A standing match as stored (checked by standingMatch when it was written), parsed again to compile. */
export function parsedStandingMatch(text: string): Expr {
  return bindParams(text, parseQuery(text), {}).path[0] as Expr;
}

export interface StandingOptions {
  /** Fields of another vocabulary (a change rule's `change.*`): left to the caller, neither checked nor refused. */
  foreign?: (field: Field) => boolean;
}

/** The match with every comparison of a foreign field replaced by `*`, for the check of the rest. */
function withoutForeign(e: Expr, foreign: (field: Field) => boolean): Expr {
  switch (e.kind) {
    case 'and':
    case 'or':
      return { ...e, items: e.items.map((item) => withoutForeign(item, foreign)) };
    case 'not':
      return { ...e, expr: withoutForeign(e.expr, foreign) };
    case 'compare':
    case 'in':
    case 'exists':
    case 'text':
      return foreign(e.field) ? { kind: 'any', at: e.at } : e;
    default:
      return e;
  }
}

/**
 * A match of the query language that a check kept per CI stands on (quality rules, required
 * paths): one match, no hops or pipes, and nothing whose answer moves without a write to the CI
 * (history, `last_seen`, times relative to now). A failure is a 422 INVALID_QUERY with the position.
 */
export async function standingMatch(app: AppContext, text: string, options: StandingOptions = {}): Promise<Expr> {
  try {
    const bound = bindParams(text, parseQuery(text), {});
    const foreign = options.foreign;
    // the fields another vocabulary owns are its caller's to check: the rest is checked as any match
    const query = foreign
      ? { ...bound, path: bound.path.map((step) => (step.kind === 'hop' ? step : withoutForeign(step, foreign))) }
      : bound;
    checkQuery(text, query, { moment: app.now(), atMoment: false, relationshipTypes: [] });
    const [, hop] = query.path;
    const match = bound.path[0];
    const fail = (at: Expr['at'], message: string) =>
      new QueryError({
        message: `at line ${at.line}, column ${at.column}: ${message}`,
        line: at.line,
        column: at.column,
        offset: at.offset,
        excerpt: excerptAt(text, at.offset),
      });
    if (hop) throw fail(hop.at, 'a check is one match, without hops');
    if (query.pipes[0]) throw fail(query.pipes[0].at, 'a check is one match, without pipes');
    const objection = unsteady(match as Expr);
    if (objection) throw fail(objection.at, objection.message);
    await checkPatterns(app, text, query);
    return match as Expr;
  } catch (error) {
    if (error instanceof QueryError) throw invalidQuery(error.problem);
    throw error;
  }
}

const binding = (
  principal: Principal,
  input: QueryInput,
  asOf: string | null,
  sort: readonly SortKey[],
): CursorBinding => ({
  tenantId: principal.tenantId,
  reader: principal,
  scope: 'query',
  sort: sort.map((k) => `${fieldText(k.field)}:${k.desc ? 'desc' : 'asc'}`).join(',') || null,
  filters: {
    query: input.query ?? null,
    saved_view_id: input.saved_view_id ?? null,
    params: input.params ?? {},
    as_of: asOf,
    compare_to: input.compare_to ?? null,
  },
});

/**
 * The text to run: the request's, or a saved query's. A saved query opens as any saved view does
 * (the caller's own, or one shared in the tenant) and runs under the caller's rights, not its owner's.
 */
async function queryTextOf(app: AppContext, principal: Principal, input: QueryInput): Promise<string> {
  if (input.query !== undefined && input.saved_view_id !== undefined)
    throw validationFailed([
      { field: 'saved_view_id', location: 'body', message: 'give query or saved_view_id, not both' },
    ]);
  if (input.query !== undefined) return input.query;
  if (input.saved_view_id === undefined)
    throw validationFailed([{ field: 'query', location: 'body', message: 'is required (or saved_view_id)' }]);
  const view = await savedViewFor(app, principal, input.saved_view_id);
  const text = view.view === 'query' ? new URLSearchParams(view.query).get('q') : null;
  if (!text)
    throw unprocessable('The saved view holds no query: it is not a saved view of the Query view', {
      saved_view_id: view.id,
    });
  return text;
}

const defaultColumns = (): Field[] =>
  DEFAULT_COLUMNS.map((name) => ({ name, path: [], at: { offset: 0, line: 1, column: 1, end: 0 } }));

/**
 * Runs a query-language query: the inventory (now, or at `as_of`) narrowed by its matches, walked
 * by its hops, answered as a page of CIs or as groups. One transaction under CINV_QUERY_TIMEOUT;
 * everything inside the principal's data scopes.
 */
export async function runQuery(app: AppContext, principal: Principal, input: QueryInput): Promise<QueryAnswer> {
  const started = performance.now();
  const asOf = input.as_of === undefined ? undefined : await resolveMoment(app, principal, 'as_of', input.as_of);
  const compareTo =
    input.compare_to === undefined ? undefined : await resolveMoment(app, principal, 'compare_to', input.compare_to);
  const moment = asOf === undefined ? app.now() : new Date(asOf);
  const text = await queryTextOf(app, principal, input);
  const atMoment = asOf !== undefined || compareTo !== undefined;
  const query = await prepared(app, principal.tenantId, text, input.params ?? {}, moment, atMoment);
  assertMayRead(principal, query);
  return inTransaction(app, (tx) => {
    const run: Run = {
      app,
      tx,
      input,
      query,
      started,
      ctx: { sql: tx, principal, moment, asOf },
      then: compareTo ? { sql: tx, principal, moment: new Date(compareTo), asOf: compareTo } : undefined,
    };
    return query.pipes.some((p) => p.kind === 'aggregate') ? aggregateAnswer(run) : rowsAnswer(run);
  });
}

/** One query's run inside its transaction. */
interface Run {
  app: AppContext;
  tx: AppContext['sql'];
  input: QueryInput;
  query: Query;
  started: number;
  ctx: PredicateContext;
  then: PredicateContext | undefined;
}

async function aggregateAnswer({ app, tx, input, query, started, ctx, then }: Run): Promise<QueryAnswer> {
  const aggregate = query.pipes.find((p) => p.kind === 'aggregate')!;
  const shape = { fn: aggregate.fn, field: aggregate.field, by: aggregate.by, limit: GROUPS_LIMIT, compareTo: then };
  const asOf = ctx.asOf ?? null;
  const plan = await guardCost(app, tx, ctx, query, { aggregate: shape }, input.explain === true, input.allow_scan);
  if (input.explain) return { kind: 'explain', plan, asOf };
  const groups = await readAggregate(tx, ctx, query, shape);
  return {
    kind: 'aggregate',
    fn: aggregate.fn,
    field: aggregate.field ? fieldText(aggregate.field) : null,
    by: aggregate.by.map(fieldText),
    groups: groups.slice(0, GROUPS_LIMIT),
    truncated: groups.length > GROUPS_LIMIT,
    hidden: await countHidden(tx, ctx, query),
    asOf,
    tookMs: Math.round(performance.now() - started),
  };
}

async function rowsAnswer({ app, tx, input, query, started, ctx, then }: Run): Promise<QueryAnswer> {
  const columns = query.pipes.find((p) => p.kind === 'fields')?.fields ?? defaultColumns();
  const sort: SortKey[] = query.pipes.find((p) => p.kind === 'sort')?.keys ?? [
    { field: { name: 'name', path: [], at: query.at }, desc: false },
  ];
  const limit = Math.min(input.limit ?? query.pipes.find((p) => p.kind === 'limit')?.n ?? 100, MAX_PAGE);
  const asOf = ctx.asOf ?? null;
  const bound = binding(ctx.principal, input, asOf, sort);
  const after = input.cursor ? decodeCursor(app.config.secret, input.cursor, bound).key : undefined;
  const shape = {
    columns,
    sort,
    limit,
    compareTo: then,
    after: after ? { keys: after.slice(1) as (string | null)[], ciId: after[0] as string } : undefined,
  };
  const plan = await guardCost(app, tx, ctx, query, { page: shape }, input.explain === true, input.allow_scan);
  if (input.explain) return { kind: 'explain', plan, asOf };
  const rows = await readPage(tx, ctx, query, shape);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  const lastMatch = query.path[query.path.length - 1] as Expr;
  const changes = query.pipes.some((p) => p.kind === 'with_changes')
    ? await changesBeside(
        tx,
        ctx,
        page.map((r) => r.ci_id),
        historyOf(lastMatch),
        CHANGES_PER_CI,
      )
    : undefined;
  return {
    kind: 'rows',
    columns: columns.map(fieldText),
    rows: page,
    changes,
    nextCursor: rows.length > limit && last ? encodeCursor(app.config.secret, bound, [last.ci_id, ...last.keys]) : null,
    hidden: await countHidden(tx, ctx, query),
    asOf,
    tookMs: Math.round(performance.now() - started),
  };
}

/** One transaction under the query timeout; a timeout or a pattern PostgreSQL cannot read is a 422. */
async function inTransaction<T>(app: AppContext, work: (tx: AppContext['sql']) => Promise<T>): Promise<T> {
  try {
    return (await app.sql.begin(async (tx) => {
      await tx.unsafe(`set local statement_timeout = ${Math.max(1, Math.round(app.config.queryTimeoutMs))}`);
      return work(tx as unknown as AppContext['sql']);
    })) as T;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === '57014')
      throw unprocessable(
        `The query took longer than ${app.config.queryTimeoutMs} ms (CINV_QUERY_TIMEOUT): narrow it`,
        {
          reason: 'timeout',
          timeout_ms: app.config.queryTimeoutMs,
        },
      );
    if (code === '2201B')
      throw unprocessable(`A pattern is not a valid regular expression: ${(error as Error).message}`, {
        reason: 'invalid_pattern',
      });
    throw error;
  }
}

/** The most rows one CSV export of a query holds; past it, narrow the query or page the JSON form. */
export const CSV_ROW_CAP = 100_000;

/** The answer page after page for a CSV export: rows until the cap, or the one page of groups. */
export async function* queryPages(
  app: AppContext,
  principal: Principal,
  input: QueryInput,
): AsyncGenerator<Exclude<QueryAnswer, { kind: 'explain' }>> {
  let cursor = input.cursor;
  let sent = 0;
  for (;;) {
    const answer = await runQuery(app, principal, { ...input, cursor, explain: false, limit: MAX_PAGE });
    if (answer.kind === 'explain') return;
    const room = CSV_ROW_CAP - sent;
    if (answer.kind === 'rows' && answer.rows.length > room) answer.rows = answer.rows.slice(0, room);
    yield answer;
    if (answer.kind !== 'rows' || !answer.nextCursor) return;
    sent += answer.rows.length;
    if (sent >= CSV_ROW_CAP) return;
    cursor = answer.nextCursor;
  }
}
