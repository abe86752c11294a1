import type { Sql } from 'postgres';
import type { Queryable } from '../db/database.js';
import type { Principal } from '../auth/principal.js';
import { historyConditions, recordColumns, type ChangeRow, type HistoryFilter } from './store.js';
import { API_TIME_FORMAT, EXACT_TIME_FORMAT } from '../query/exact-time.js';

/**
 * A place in the change feed: the position of a committed transaction (sql/0025) and the id of the
 * last record of it already read (0 when none). The feed is ordered by (position, id).
 */
export interface FeedPlace {
  position: string;
  id: string;
}

/** The record id of a place past every record of its transaction. */
export const PAST_TRANSACTION = '9223372036854775807';

/** Where the feed ends now: the place after every record committed so far. */
export async function feedEnd(sql: Queryable): Promise<FeedPlace> {
  const [row] = await sql<{ position: string | null }[]>`select max(position)::text as position from change_feed`;
  return { position: row?.position ?? '0', id: PAST_TRANSACTION };
}

/** One record scanned: its place, and the record when the principal may see it and the criteria select it. */
export interface FeedEntry {
  place: FeedPlace;
  /** When the record's transaction committed. */
  committedAt: Date;
  record: ChangeRow | undefined;
}

/**
 * The next `scan` records after `after` in feed order: the feed's places from `after` on, and the
 * records of each place's transaction (after `after.id` in its own). `json`: each record as the API
 * shows it (ChangeRecord), written as JSON text by the database, for callers that pass it on as it is.
 */
function scanned(sql: Sql, principal: Principal, criteria: HistoryFilter, after: FeedPlace, scan: number, shape: 'rows' | 'selection') {
  const content =
    shape === 'selection'
      ? sql`${historyConditions(sql, principal, criteria)} as selected, to_char(cr.changed_at at time zone 'UTC', ${EXACT_TIME_FORMAT}) as at`
      : sql`${historyConditions(sql, principal, criteria)} as selected, ${recordColumns(sql)}`;
  return sql`
    select f.position::text as position, f.committed_at, cr.id::text as record, ${content}
    from (select position, txid, committed_at from change_feed where position >= ${after.position}::bigint order by position limit ${scan}) f
    cross join lateral (
      select cr.id, cr.tenant_id, cr.source_id, cr.scope_id, cr.ci_id, cr.ci_name, cr.ci_namespace, cr.ci_type, cr.change_type,
             cr.changed_at, cr.changes, cr.changed_fields, cr.search_vector
      from change_records cr
      -- one bound per place, so that a transaction of many records is read from the cursor on along the (txid, id) index
      where cr.txid = f.txid and cr.id > (case when f.position = ${after.position}::bigint then ${after.id}::bigint else 0 end)
      order by cr.id limit ${scan}
    ) cr
    order by f.position, cr.id
    limit ${scan}`;
}

/**
 * The next `scan` records after `after` in feed order, each with whether the principal may see it
 * and the criteria select it (only those carry their content). The caller's place moves over the
 * records left out too, so the cost of a read is bounded however few of them match.
 */
export async function scanFeed(sql: Sql, principal: Principal, criteria: HistoryFilter, after: FeedPlace, scan: number): Promise<FeedEntry[]> {
  const rows = await sql<(ChangeRow & { position: string; record: string; selected: boolean; committed_at: Date })[]>`
    ${scanned(sql, principal, criteria, after, scan, 'rows')}`;
  return rows.map(({ position, record, selected, committed_at, id, ci_id, ci_name, ci_namespace, ci_type, changed_at, change_type, changes }) => ({
    place: { position, id: record },
    committedAt: committed_at,
    record: selected ? { id, ci_id, ci_name, ci_namespace, ci_type, changed_at, change_type, changes } : undefined,
  }));
}

/** As scanFeed, without the records' content: whether each is selected, and its time (exact) to find it by. */
export async function scanFeedSelection(
  sql: Sql,
  principal: Principal,
  criteria: HistoryFilter,
  after: FeedPlace,
  scan: number,
): Promise<{ place: FeedPlace; committedAt: Date; selected: boolean; at: string }[]> {
  const rows = await sql<{ position: string; record: string; committed_at: Date; selected: boolean; at: string }[]>`
    ${scanned(sql, principal, criteria, after, scan, 'selection')}`;
  return rows.map((row) => ({ place: { position: row.position, id: row.record }, committedAt: row.committed_at, selected: row.selected, at: row.at }));
}

/**
 * Records as the API shows them (ChangeRecord), each as JSON text written by the database, by id
 * and exact time: for callers that pass them on as they are.
 */
export async function recordsAsJson(sql: Sql, tenantId: string, records: readonly { id: string; at: string }[]): Promise<Map<string, string>> {
  if (records.length === 0) return new Map();
  const rows = await sql<{ id: string; tenant_id: string; json: string }[]>`
    select cr.id::text as id, cr.tenant_id, json_build_object(
             'id', cr.id::text, 'ci_id', cr.ci_id, 'ci_name', cr.ci_name, 'ci_namespace', cr.ci_namespace, 'ci_type', cr.ci_type,
             'changed_at', to_char(cr.changed_at at time zone 'UTC', ${API_TIME_FORMAT}), 'change_type', cr.change_type,
             'changes', (select coalesce(json_agg(json_build_object('field', c -> 'field', 'old_value', coalesce(c -> 'old_value', 'null'::jsonb),
                                                                    'new_value', coalesce(c -> 'new_value', 'null'::jsonb))), '[]')
                         from jsonb_array_elements(cr.changes) c))::text as json
    from unnest(${records.map((r) => r.id)}::bigint[], ${records.map((r) => r.at)}::text[]) as u(id, at)
    join change_records cr on cr.id = u.id and cr.changed_at = u.at::timestamptz`;
  // the tenant is checked here, not in the join: as a join condition it can steer the planner, on a
  // table whose statistics lag a big load, to a (tenant, …) index read whole for every record
  return new Map(rows.filter((row) => row.tenant_id === tenantId).map((row) => [row.id, row.json]));
}
