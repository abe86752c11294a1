import type { Sql } from 'postgres';
import type { Queryable } from '../db/database.js';
import type { Principal } from '../auth/principal.js';
import { historyConditions, recordColumns, type ChangeRow, type HistoryFilter } from './store.js';

/**
 * A place in the change feed: the position of a committed transaction (sql/0025) and the id of the
 * last record of it already read (0 when none). The feed is ordered by (position, id).
 */
export interface FeedPlace {
  position: string;
  id: string;
}

/** Where the feed ends now: the place after every record committed so far. */
export async function feedEnd(sql: Queryable): Promise<FeedPlace> {
  const [row] = await sql<{ position: string | null }[]>`select max(position)::text as position from change_feed`;
  return { position: row?.position ?? '0', id: '9223372036854775807' };
}

/** One record scanned: its place, and the record when the principal may see it and the criteria select it. */
export interface FeedEntry {
  place: FeedPlace;
  /** When the record's transaction committed. */
  committedAt: Date;
  record: ChangeRow | undefined;
}

/**
 * The next `scan` records after `after` in feed order, each with whether the principal may see it
 * and the criteria select it (only those carry their content). The caller's place moves over the
 * records left out too, so the cost of a read is bounded however few of them match.
 */
export async function scanFeed(sql: Sql, principal: Principal, criteria: HistoryFilter, after: FeedPlace, scan: number): Promise<FeedEntry[]> {
  const rows = await sql<(ChangeRow & { position: string; record: string; selected: boolean; committed_at: Date })[]>`
    with scanned as (
      select f.position, f.committed_at, r.id, r.changed_at
      from (select position, txid, committed_at from change_feed where position >= ${after.position}::bigint order by position limit ${scan}) f
      cross join lateral (
        select cr.id, cr.changed_at from change_records cr
        where cr.txid = f.txid and (f.position > ${after.position}::bigint or cr.id > ${after.id}::bigint)
        order by cr.id limit ${scan}
      ) r
      order by f.position, r.id
      limit ${scan}
    )
    select x.position, x.record, x.selected, x.committed_at, x.id, x.ci_id, x.ci_name, x.ci_namespace, x.ci_type, x.changed_at, x.change_type,
           case when x.selected then x.changes end as changes
    from (
      select s.position::text as position, s.id::text as record, s.committed_at, ${historyConditions(sql, principal, criteria)} as selected, ${recordColumns(sql)}
      from scanned s join change_records cr on cr.id = s.id and cr.changed_at = s.changed_at
    ) x
    order by x.position::bigint, x.record::bigint`;
  return rows.map(({ position, record, selected, committed_at, id, ci_id, ci_name, ci_namespace, ci_type, changed_at, change_type, changes }) => ({
    place: { position, id: record },
    committedAt: committed_at,
    record: selected ? { id, ci_id, ci_name, ci_namespace, ci_type, changed_at, change_type, changes } : undefined,
  }));
}
