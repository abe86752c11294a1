import type { Principal } from '../../platform/auth/principal.js';
import {
  listAuditEvents,
  type AuditCriteria,
  type AuditPosition,
  type StoredAuditEvent,
} from '../../platform/audit/store.js';
import type { AppContext } from '../../context.js';
import { unprocessable } from '../../platform/errors.js';
import { decodeCursor, encodeCursor, type CursorBinding } from '../../platform/http/cursor.js';
import { dateWindow } from '../../platform/query/date-window.js';
import type { AuditQuery } from './schema.js';
import { isExactTime } from '../../platform/query/exact-time.js';

export type { StoredAuditEvent } from '../../platform/audit/store.js';

const EXPORT_BATCH = 1000;

function positionOf(key: unknown[]): AuditPosition {
  const [at, id] = key;
  if (key.length !== 2 || !isExactTime(at) || typeof id !== 'string' || !/^\d{1,19}$/.test(id)) {
    throw unprocessable('Malformed cursor');
  }
  return [at, id];
}

function criteriaOf(query: AuditQuery): AuditCriteria {
  const window = dateWindow(query.start_date, query.end_date);
  return {
    eventType: query.event_type,
    actorId: query.actor_id,
    outcome: query.outcome,
    from: window.from,
    until: window.until,
    untilExclusive: window.untilExclusive,
  };
}

/** A cursor is bound to the tenant and the filters it was issued for. */
const bindingOf = (principal: Principal, criteria: AuditCriteria): CursorBinding => ({
  tenantId: principal.tenantId,
  reader: principal,
  scope: 'audit-events',
  sort: null,
  filters: { ...criteria },
});

export interface AuditPage {
  rows: StoredAuditEvent[];
  hasMore: boolean;
  nextCursor: string | null;
}

/** One cursor page of the audit events the principal may read, newest first. */
export async function auditEventPage(app: AppContext, principal: Principal, query: AuditQuery): Promise<AuditPage> {
  const criteria = criteriaOf(query);
  const binding = bindingOf(principal, criteria);
  const after = query.cursor ? positionOf(decodeCursor(app.config.secret, query.cursor, binding).key) : undefined;
  const rows = await listAuditEvents(app.sql, principal, criteria, { limit: query.limit, after });
  const hasMore = rows.length > query.limit;
  const items = rows.slice(0, query.limit);
  const last = items.at(-1);
  return {
    rows: items,
    hasMore,
    nextCursor: hasMore && last ? encodeCursor(app.config.secret, binding, [last.occurred_at, last.id]) : null,
  };
}

/**
 * Every matching event newest first (at most `limit`), read a keyset batch at a time as the caller
 * takes them: each batch is its own short query, so nothing stays open when a client goes away.
 */
export function auditEventBatches(
  app: AppContext,
  principal: Principal,
  query: AuditQuery,
  limit: number | undefined,
): AsyncGenerator<StoredAuditEvent[]> {
  // the query is checked now, while its refusal can still be an answer: not once the stream has begun
  return batchesOf(app, principal, criteriaOf(query), limit);
}

async function* batchesOf(
  app: AppContext,
  principal: Principal,
  criteria: AuditCriteria,
  limit: number | undefined,
): AsyncGenerator<StoredAuditEvent[]> {
  let after: AuditPosition | undefined;
  let left = limit ?? Infinity;
  while (left > 0) {
    const size = Math.min(EXPORT_BATCH, left);
    const rows = (await listAuditEvents(app.sql, principal, criteria, { limit: size, after })).slice(0, size);
    if (rows.length === 0) return;
    yield rows;
    left -= rows.length;
    if (rows.length < size) return;
    const last = rows.at(-1)!;
    after = [last.occurred_at, last.id];
  }
}
