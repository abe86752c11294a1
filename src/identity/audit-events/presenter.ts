import type { StoredAuditEvent } from '../../platform/audit/store.js';

/** Milliseconds and a Z: the stored text carries microseconds and an offset. */
const eventTime = (row: StoredAuditEvent): string => `${row.occurred_at.slice(0, 23)}Z`;

export const presentAuditEvent = (row: StoredAuditEvent) => ({
  id: row.id,
  occurred_at: eventTime(row),
  event_type: row.event_type,
  outcome: row.outcome,
  actor: { kind: row.actor_kind, id: row.actor_id, name: row.actor_name },
  target: row.target_type && row.target_id ? { type: row.target_type, id: row.target_id, name: row.target_name } : null,
  client_address: row.client_address,
  user_agent: row.user_agent,
  request_id: row.request_id,
  details: row.details,
});

export const AUDIT_CSV_COLUMNS = [
  'id',
  'occurred_at',
  'event_type',
  'outcome',
  'actor_kind',
  'actor_id',
  'actor_name',
  'target_type',
  'target_id',
  'target_name',
  'client_address',
  'user_agent',
  'request_id',
  'details',
] as const;

/** One CSV row, in the order of AUDIT_CSV_COLUMNS. */
export function auditCsvRow(row: StoredAuditEvent): unknown[] {
  return [
    row.id,
    eventTime(row),
    row.event_type,
    row.outcome,
    row.actor_kind,
    row.actor_id,
    row.actor_name,
    row.target_type,
    row.target_id,
    row.target_name,
    row.client_address,
    row.user_agent,
    row.request_id,
    row.details,
  ];
}
