import { Type, type Static } from '@sinclair/typebox';
import { Readable } from 'node:stream';
import type { Context } from 'koa';
import { csvRows } from '../csv.js';
import { dateWindow } from '../query/date-window.js';
import { decodeCursor, encodeCursor, type CursorBinding } from '../http/cursor.js';
import { notAcceptable, unprocessable } from '../errors.js';
import { defineRoute, type AnyRoute } from '../context.js';
import { ErrorEnvelope, JsonObject, Nullable, Timestamp } from '../http/schemas.js';
import type { Principal } from '../auth/principal.js';
import type { Queryable } from '../db/database.js';
import { AUDIT_EVENT_TYPES } from '../audit/log.js';
import { listAuditEvents, type AuditCriteria, type AuditPosition, type StoredAuditEvent } from '../audit/store.js';

const DateBound = (description: string) =>
  Type.Union([Type.String({ format: 'date-time' }), Type.String({ format: 'date' })], { description });

export const AuditQuery = Type.Object({
  event_type: Type.Optional(Type.Union(AUDIT_EVENT_TYPES.map((t) => Type.Literal(t)))),
  actor_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'A user id or an API key id.' })),
  outcome: Type.Optional(Type.Union([Type.Literal('success'), Type.Literal('failure')])),
  start_date: Type.Optional(DateBound('Inclusive lower bound on the event time: a date-time with offset, or a date (midnight UTC).')),
  end_date: Type.Optional(DateBound('Upper bound: a date-time is inclusive; a date covers that whole day (UTC).')),
  limit: Type.Integer({
    minimum: 1,
    maximum: 1000,
    default: 100,
    description: 'Page size. For `text/csv` the default does not apply: without an explicit `limit` the export holds every match.',
  }),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'Opaque `next_cursor` of the previous page.' })),
});
type AuditQuery = Static<typeof AuditQuery>;

const AuditEventView = Type.Object({
  id: Type.String(),
  occurred_at: Timestamp(),
  event_type: Type.String(),
  outcome: Type.Union([Type.Literal('success'), Type.Literal('failure')]),
  actor: Type.Object({ kind: Type.String(), id: Nullable(Type.String()), name: Nullable(Type.String()) }),
  target: Nullable(Type.Object({ type: Type.String(), id: Type.String(), name: Nullable(Type.String()) })),
  client_address: Nullable(Type.String()),
  user_agent: Nullable(Type.String()),
  request_id: Nullable(Type.String({ description: 'The `error.id` of the error answered, where the event is one.' })),
  details: JsonObject('Event-specific facts (a failure reason, a key hint, the permission that was missing); never a secret.'),
});

const AuditPage = Type.Object({
  items: Type.Array(AuditEventView),
  limit: Type.Integer(),
  has_more: Type.Boolean(),
  next_cursor: Nullable(Type.String()),
});

const EXACT_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

function positionOf(key: unknown[]): AuditPosition {
  const [at, id] = key;
  if (key.length !== 2 || typeof at !== 'string' || !EXACT_TIME.test(at) || typeof id !== 'string' || !/^\d{1,19}$/.test(id)) {
    throw unprocessable('Malformed cursor');
  }
  return [at, id];
}

const present = (row: StoredAuditEvent) => ({
  id: row.id,
  occurred_at: `${row.occurred_at.slice(0, 23)}Z`,
  event_type: row.event_type,
  outcome: row.outcome,
  actor: { kind: row.actor_kind, id: row.actor_id, name: row.actor_name },
  target: row.target_type && row.target_id ? { type: row.target_type, id: row.target_id, name: row.target_name } : null,
  client_address: row.client_address,
  user_agent: row.user_agent,
  request_id: row.request_id,
  details: row.details,
});

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

const CSV = 'text/csv';
const JSON_TYPE = 'application/json';
const CSV_COLUMNS = [
  'id', 'occurred_at', 'event_type', 'outcome', 'actor_kind', 'actor_id', 'actor_name', 'target_type', 'target_id',
  'target_name', 'client_address', 'user_agent', 'request_id', 'details',
] as const;
const EXPORT_BATCH = 1000;

function csvRow(row: StoredAuditEvent): unknown[] {
  return [
    row.id, `${row.occurred_at.slice(0, 23)}Z`, row.event_type, row.outcome, row.actor_kind, row.actor_id, row.actor_name,
    row.target_type, row.target_id, row.target_name, row.client_address, row.user_agent, row.request_id, row.details,
  ];
}

/** Every matching event newest first, read a keyset batch at a time as the client takes them. */
async function* exportRows(sql: Queryable, principal: Principal, criteria: AuditCriteria, limit: number | undefined): AsyncGenerator<string> {
  yield csvRows([CSV_COLUMNS]);
  let after: AuditPosition | undefined;
  let left = limit ?? Infinity;
  while (left > 0) {
    const size = Math.min(EXPORT_BATCH, left);
    const rows = (await listAuditEvents(sql, principal, criteria, { limit: size, after })).slice(0, size);
    if (rows.length === 0) return;
    yield csvRows(rows.map(csvRow));
    left -= rows.length;
    if (rows.length < size) return;
    const last = rows.at(-1)!;
    after = [last.occurred_at, last.id];
  }
}

function negotiate(ctx: Context): typeof CSV | typeof JSON_TYPE {
  ctx.vary('Accept');
  const type = ctx.accepts(JSON_TYPE, CSV);
  if (type === JSON_TYPE || type === CSV) return type;
  throw notAcceptable([JSON_TYPE, CSV]);
}

const listAudit = defineRoute({
  method: 'GET',
  path: '/api/v1/audit-events',
  operationId: 'listAuditEvents',
  summary: 'The security audit log (JSON or CSV)',
  description:
    'Security-relevant events of the tenant, newest first: successful authentications (one per credential and client ' +
    'address per 5 minutes), failed ones (with the reason and a key hint, never the secret), API key and token creation ' +
    'and revocation, permission denials (with the `error.id` answered), credential reveals, user creation, deactivation, ' +
    'reactivation and promotion, grant and membership changes. Changes of rights and credentials are written with the ' +
    'change itself; authentications and denials within about a second. Events about a source are listed only to readers ' +
    'whose data scopes include it. ' +
    'Cursor-paged: follow `next_cursor` while `has_more` is true; a cursor is bound to the filters it was issued for. ' +
    '`Accept: text/csv` streams every match (or at most an explicit `limit`) with the same filters; `details` is JSON ' +
    'text, and a text cell starting with `=`, `+`, `-`, `@`, TAB or CR (a user agent, a name) is prefixed with `\'` so ' +
    'that spreadsheets do not run it as a formula. Kept for CINV_AUDIT_RETENTION (default 365 days).',
  tags: ['Audit'],
  access: { resource: 'audit', action: 'read' },
  query: AuditQuery,
  responses: {
    200: {
      description: 'A page of audit events, or the CSV download.',
      schema: AuditPage,
      otherContent: { [CSV]: { description: 'RFC 4180 CSV, UTF-8, streamed; one row per event; formula-like text cells prefixed with `\'`.' } },
    },
    406: { description: 'The Accept header names no type this route serves (`HTTP_406`).', schema: ErrorEnvelope },
  },
  async handler({ ctx, app, principal, query }) {
    const type = negotiate(ctx);
    const criteria = criteriaOf(query);
    const binding: CursorBinding = {
      tenantId: principal.tenantId,
      scope: 'audit-events',
      sort: null,
      filters: { ...criteria },
    };
    if (type === CSV) {
      const explicitLimit = ctx.query.limit !== undefined ? query.limit : undefined;
      ctx.attachment(`audit-${app.now().toISOString().replace(/\.\d+Z$/, 'Z').replace(/[-:]/g, '')}.csv`);
      ctx.type = 'text/csv; charset=utf-8';
      ctx.body = Readable.from(exportRows(app.sql, principal, criteria, explicitLimit));
      return undefined;
    }
    const after = query.cursor ? positionOf(decodeCursor(app.config.secret, query.cursor, binding).key) : undefined;
    const rows = await listAuditEvents(app.sql, principal, criteria, { limit: query.limit, after });
    const hasMore = rows.length > query.limit;
    const items = rows.slice(0, query.limit);
    const last = items.at(-1);
    return {
      items: items.map(present),
      limit: query.limit,
      has_more: hasMore,
      next_cursor: hasMore && last ? encodeCursor(app.config.secret, binding, [last.occurred_at, last.id]) : null,
    };
  },
});

export const auditRoutes: AnyRoute[] = [listAudit];
