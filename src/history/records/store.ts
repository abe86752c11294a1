import type { Sql } from 'postgres';
import type { Principal } from '../../platform/auth/principal.js';
import { and, changeColumnsOf, visibleTo, type Fragment } from '../../platform/auth/scope.js';
import { compileFilters, type ParsedFilter } from '../../platform/query/filters.js';
import type { FieldChange } from './diff.js';
import type { ChangeType } from './writer.js';
import { countWithin, type CountSettings } from '../../platform/query/count.js';
import { toTsquery, type ParsedQuery } from '../../platform/query/text-query.js';
import { microsOf, windowCounts, type Bound } from './window-counts.js';
import { EXACT_TIME_FORMAT } from '../../platform/query/exact-time.js';

/** The columns a change listing can be sorted by. */
export const CHANGE_SORT_FIELDS = ['changed_at', 'ci_name', 'ci_type', 'change_type'] as const;
export type ChangeSortField = (typeof CHANGE_SORT_FIELDS)[number];

export interface ChangeRow {
  id: string;
  ci_id: string;
  ci_name: string;
  ci_namespace: string | null;
  ci_type: string;
  changed_at: Date;
  change_type: ChangeType;
  changes: FieldChange[];
  /** What the change is about and how much it matters (kinds.ts, the tenant's change rules); null before classification. */
  kind: string | null;
  severity: string | null;
  /** Hidden by an ignore rule: listed only when asked for. */
  ignored: boolean;
  /** On a folded read: the records the fold stands for (1: none folded) and the last one's time. */
  fold?: { records: number; last_at: Date };
}

/**
 * A keyset position: the sort value as exact text (timestamps with microseconds, which a JS Date
 * would round) and the change id.
 */
export type Position = readonly [sortValue: string, id: string];

/**
 * A timestamp parameter sent as text: a parameter typed timestamptz goes through a JS Date on the
 * way out, which drops microseconds (and reads an offset-less time in the process's zone).
 */
const exactTime = (sql: Sql, text: string): Fragment => sql`${text}::text::timestamptz`;

export const recordColumns = (sql: Sql) =>
  sql`cr.id::text as id, cr.ci_id, cr.ci_name, cr.ci_namespace, cr.ci_type, cr.changed_at, cr.change_type, cr.changes,
      cr.kind, cr.severity, cr.ignored`;

/** How a read treats repeats and ignored records. */
export interface Reading {
  /** Repeats within a fold are left out; each fold's first record stands for them (`fold`). */
  fold?: boolean;
  /** Records an ignore rule hid are listed too. */
  ignored?: boolean;
}

/** The fold a folded read's record stands for: its repeats (change_folds) beside it. */
const foldJoin = (sql: Sql, reading: Reading) =>
  reading.fold
    ? sql`left join change_folds f on f.tenant_id = cr.tenant_id and f.ci_id = cr.ci_id and f.fingerprint = cr.fingerprint
            and f.fold_at = cr.changed_at`
    : sql``;
const foldColumns = (sql: Sql, reading: Reading) =>
  reading.fold
    ? sql`, 1 + coalesce(f.repeats, 0) as fold_records, coalesce(f.last_at, cr.changed_at) as fold_last_at`
    : sql``;

/** The conditions a reading adds: no ignored records unless asked, no repeats on a folded read. */
export function readingConditions(sql: Sql, reading: Reading): Fragment[] {
  return [...(reading.ignored ? [] : [sql`not cr.ignored`]), ...(reading.fold ? [sql`cr.fold_at is null`] : [])];
}

export interface CiHistoryPage {
  items: ChangeRow[];
  total: number;
  /** Whether records follow the page; `last` is then the position to continue from. */
  hasMore: boolean;
  last: Position | undefined;
}

interface CiHistoryRow extends ChangeRow {
  fold_records?: number;
  fold_last_at?: Date;
  n: number;
  is_item: boolean;
  position_at: string;
}

/**
 * One page of a CI's history, newest first, and the number of its visible change records. The page
 * is taken over all records, one more than asked to learn whether more follow, so positions and
 * `hasMore` follow the raw history; records without field changes are then dropped in SQL, except
 * the page's last one and the look-ahead, which only mark the position and the rest.
 */
export async function pageCiHistory(
  sql: Sql,
  principal: Principal,
  ciId: string,
  page: { limit: number; offset: number; after: Position | undefined; total?: number },
  reading: Reading = {},
): Promise<CiHistoryPage> {
  const where = and(sql, [
    sql`cr.ci_id = ${ciId}`,
    visibleTo(sql, principal, changeColumnsOf('cr')),
    ...readingConditions(sql, reading),
  ]);
  const keyset = page.after
    ? sql`and (cr.changed_at, cr.id) < (${exactTime(sql, page.after[0])}, ${page.after[1]}::bigint)`
    : sql``;
  const [rows, [count]] = await Promise.all([
    sql<CiHistoryRow[]>`
      with page as (
        select ${recordColumns(sql)} ${foldColumns(sql, reading)},
               to_char(cr.changed_at at time zone 'UTC', ${EXACT_TIME_FORMAT}) as position_at
        from change_records cr ${foldJoin(sql, reading)}
        where ${where} ${keyset}
        order by cr.changed_at desc, cr.id desc
        limit ${page.limit + 1} offset ${page.after ? 0 : page.offset}
      ), numbered as (
        select page.*, row_number() over (order by page.changed_at desc, page.id::bigint desc)::int as n from page
      )
      select n, n <= ${page.limit} and changes <> '[]'::jsonb as is_item, position_at,
             id, ci_id, ci_name, ci_namespace, ci_type, changed_at, change_type, kind, severity, ignored
             ${reading.fold ? sql`, fold_records, fold_last_at` : sql``},
             case when n <= ${page.limit} then changes end as changes
      from numbered
      where (n <= ${page.limit} and changes <> '[]'::jsonb) or n >= ${page.limit}
      order by n`,
    page.total === undefined
      ? sql<{ total: number }[]>`select count(*)::int as total from change_records cr where ${where}`
      : [{ total: page.total }],
  ]);
  const boundary = rows.find((row) => row.n === page.limit);
  const hasMore = rows.some((row) => row.n > page.limit);
  return {
    items: rows.filter((row) => row.is_item).map(toChangeRow),
    total: count?.total ?? 0,
    hasMore,
    last: hasMore && boundary ? [boundary.position_at, boundary.id] : undefined,
  };
}

type FoldedRow = ChangeRow & { fold_records?: number; fold_last_at?: Date };

export function toChangeRow(row: FoldedRow): ChangeRow {
  const { id, ci_id, ci_name, ci_namespace, ci_type, changed_at, change_type, changes, kind, severity, ignored } = row;
  const base = { id, ci_id, ci_name, ci_namespace, ci_type, changed_at, change_type, changes, kind, severity, ignored };
  return row.fold_records === undefined
    ? base
    : { ...base, fold: { records: row.fold_records, last_at: row.fold_last_at ?? changed_at } };
}

/** What selects the global history: filters, search and time bounds. */
export interface HistoryFilter extends Reading {
  filters: readonly ParsedFilter[];
  /** The search language of src/platform/query/text-query.ts, compiled to a tsquery. */
  search: ParsedQuery | undefined;
  /** Inclusive lower bound, an ISO 8601 timestamp with offset. */
  from: string | undefined;
  /** Upper bound, an ISO 8601 timestamp with offset; `untilExclusive` tells which kind. */
  until: string | undefined;
  untilExclusive: boolean;
}

/** What selects and orders the global history; shared by the JSON list and the CSV export. */
export interface ChangeCriteria extends HistoryFilter {
  sortBy: ChangeSortField;
  sortOrder: 'asc' | 'desc';
}

/**
 * The `WHERE` of every read of the global history (list, export, search): the principal's tenant
 * and data scopes, records that carry field changes, filters, time bounds and the search query.
 */
export function historyConditions(sql: Sql, principal: Principal, criteria: HistoryFilter): Fragment {
  const parts = [
    visibleTo(sql, principal, changeColumnsOf('cr')),
    // records without field changes carry nothing to list or export
    sql`cr.changes <> '[]'::jsonb`,
    ...readingConditions(sql, criteria),
    ...compileFilters(sql, criteria.filters),
  ];
  if (criteria.from) parts.push(sql`cr.changed_at >= ${exactTime(sql, criteria.from)}`);
  if (criteria.until) {
    parts.push(
      criteria.untilExclusive
        ? sql`cr.changed_at < ${exactTime(sql, criteria.until)}`
        : sql`cr.changed_at <= ${exactTime(sql, criteria.until)}`,
    );
  }
  if (criteria.search) parts.push(sql`cr.search_vector @@ ${toTsquery(criteria.search)}::tsquery`);
  return and(sql, parts);
}

const SORT_COLUMNS: Record<ChangeSortField, string> = {
  changed_at: 'cr.changed_at',
  ci_name: 'cr.ci_name',
  ci_type: 'cr.ci_type',
  change_type: 'cr.change_type',
};

function ordering(sql: Sql, criteria: ChangeCriteria): Fragment {
  const direction = criteria.sortOrder === 'asc' ? sql`asc` : sql`desc`;
  return sql`${sql(SORT_COLUMNS[criteria.sortBy])} ${direction}, cr.id ${direction}`;
}

const TIME_OPERATORS: Record<string, 'lower' | 'upper' | 'both'> = {
  gt: 'lower',
  gte: 'lower',
  lt: 'upper',
  lte: 'upper',
  eq: 'both',
};

/**
 * The time bounds of the criteria when everything else they filter on is a dimension of the
 * statistics pre-aggregate (change type, CI type), or undefined when the total must be counted
 * from the records: a search, or filters on names, ids, fields, or time other than ranges.
 */
function aggregateWindow(
  criteria: HistoryFilter,
): { lower?: Bound; upper?: Bound; filters: ParsedFilter[] } | undefined {
  // the pre-aggregate counts records, not folds
  if (criteria.search || criteria.fold) return undefined;
  const filters: ParsedFilter[] = [];
  const lowers: Bound[] = criteria.from ? [{ at: criteria.from, inclusive: true }] : [];
  const uppers: Bound[] = criteria.until ? [{ at: criteria.until, inclusive: !criteria.untilExclusive }] : [];
  for (const filter of criteria.filters) {
    if (filter.field === 'change_type' || filter.field === 'ci_type') {
      filters.push(filter);
    } else if (filter.field === 'changed_at' && TIME_OPERATORS[filter.op] && filter.value !== undefined) {
      const side = TIME_OPERATORS[filter.op]!;
      const bound = { at: filter.value, inclusive: filter.op !== 'gt' && filter.op !== 'lt' };
      if (side !== 'upper') lowers.push(bound);
      if (side !== 'lower') uppers.push(bound);
    } else {
      return undefined;
    }
  }
  // the tightest bound on each side; on a tie the exclusive one is the tighter
  const pick = (bounds: Bound[], later: boolean) =>
    bounds.reduce<Bound | undefined>((best, bound) => {
      if (!best) return bound;
      const a = microsOf(bound.at);
      const b = microsOf(best.at);
      if (a === b) return bound.inclusive ? best : bound;
      return later === a > b ? bound : best;
    }, undefined);
  return { lower: pick(lowers, true), upper: pick(uppers, false), filters };
}

/**
 * One offset page of the global history the principal may see, and the number of matches. A list
 * filtered only on change type, CI type and time is counted from the statistics pre-aggregate and
 * the records around it, exactly, at the cost of the window's hours; any other filter set is
 * counted under the count timeout, beyond which the planner's estimate is reported.
 */
export async function listChanges(
  sql: Sql,
  principal: Principal,
  criteria: ChangeCriteria,
  page: { limit: number; offset: number },
  counting: CountSettings,
): Promise<{ rows: ChangeRow[]; total: number; totalExact: boolean }> {
  const where = historyConditions(sql, principal, criteria);
  const aggregate = aggregateWindow(criteria);
  // the pre-aggregate counts ignored records too: it answers only where there are none to leave out
  const window =
    aggregate && (criteria.ignored || !(await ignoredWithin(sql, principal, aggregate))) ? aggregate : undefined;
  const [rows, count] = await Promise.all([
    pageChanges(sql, principal, criteria, page),
    window
      ? sql<
          { total: string }[]
        >`select coalesce(sum(n), 0)::bigint as total from (${windowCounts(sql, principal, window.lower, window.upper, window.filters, true)}) as counted`.then(
          ([row]) => ({ total: Number(row?.total ?? 0), exact: true }),
        )
      : countWithin(
          sql,
          sql`select 1 from change_records cr where ${where}`,
          counting.countTimeoutMs,
          counting.embedded,
        ),
  ]);
  return { rows, total: count.total, totalExact: count.exact };
}

/** Whether the tenant has records an ignore rule hid within the bounds (a partial index holds only those). */
async function ignoredWithin(
  sql: Sql,
  principal: Principal,
  bounds: { lower?: Bound; upper?: Bound },
): Promise<boolean> {
  const lower = bounds.lower ? sql`and cr.changed_at >= ${exactTime(sql, bounds.lower.at)}` : sql``;
  const upper = bounds.upper ? sql`and cr.changed_at <= ${exactTime(sql, bounds.upper.at)}` : sql``;
  const [row] = await sql<{ found: boolean }[]>`
    select exists (select 1 from change_records cr where cr.tenant_id = ${principal.tenantId} and cr.ignored ${lower} ${upper}) as found`;
  return row?.found ?? false;
}

/** One offset page of the global history the principal may see, without counting the rest. */
export function pageChanges(
  sql: Sql,
  principal: Principal,
  criteria: ChangeCriteria,
  page: { limit: number; offset: number },
): Promise<ChangeRow[]> {
  return sql<FoldedRow[]>`
    select ${recordColumns(sql)} ${foldColumns(sql, criteria)} from change_records cr ${foldJoin(sql, criteria)}
    where ${historyConditions(sql, principal, criteria)}
    order by ${ordering(sql, criteria)}
    limit ${page.limit} offset ${page.offset}`.then((rows) => rows.map(toChangeRow));
}

function sortKey(sql: Sql, sortBy: ChangeSortField): Fragment {
  return sortBy === 'changed_at'
    ? sql`to_char(cr.changed_at at time zone 'UTC', ${EXACT_TIME_FORMAT})`
    : sql`${sql(SORT_COLUMNS[sortBy])}`;
}

function after(sql: Sql, criteria: ChangeCriteria, position: Position | undefined): Fragment {
  if (!position) return sql``;
  const column = sql(SORT_COLUMNS[criteria.sortBy]);
  const value = criteria.sortBy === 'changed_at' ? exactTime(sql, position[0]) : sql`${position[0]}`;
  const comparison = criteria.sortOrder === 'asc' ? sql`>` : sql`<`;
  return sql`and (${column}, cr.id) ${comparison} (${value}, ${position[1]}::bigint)`;
}

/** A change record as the CSV export reads it: its field changes as [field, old JSON, new JSON] texts. */
export interface ExportRecord {
  id: string;
  changed_at: string;
  change_type: string;
  ci_id: string;
  ci_name: string;
  ci_namespace: string | null;
  ci_type: string;
  kind: string | null;
  severity: string | null;
  /** The record's `changes` as JSON text: parsing it in Node is cheaper than unpacking it in SQL. */
  changes: string;
  /** The sort value as exact text, for the next batch's keyset position (null: it is changed_at). */
  position: string | null;
}

/**
 * One batch of the CSV export: up to `records` change records after `position` (or after skipping
 * `offset` on the first batch), in the list order. The database prints the old and new values as
 * JSON text, and hands each record over once with all its field changes rather than once per
 * change: both keep per-row work off the event loop.
 */
export async function exportBatch(
  sql: Sql,
  principal: Principal,
  criteria: ChangeCriteria,
  batch: { records: number; offset: number; position: Position | undefined; statementTimeoutMs: number },
): Promise<ExportRecord[]> {
  // an export is allowed the bulk statement timeout, which only a transaction can set for one
  // query; the fragments are built on the pool handle, which only embeds them
  const [, rows] = await sql.begin((tx) => [
    tx`select set_config('statement_timeout', ${String(batch.statementTimeoutMs)}, true)`,
    tx<ExportRecord[]>`
      select cr.id::text as id, to_char(cr.changed_at at time zone 'UTC', ${EXACT_TIME_FORMAT}) as changed_at, cr.change_type,
             cr.ci_id, cr.ci_name, cr.ci_namespace, cr.ci_type, cr.kind, cr.severity, cr.changes::text as changes,
             ${criteria.sortBy === 'changed_at' ? sql`null` : sortKey(sql, criteria.sortBy)} as position
      from change_records cr
      where ${historyConditions(sql, principal, criteria)} ${after(sql, criteria, batch.position)}
      order by ${ordering(sql, criteria)}
      limit ${batch.records} offset ${batch.offset}`,
  ]);
  return rows as ExportRecord[];
}

/**
 * How many change records with field changes a CI has after `from` up to `to` (both exact
 * timestamps): the records between two states of a diff, as the history list finds them.
 */
export async function countCiChangesBetween(
  sql: Sql,
  principal: Principal,
  ciId: string,
  from: string,
  to: string,
): Promise<number> {
  const [row] = await sql<{ total: number }[]>`
    select count(*)::int as total from change_records cr
    where cr.ci_id = ${ciId} and ${visibleTo(sql, principal, changeColumnsOf('cr'))} and cr.changes <> '[]'::jsonb
      and cr.changed_at > ${from}::text::timestamptz and cr.changed_at <= ${to}::text::timestamptz`;
  return row?.total ?? 0;
}
