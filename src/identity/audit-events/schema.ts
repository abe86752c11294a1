import { Type, type Static } from '@sinclair/typebox';
import { AUDIT_EVENT_TYPES } from '../../platform/audit/log.js';
import { JsonObject, Nullable, Timestamp } from '../../platform/http/schemas.js';

const DateBound = (description: string) =>
  Type.Union([Type.String({ format: 'date-time' }), Type.String({ format: 'date' })], { description });

export const AuditQuery = Type.Object({
  event_type: Type.Optional(Type.Union(AUDIT_EVENT_TYPES.map((t) => Type.Literal(t)))),
  actor_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'A user id or an API key id.' })),
  outcome: Type.Optional(Type.Union([Type.Literal('success'), Type.Literal('failure')])),
  start_date: Type.Optional(
    DateBound('Inclusive lower bound on the event time: a date-time with offset, or a date (midnight UTC).'),
  ),
  end_date: Type.Optional(DateBound('Upper bound: a date-time is inclusive; a date covers that whole day (UTC).')),
  limit: Type.Integer({
    minimum: 1,
    maximum: 1000,
    default: 100,
    description:
      'Page size. For `text/csv` the default does not apply: without an explicit `limit` the export holds every match.',
  }),
  cursor: Type.Optional(
    Type.String({ minLength: 1, maxLength: 2048, description: 'Opaque `next_cursor` of the previous page.' }),
  ),
});
export type AuditQuery = Static<typeof AuditQuery>;

export const AuditEventView = Type.Object({
  id: Type.String(),
  occurred_at: Timestamp(),
  event_type: Type.String(),
  outcome: Type.Union([Type.Literal('success'), Type.Literal('failure')]),
  actor: Type.Object({ kind: Type.String(), id: Nullable(Type.String()), name: Nullable(Type.String()) }),
  target: Nullable(Type.Object({ type: Type.String(), id: Type.String(), name: Nullable(Type.String()) })),
  client_address: Nullable(Type.String()),
  user_agent: Nullable(Type.String()),
  request_id: Nullable(Type.String({ description: 'The `error.id` of the error answered, where the event is one.' })),
  details: JsonObject(
    'Event-specific facts (a failure reason, a key hint, the permission that was missing); never a secret.',
  ),
});

export const AuditPage = Type.Object({
  items: Type.Array(AuditEventView),
  limit: Type.Integer(),
  has_more: Type.Boolean(),
  next_cursor: Nullable(Type.String()),
});
