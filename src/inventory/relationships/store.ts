import type { Sql } from 'postgres';
import type { Principal } from '../../platform/auth/principal.js';
import { columnsOf, visibleTo, type Fragment } from '../../platform/auth/scope.js';
import { cisAt } from '../../history/records/as-of.js';
import { utcText } from '../../platform/query/exact-time.js';
import { edges } from './edges.js';
import type { Direction, RelationshipSortField } from './schema.js';

/**
 * Where a walk stands: the order key of the last row handed out (sortValue only when sorted).
 * directionRank 0 is outgoing, 1 incoming: outgoing rows come first in the natural order.
 */
export interface Keyset {
  sortValue?: string;
  directionRank: 0 | 1;
  id: string;
}

export interface RelationshipCriteria {
  ciId: string;
  direction: Direction | null;
  types: readonly string[] | null;
  includeInactive: boolean;
  sort: { field: RelationshipSortField; order: 'asc' | 'desc' } | null;
  limit: number;
  /** Only applied when `after` is null: a cursor already holds the position. */
  offset: number;
  after: Keyset | null;
  /** A moment (ISO 8601): the relationships that existed then, their neighbours as they were. */
  asOf?: string;
}

/** A relationship of a page whose neighbour exists and may be seen. */
export interface RelationshipRow {
  id: string;
  relationship_type: string;
  direction_rank: 0 | 1;
  related_ci_id: string;
  related_ci_name: string;
  related_ci_type: string;
  related_ci_status: 'active' | 'inactive' | 'archived';
  /** UTC, as `utcText` writes it. */
  created_at: string;
  last_seen: string;
  /** When a relationship left behind by a CI that left the active inventory ended (see `edges`). */
  ended_at: string | null;
}

/** A row as the page query returns it: the neighbour columns are null when the neighbour is gone. */
type PageRow = Omit<RelationshipRow, 'related_ci_name' | 'related_ci_type' | 'related_ci_status'> & {
  related_ci_name: string | null;
  related_ci_type: string | null;
  related_ci_status: RelationshipRow['related_ci_status'] | null;
  sort_value: string | null;
  live: boolean;
};

const isLive = (row: PageRow): row is PageRow & RelationshipRow => row.live;

export interface RelationshipPage {
  /** The page's rows with a live neighbour, in walk order. */
  rows: RelationshipRow[];
  hasMore: boolean;
  /** The position of the page's last row (live or not), to continue from. */
  last: Keyset | null;
}

/**
 * The rows of one direction that lie beyond an unsorted walk's position, as a condition each branch
 * can answer from its index (the general row comparison above the union cannot be pushed down).
 */
function beyondInBranch(sql: Sql, criteria: RelationshipCriteria, rank: 0 | 1): Fragment {
  const after = criteria.after;
  if (!after || criteria.sort) return sql``;
  if (after.directionRank > rank) return sql`and false`;
  return after.directionRank === rank ? sql`and r.id > ${after.id}::bigint` : sql``;
}

/**
 * The neighbour of each edge `e` as `n`: the CI now, or at a moment the CI as it was then (its
 * name, type, status and instance then; none when it did not exist then).
 */
function neighbours(sql: Sql, tenantId: string, asOf: string | undefined): Fragment {
  if (asOf === undefined)
    return sql`left join configuration_items n on n.ci_id = e.related_ci_id and n.tenant_id = ${tenantId}`;
  // the neighbour as it was then; the principal's scopes apply to the relationship's ends (see visibleFilter)
  const then = cisAt(sql, asOf, 'b', {
    visible: (row) => sql`${sql(row)}.tenant_id = ${tenantId}`,
    key: (row) => sql`${sql(row)}.ci_id = e.related_ci_id`,
  });
  return sql`left join lateral (select b.ci_id, b.tenant_id, b.name, b.ci_type, b.status, b.scope_id, b.source_id from ${then} b) n on true`;
}

/** The edges of each direction the walk covers, outgoing (rank 0) first. */
function branches(sql: Sql, tenantId: string, criteria: RelationshipCriteria): { rank: 0 | 1; edges: Fragment }[] {
  const { ciId, types } = criteria;
  const from = edges(sql, criteria.asOf, { leftBehind: criteria.includeInactive });
  const typeFilter = () => (types ? sql`and r.relationship_type = any(${types as string[]}::text[])` : sql``);
  const outgoing = sql`
    select r.id, r.relationship_type, r.created_at, r.last_seen, r.ended_at, 0 as direction_rank, r.to_ci_id as related_ci_id,
           r.tenant_id, r.source_id, r.to_scope_id as related_scope_id
    from ${from} r
    where r.tenant_id = ${tenantId} and r.from_ci_id = ${ciId} ${typeFilter()} ${beyondInBranch(sql, criteria, 0)}`;
  // a relationship of a CI to itself is one row: it is listed once, as outgoing
  const incoming = sql`
    select r.id, r.relationship_type, r.created_at, r.last_seen, r.ended_at, 1 as direction_rank, r.from_ci_id as related_ci_id,
           r.tenant_id, r.source_id, r.from_scope_id as related_scope_id
    from ${from} r
    where r.tenant_id = ${tenantId} and r.to_ci_id = ${ciId} and r.from_ci_id <> ${ciId} ${typeFilter()} ${beyondInBranch(sql, criteria, 1)}`;
  if (criteria.direction === 'outgoing') return [{ rank: 0, edges: outgoing }];
  if (criteria.direction === 'incoming') return [{ rank: 1, edges: incoming }];
  return [
    { rank: 0, edges: outgoing },
    { rank: 1, edges: incoming },
  ];
}

function sortValue(sql: Sql, criteria: RelationshipCriteria): Fragment {
  // a vanished neighbour has no name or type; '' keeps such rows at one deterministic end of the walk
  switch (criteria.sort?.field) {
    case 'relationship_type':
      return sql`e.relationship_type`;
    case 'related_ci_name':
      return sql`coalesce(n.name, '')`;
    case 'related_ci_type':
      return sql`coalesce(n.ci_type, '')`;
    default:
      return sql`null::text`;
  }
}

/**
 * The result set a walk covers and `total` counts: relationships whose neighbour the principal may
 * see (and that is active, unless inactive ones are asked for), plus those whose neighbour no
 * longer exists, when the instance it was in is one the principal may see. A neighbour that exists
 * outside the principal's scopes, or is filtered out by status, leaves its row out entirely:
 * counting it would reveal that it exists.
 */
function resultSet(sql: Sql, principal: Principal, criteria: RelationshipCriteria, rowsWanted?: number): Fragment {
  const parts = branches(sql, principal.tenantId, criteria).map((branch) => branch.edges);
  if (rowsWanted === undefined || criteria.sort) {
    return parts
      .map((part) => visibleRows(sql, principal, criteria, part))
      .reduce((union, part) => sql`${union} union all ${part}`);
  }
  // unsorted, each direction is walked by id on its own and stops after the rows a page can use:
  // over the union, the planner would sort every row of a CI with many neighbours for each page
  return parts
    .map((part) => sql`(${visibleRows(sql, principal, criteria, part)} order by e.id limit ${rowsWanted})`)
    .reduce((union, part) => sql`${union} union all ${part}`);
}

/** The rows of one branch's edges `edgeRows` the result set keeps (see `resultSet`), with their neighbours. */
function visibleRows(sql: Sql, principal: Principal, criteria: RelationshipCriteria, edgeRows: Fragment): Fragment {
  const statusRule = criteria.includeInactive ? sql`` : sql`and n.status = 'active'`;
  return sql`
    select e.id, e.relationship_type, ${utcText(sql, 'e.created_at')} as created_at, ${utcText(sql, 'e.last_seen')} as last_seen,
           case when e.ended_at is not null then ${utcText(sql, 'e.ended_at')} end as ended_at,
           e.direction_rank, e.related_ci_id, n.name as related_ci_name, n.ci_type as related_ci_type, n.status as related_ci_status,
           n.ci_id is not null as live, ${sortValue(sql, criteria)} as sort_value
    from (${edgeRows}) e
    ${neighbours(sql, principal.tenantId, criteria.asOf)}
    where (n.ci_id is null and ${visibleTo(sql, principal, { tenant: 'e.tenant_id', source: 'e.source_id', scope: 'e.related_scope_id' })})
       or (${visibleTo(sql, principal, columnsOf('n'))} ${statusRule})`;
}

function orderKey(sql: Sql, criteria: RelationshipCriteria, alias: string): Fragment {
  const order = criteria.sort?.order === 'desc' ? sql`desc` : sql`asc`;
  const column = (name: string) => sql`${sql(`${alias}.${name}`)} ${order}`;
  return criteria.sort
    ? sql`${column('sort_value')}, ${column('direction_rank')}, ${column('id')}`
    : sql`${column('direction_rank')}, ${column('id')}`;
}

function afterKeyset(sql: Sql, criteria: RelationshipCriteria): Fragment {
  const after = criteria.after;
  if (!after) return sql`true`;
  const beyond = criteria.sort?.order === 'desc' ? sql`<` : sql`>`;
  if (criteria.sort) {
    return sql`(s.sort_value, s.direction_rank, s.id) ${beyond} (${after.sortValue ?? ''}::text, ${after.directionRank}::int, ${after.id}::bigint)`;
  }
  return sql`(s.direction_rank, s.id) ${beyond} (${after.directionRank}::int, ${after.id}::bigint)`;
}

/** How many relationship rows the walk covers (see `resultSet`). */
export async function countRelationships(
  sql: Sql,
  principal: Principal,
  criteria: RelationshipCriteria,
): Promise<number> {
  const [row] = await sql<
    { total: number }[]
  >`select count(*)::int as total from (${resultSet(sql, principal, criteria)}) s`;
  return row?.total ?? 0;
}

/**
 * One page of the walk: `limit` rows of the result set after the keyset position (or after
 * `offset` rows on a first page). Rows whose neighbour is gone use up their place in the page but
 * are dropped here, so a page may be short, or empty, while more follow. The next page continues
 * from the page's last row, even when that one is dangling.
 */
export async function relationshipPage(
  sql: Sql,
  principal: Principal,
  criteria: RelationshipCriteria,
): Promise<RelationshipPage> {
  const { limit } = criteria;
  const offset = criteria.after ? 0 : criteria.offset;
  // one row beyond the page tells whether more follow
  const rows =
    criteria.sort || offset > 0
      ? await sql<PageRow[]>`
          select s.* from (${resultSet(sql, principal, criteria, limit + 1 + offset)}) s
          where ${afterKeyset(sql, criteria)}
          order by ${orderKey(sql, criteria, 's')}
          limit ${limit + 1} offset ${offset}`
      : await branchByBranch(sql, principal, criteria, limit + 1);
  const hasMore = rows.length > limit;
  const boundary = hasMore ? rows[limit - 1] : undefined;
  return {
    rows: rows.slice(0, limit).filter(isLive),
    hasMore,
    last: boundary ? keysetOf(boundary, criteria) : null,
  };
}

/**
 * The next `wanted` rows of an unsorted walk, outgoing before incoming, each direction read in id
 * order on its own, the incoming one only when the outgoing rows run out. In one statement the two
 * would meet in a sort, which holds every row back until the last is found; read apart, rows reach
 * the process as the database finds them and are decoded while it looks for the next.
 */
async function branchByBranch(
  sql: Sql,
  principal: Principal,
  criteria: RelationshipCriteria,
  wanted: number,
): Promise<PageRow[]> {
  const rows: PageRow[] = [];
  for (const branch of branches(sql, principal.tenantId, criteria)) {
    if (criteria.after && criteria.after.directionRank > branch.rank) continue;
    const found = await sql<
      PageRow[]
    >`${visibleRows(sql, principal, criteria, branch.edges)} order by e.id limit ${wanted - rows.length}`;
    for (const row of found) rows.push(row);
    if (rows.length >= wanted) break;
  }
  return rows;
}

function keysetOf(row: PageRow, criteria: RelationshipCriteria): Keyset {
  const position: Keyset = { directionRank: row.direction_rank, id: row.id };
  if (criteria.sort) position.sortValue = row.sort_value ?? '';
  return position;
}

/** A relationship as a diff names it: seen from the CI the diff is about. */
export interface EdgeChange {
  id: string;
  relationship_type: string;
  direction: 'outgoing' | 'incoming';
  related_ci_id: string;
}

/**
 * The relationships of a CI that existed at one of two moments and not at the other: `added`
 * exist at `to` only, `removed` at `from` only. Those leading to an instance the principal may not
 * see are left out, as the relationship list leaves them out.
 */
export async function edgesChangedBetween(
  sql: Sql,
  principal: Principal,
  ciId: string,
  from: string,
  to: string,
): Promise<{ added: EdgeChange[]; removed: EdgeChange[] }> {
  const at = (moment: string) => sql`
    select r.id::text as id, r.relationship_type,
           case when r.from_ci_id = ${ciId} then 'outgoing' else 'incoming' end as direction,
           case when r.from_ci_id = ${ciId} then r.to_ci_id else r.from_ci_id end as related_ci_id
    from (
      select e.*, case when e.from_ci_id = ${ciId} then e.to_scope_id else e.from_scope_id end as related_scope_id
      from ${edges(sql, moment)} e
      where e.tenant_id = ${principal.tenantId} and (e.from_ci_id = ${ciId} or e.to_ci_id = ${ciId})
    ) r
    where ${visibleTo(sql, principal, { tenant: 'r.tenant_id', source: 'r.source_id', scope: 'r.related_scope_id' })}`;
  const rows = await sql<(EdgeChange & { side: 'added' | 'removed' })[]>`
    select 'added' as side, x.* from (${at(to)} except ${at(from)}) x
    union all
    select 'removed' as side, y.* from (${at(from)} except ${at(to)}) y
    order by side, relationship_type, related_ci_id, id`;
  const pick = (side: 'added' | 'removed') =>
    rows.filter((row) => row.side === side).map(({ side: _side, ...edge }) => edge);
  return { added: pick('added'), removed: pick('removed') };
}
