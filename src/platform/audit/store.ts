import type { Principal } from '../auth/principal.js';
import { asJson, type Queryable, type Sql } from '../db/database.js';
import { AUDIT_EVENTS, dropPartitionsBefore } from '../db/partitions.js';

/** One audit event as it is written. */
export interface AuditRow {
  tenant_id: string;
  occurred_at: string;
  event_type: string;
  outcome: 'success' | 'failure';
  actor_kind: string;
  actor_id: string | null;
  actor_name: string | null;
  target_type: string | null;
  target_id: string | null;
  target_name: string | null;
  client_address: string | null;
  user_agent: string | null;
  request_id: string | null;
  details: Record<string, unknown>;
}

/** One audit event as it is read: `occurred_at` with microseconds (the keyset position). */
export interface StoredAuditEvent extends Omit<AuditRow, 'tenant_id'> {
  id: string;
}

export async function insertAuditEvents(sql: Queryable, rows: readonly AuditRow[]): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    insert into audit_events (tenant_id, occurred_at, event_type, outcome, actor_kind, actor_id, actor_name, target_type,
                              target_id, target_name, client_address, user_agent, request_id, details)
    select tenant_id, occurred_at, event_type, outcome, actor_kind, actor_id, actor_name, target_type,
           target_id, target_name, client_address, user_agent, request_id, details
    from jsonb_to_recordset(${sql.json(asJson(rows))}::jsonb) as r(
      tenant_id uuid, occurred_at timestamptz, event_type text, outcome text, actor_kind text, actor_id text,
      actor_name text, target_type text, target_id text, target_name text, client_address text, user_agent text,
      request_id text, details jsonb)`;
}

export interface AuditCriteria {
  eventType?: string;
  actorId?: string;
  outcome?: string;
  /** Inclusive lower bound (ISO 8601). */
  from?: string;
  /** Upper bound; `untilExclusive` says whether it is included. */
  until?: string;
  untilExclusive?: boolean;
}

/** `[occurred_at with microseconds, id]` of the last event handed out. */
export type AuditPosition = [string, string];

/**
 * A page newest first, by (occurred_at, id) descending; `limit + 1` rows are asked for so the
 * caller knows whether more follow. Each filter has an index that starts with it after the tenant.
 */
export function listAuditEvents(
  sql: Queryable,
  reader: Principal,
  criteria: AuditCriteria,
  page: { limit: number; after?: AuditPosition },
): Promise<StoredAuditEvent[]> {
  const { eventType, actorId, outcome, from, until } = criteria;
  const tenantId = reader.tenantId;
  return sql<StoredAuditEvent[]>`
    select id::text, to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as occurred_at,
           event_type, outcome, actor_kind, actor_id, actor_name, target_type, target_id, target_name,
           client_address, user_agent, request_id, details
    from audit_events
    where tenant_id = ${tenantId}
      ${eventType === undefined ? sql`` : sql`and event_type = ${eventType}`}
      ${actorId === undefined ? sql`` : sql`and actor_id = ${actorId}`}
      ${outcome === undefined ? sql`` : sql`and outcome = ${outcome}`}
      ${from === undefined ? sql`` : sql`and occurred_at >= ${from}::text::timestamptz`}
      ${until === undefined ? sql`` : criteria.untilExclusive ? sql`and occurred_at < ${until}::text::timestamptz` : sql`and occurred_at <= ${until}::text::timestamptz`}
      ${page.after === undefined ? sql`` : sql`and (occurred_at, id) < (${page.after[0]}::text::timestamptz, ${page.after[1]}::bigint)`}
      ${aboutVisibleSources(sql, reader)}
    order by occurred_at desc, id desc
    limit ${page.limit + 1}`;
}

/**
 * Events about a source (credential reveals) follow the reader's data scopes like the sources
 * themselves: a reader limited to some sources does not learn of the others through the log.
 */
function aboutVisibleSources(sql: Queryable, reader: Principal) {
  if (reader.superadmin || reader.scopes === 'all') return sql``;
  const named = [...new Set(reader.scopes.flatMap((s) => (s.sourceId === null ? [] : [s.sourceId])))];
  return sql`and (target_type is distinct from 'source' or target_id = any(${named}::text[]))`;
}

/** Removes events older than the retention, a batch at a time; returns how many went. */
export async function trimAuditEvents(sql: Sql, before: Date, batchSize: number): Promise<number> {
  // whole expired months go at once; the month holding the horizon is trimmed row by row
  let removed = (await dropPartitionsBefore(sql, AUDIT_EVENTS, before)).rows;
  for (;;) {
    const rows = await sql`
      delete from audit_events where (id, occurred_at) in (
        select id, occurred_at from audit_events where occurred_at < ${before} order by occurred_at limit ${batchSize})
      returning 1`;
    removed += rows.length;
    if (rows.length < batchSize) return removed;
  }
}
