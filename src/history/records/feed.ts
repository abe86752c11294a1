import type { Sql } from 'postgres';
import type { Queryable } from '../../platform/db/database.js';
import type { Principal } from '../../platform/auth/principal.js';
import { historyConditions, recordColumns, type ChangeRow, type HistoryFilter } from './store.js';
import { apiTimeOf, EXACT_TIME_FORMAT } from '../../platform/query/exact-time.js';

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
function scanned(
  sql: Sql,
  principal: Principal,
  criteria: HistoryFilter,
  after: FeedPlace,
  scan: number,
  shape: 'rows' | 'selection',
) {
  const content =
    shape === 'selection'
      ? sql`${historyConditions(sql, principal, criteria)} as selected, to_char(cr.changed_at at time zone 'UTC', ${EXACT_TIME_FORMAT}) as at, ${contentColumns(sql)}`
      : sql`${historyConditions(sql, principal, criteria)} as selected, ${recordColumns(sql)}`;
  return sql`
    select f.position::text as position, f.committed_at, cr.id::text as record, ${content}
    from (select position, txid, committed_at from change_feed where position >= ${after.position}::bigint order by position limit ${scan}) f
    cross join lateral (
      select cr.id, cr.tenant_id, cr.source_id, cr.scope_id, cr.ci_id, cr.ci_name, cr.ci_namespace, cr.ci_type, cr.change_type,
             cr.changed_at, cr.changes, cr.changed_fields, cr.search_vector, cr.moved_from_scope_id, cr.kind, cr.severity,
             cr.ignored, cr.fold_at
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
export async function scanFeed(
  sql: Sql,
  principal: Principal,
  criteria: HistoryFilter,
  after: FeedPlace,
  scan: number,
): Promise<FeedEntry[]> {
  const rows = await sql<(ChangeRow & { position: string; record: string; selected: boolean; committed_at: Date })[]>`
    ${scanned(sql, principal, criteria, after, scan, 'rows')}`;
  return rows.map(
    ({
      position,
      record,
      selected,
      committed_at,
      id,
      ci_id,
      ci_name,
      ci_namespace,
      ci_type,
      changed_at,
      change_type,
      changes,
      kind,
      severity,
      ignored,
    }) => ({
      place: { position, id: record },
      committedAt: committed_at,
      record: selected
        ? { id, ci_id, ci_name, ci_namespace, ci_type, changed_at, change_type, changes, kind, severity, ignored }
        : undefined,
    }),
  );
}

/** A record as the API shows it, its time as text (apiTimeOf) and its changes as the database's JSON text (see recordJson). */
export type RecordContent = Omit<ChangeRow, 'changed_at' | 'changes'> & { changed_at: string; changes_text: string };

/** A scanned place: whether the record is selected, its time (exact) to find it by, and its content when selected. */
export interface FeedSelection {
  place: FeedPlace;
  committedAt: Date;
  selected: boolean;
  at: string;
  content: RecordContent | undefined;
}

/** The content columns, read alongside the place (a second lookup by id cost more than the scan). */
const contentColumns = (sql: Sql) =>
  sql`cr.ci_id, cr.ci_name, cr.ci_namespace, cr.ci_type, cr.change_type, cr.kind, cr.severity, cr.ignored,
      cr.changes::text as changes_text`;

/**
 * As scanFeed, for callers that pass records on as JSON text: whether each is selected, its time
 * (exact) to find it by again, and the content of the selected ones, left as text until written.
 */
export async function scanFeedSelection(
  sql: Sql,
  principal: Principal,
  criteria: HistoryFilter,
  after: FeedPlace,
  scan: number,
): Promise<FeedSelection[]> {
  const rows = await sql<
    ({ position: string; record: string; committed_at: Date; selected: boolean; at: string } & Omit<
      RecordContent,
      'id' | 'changed_at'
    >)[]
  >`
    ${scanned(sql, principal, criteria, after, scan, 'selection')}`;
  return rows.map(
    ({
      position,
      record,
      committed_at,
      selected,
      at,
      ci_id,
      ci_name,
      ci_namespace,
      ci_type,
      change_type,
      kind,
      severity,
      ignored,
      changes_text,
    }) => ({
      place: { position, id: record },
      committedAt: committed_at,
      selected,
      at,
      content: selected
        ? {
            id: record,
            ci_id,
            ci_name,
            ci_namespace,
            ci_type,
            changed_at: apiTimeOf(at),
            change_type,
            kind,
            severity,
            ignored,
            changes_text,
          }
        : undefined,
    }),
  );
}

/** One stored field change; its values absent only in records older than the write path's rule of writing them as null. */
interface FieldChangeRow {
  field: string;
  old_value?: unknown;
  new_value?: unknown;
}

/**
 * A record as JSON text, as the API shows it (ChangeRecord). Written here rather than by the
 * database: json_build_object took two thirds of a lookup's time, on the server every writer shares.
 */
export function recordJson(content: RecordContent): string {
  const { id, ci_id, ci_name, ci_namespace, ci_type, changed_at, change_type, kind, severity } = content;
  const changes = (JSON.parse(content.changes_text) as FieldChangeRow[]).map((c) => ({
    field: c.field,
    old_value: c.old_value ?? null,
    new_value: c.new_value ?? null,
  }));
  return JSON.stringify({
    id,
    ci_id,
    ci_name,
    ci_namespace,
    ci_type,
    changed_at,
    change_type,
    kind,
    severity,
    changes,
  });
}

/** Records as JSON text (recordJson), by id and exact time. */
export async function recordsAsJson(
  sql: Sql,
  tenantId: string,
  records: readonly { id: string; at: string }[],
): Promise<Map<string, string>> {
  if (records.length === 0) return new Map();
  const rows = await sql<(Omit<RecordContent, 'changed_at'> & { tenant_id: string; at: string })[]>`
    select cr.id::text as id, cr.tenant_id, u.at, ${contentColumns(sql)}
    from unnest(${records.map((r) => r.id)}::bigint[], ${records.map((r) => r.at)}::text[]) as u(id, at)
    join change_records cr on cr.id = u.id and cr.changed_at = u.at::timestamptz`;
  // the tenant is checked here, not in the join: as a join condition it can steer the planner, on a
  // table whose statistics lag a big load, to a (tenant, …) index read whole for every record
  return new Map(
    rows
      .filter((row) => row.tenant_id === tenantId)
      .map((row) => [row.id, recordJson({ ...row, changed_at: apiTimeOf(row.at) })]),
  );
}
