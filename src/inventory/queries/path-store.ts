import type { Sql } from 'postgres';
import type { Expr, Hop, Query } from '../../platform/query-language/ast.js';
import { seesAllData } from '../../platform/auth/principal.js';
import { and, columnsOf, visibleTo, type Fragment } from '../../platform/auth/scope.js';
import { cisAt } from '../../history/records/as-of.js';
import { edges as relationshipRows } from '../relationships/edges.js';
import { invariantCondition, namesStatus, predicate, type PredicateContext } from './predicates.js';
import { SAME_IDENTITY } from './relationship-types.js';

/**
 * The CIs a query reads, as a FROM item with configuration_items' columns: now, or as they were at
 * `as_of` (the time machine's exact state), always inside the principal's data scopes (at a moment:
 * then and now). `where` narrows each part before anything is merged, so its indexes serve.
 * `invariant`, implied by `where`, is a condition on the CI as it is now that every CI meeting
 * `where` at the moment meets (its id, creation and history, its version then): it narrows the CIs
 * written since before they are taken back, which `where` can only do after (the query bench's day
 * of writes to 100 000 CIs was 16 700 rows taken back, 1.2 s, to find 831 deployments).
 */
export function cisOf(
  ctx: PredicateContext,
  alias: string,
  where: (row: string) => Fragment,
  invariant?: (row: string) => Fragment | undefined,
): Fragment {
  const { sql, principal } = ctx;
  const visible = (row: string) => visibleTo(sql, principal, columnsOf(row));
  if (ctx.asOf === undefined) {
    return sql`(select ${sql(alias)}.* from configuration_items ${sql(alias)} where ${visible(alias)} and ${where(alias)})`;
  }
  // the rows read as they are (under `alias`) meet `where` itself, which implies the invariant
  const key = (row: string) => (row === alias ? undefined : invariant?.(row)) ?? sql`true`;
  return cisAt(sql, ctx.asOf, alias, { visible, where: (row) => where(row), key });
}

/** A match's invariant part (see cisOf), and the CI's id when the match is about one CI. */
export function matchInvariant(
  ctx: PredicateContext,
  e: Expr,
  id?: (row: string) => Fragment,
): (row: string) => Fragment | undefined {
  return (row) => {
    const parts = [id?.(row), invariantCondition(ctx, row, e)].filter((p): p is Fragment => p !== undefined);
    return parts.length > 0 ? and(ctx.sql, parts) : undefined;
  };
}

/** A match's condition, with the active inventory as its default when it names no status. */
export function matchCondition(ctx: PredicateContext, row: string, e: Expr): Fragment {
  const { sql } = ctx;
  const condition = predicate(ctx, row, e);
  return namesStatus(e) ? condition : sql`${sql(row)}.status = 'active' and ${condition}`;
}

/** The CTE names of a path compiled under a prefix (two paths, now and then, live in one statement). */
const stage = (prefix: string, i: number) => `${prefix}s${i}`;
const walk = (prefix: string, i: number) => `${prefix}w${i}`;

/** One step of a walk from `w`: the CIs one relationship away in the hop's direction, of its types. */
function step(ctx: PredicateContext, hop: Hop): Fragment {
  const { sql } = ctx;
  const rows = relationshipRows(sql, ctx.asOf);
  const named = hop.types?.map((t) => t.name);
  const stored = named?.filter((t) => t !== SAME_IDENTITY);
  if (named?.includes(SAME_IDENTITY)) {
    const identity = sameIdentity(ctx);
    if (stored!.length === 0) return identity;
    return sql`${identity} union all ${relationshipStep(ctx, hop, rows, stored!)}`;
  }
  return relationshipStep(ctx, hop, rows, named);
}

/** The other observations of the identity the CI `w.id` observes (at the moment: through the links then). */
function sameIdentity(ctx: PredicateContext): Fragment {
  const { sql } = ctx;
  if (ctx.asOf === undefined)
    return sql`select o2.ci_id as far from identity_observations o1
      join identity_observations o2 on o2.identity_id = o1.identity_id and o2.ci_id <> o1.ci_id
      where o1.ci_id = w.id`;
  const at = sql`${ctx.asOf}::text::timestamptz`;
  const open = (l: string) =>
    sql`${sql(l)}.linked_from <= ${at} and (${sql(l)}.linked_until is null or ${sql(l)}.linked_until > ${at})`;
  return sql`select l2.ci_id as far from identity_links l1
    join identity_links l2 on l2.identity_id = l1.identity_id and l2.ci_id <> l1.ci_id and ${open('l2')}
    where l1.ci_id = w.id and ${open('l1')}`;
}

function relationshipStep(ctx: PredicateContext, hop: Hop, rows: Fragment, types: string[] | undefined): Fragment {
  const { sql, principal } = ctx;
  const typed = types ? sql`and r.relationship_type = any(${types}::text[])` : sql``;
  const arm = (near: 'from_ci_id' | 'to_ci_id', far: 'from_ci_id' | 'to_ci_id') =>
    sql`select r.${sql(far)} as far from ${rows} r
        where r.tenant_id = ${principal.tenantId} and r.${sql(near)} = w.id ${typed}`;
  const arms =
    hop.direction === 'out'
      ? arm('from_ci_id', 'to_ci_id')
      : hop.direction === 'in'
        ? arm('to_ci_id', 'from_ci_id')
        : sql`${arm('from_ci_id', 'to_ci_id')} union all ${arm('to_ci_id', 'from_ci_id')}`;
  // at a moment the rows are relationships and their history in a union: pulled up into the walk,
  // the step's `= w.id` no longer reaches the union's arms and every relationship of the types is
  // read (3 s of 6 on 100 000 CIs, for 10 reached); kept a subquery, each arm reads its index
  return ctx.asOf === undefined ? arms : sql`${arms} offset 0`;
}

/** Whether the CI `far` may be walked through: it exists (at the moment) inside the principal's scopes. */
function walkable(ctx: PredicateContext, far: Fragment): Fragment {
  const { sql } = ctx;
  const id = (row: string) => sql`${sql(row)}.ci_id = ${far}`;
  return sql`exists (select 1 from ${cisOf(ctx, 'n', id, id)} n)`;
}

/** Whether the CI `far` exists (at the moment), inside the principal's data scopes or not. */
function existed(ctx: PredicateContext, far: Fragment): Fragment {
  const { sql, principal } = ctx;
  const tenant = (row: string) => sql`${sql(row)}.tenant_id = ${principal.tenantId}`;
  const id = (row: string) => sql`${sql(row)}.ci_id = ${far}`;
  if (ctx.asOf === undefined)
    return sql`exists (select 1 from configuration_items v where ${tenant('v')} and ${id('v')})`;
  return sql`exists (select 1 from ${cisAt(sql, ctx.asOf, 'v', { visible: tenant, key: id })} v)`;
}

/**
 * The path's CTEs: `s0` the CIs of the first match (each its own origin), then per hop `wI` the
 * walk (origin, CI reached, depth; a CI outside the scopes is neither reached nor walked through)
 * and `sI` what it reached at a depth in range that holds the next match. `answer` holds the
 * path's ends: the last match's CIs, or with `return first` the first match's that led to one.
 */
export function pathCtes(ctx: PredicateContext, query: Query, prefix = ''): { ctes: Fragment[]; answer: string } {
  const { sql } = ctx;
  const ctes: Fragment[] = [];
  const first = query.path[0] as Expr;
  ctes.push(sql`${sql(stage(prefix, 0))} as (
    select ci.ci_id as origin, ci.ci_id as id from ${cisOf(ctx, 'ci', (row) => matchCondition(ctx, row, first), matchInvariant(ctx, first))} ci)`);
  let last = 0;
  for (let i = 1; i < query.path.length; i += 2) {
    const hop = query.path[i] as Hop;
    const match = query.path[i + 1] as Expr;
    const n = (i + 1) / 2;
    const w = sql(walk(prefix, n));
    const reached = (row: string) => sql`${sql(row)}.ci_id = w.id`;
    ctes.push(sql`${w} (origin, id, depth) as (
      select origin, id, 0 from ${sql(stage(prefix, n - 1))}
      union
      select w.origin, step.far, w.depth + 1 from ${w} w cross join lateral (${step(ctx, hop)}) step
      where w.depth < ${hop.max} and ${walkable(ctx, sql`step.far`)})`);
    ctes.push(sql`${sql(stage(prefix, n))} as (
      select distinct w.origin, w.id from ${w} w
      where w.depth between ${hop.min} and ${hop.max}
        and exists (select 1 from ${cisOf(ctx, 'ci', (row) => and(sql, [reached(row), matchCondition(ctx, row, match)]), matchInvariant(ctx, match, reached))} ci))`);
    last = n;
  }
  const which = query.pipes.some((p) => p.kind === 'return' && p.which === 'first') ? 'origin' : 'id';
  const answer = `${prefix}answer`;
  ctes.push(sql`${sql(answer)} as (select distinct ${sql(which)} as id from ${sql(stage(prefix, last))})`);
  return { ctes, answer };
}

/**
 * CIs a hop reached that lie outside the principal's data scopes: counted, never shown or walked
 * through, as the dependency graph counts them. A relationship to a CI removed for good (or, at a
 * moment, one that did not exist then) reaches nothing. Nothing is hidden from a principal who sees all.
 */
export function hiddenCte(ctx: PredicateContext, query: Query, prefix = ''): Fragment | undefined {
  const { sql, principal } = ctx;
  if (seesAllData(principal) || query.path.length === 1) return undefined;
  const parts: Fragment[] = [];
  for (let i = 1; i < query.path.length; i += 2) {
    const hop = query.path[i] as Hop;
    const w = sql(walk(prefix, (i + 1) / 2));
    parts.push(sql`select step.far from ${w} w cross join lateral (${step(ctx, hop)}) step
      where w.depth < ${hop.max} and ${existed(ctx, sql`step.far`)} and not ${walkable(ctx, sql`step.far`)}`);
  }
  return sql`${sql(`${prefix}hidden`)} as (select count(distinct far)::int as hidden from (${parts.reduce((a, b) => sql`${a} union all ${b}`)}) h)`;
}

/** `with recursive` and the CTEs, joined. */
export const withCtes = (sql: Sql, ctes: readonly Fragment[]): Fragment =>
  sql`with recursive ${ctes.reduce((a, b) => sql`${a}, ${b}`)}`;
