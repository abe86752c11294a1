import { Type, type Static } from '@sinclair/typebox';
import { Filters, HumanName, Limit, Nullable, NumericId, Timestamp, Uuid } from '../../platform/http/schemas.js';
import { ChangeRecord } from '../changes/schema.js';

const HeaderName = Type.String({ pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$" });

export const WebhookSink = Type.Object(
  {
    type: Type.Literal('webhook'),
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        "An http(s) URL, checked like a source's endpoint (CINV_SOURCE_ALLOW_PRIVATE, CINV_SOURCE_ALLOWED_HOSTS) when saved and " +
        'at every connection. Redirects are not followed: a 3xx answer is a failed attempt. It may not hold credentials ' +
        '(`user:password@`): give them as `headers`, which are kept sealed. Query values are never shown back.',
    }),
    headers: Type.Optional(
      Type.Record(HeaderName, Type.String({ maxLength: 4096 }), {
        maxProperties: 20,
        description:
          'Extra request headers (an Authorization, say). Stored sealed; answers name them without their values.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const NatsSink = Type.Object(
  {
    type: Type.Literal('nats'),
    url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'A NATS server, `nats://host:port`, with JetStream; checked like a webhook URL, without credentials.',
    }),
    subject: Type.String({
      pattern: '^[A-Za-z0-9_$-]+(\\.[A-Za-z0-9_$-]+)*$',
      maxLength: 255,
      description: 'The subject each batch is published to; a JetStream stream must capture it.',
    }),
  },
  { additionalProperties: false },
);

export const SubscriptionInput = Type.Object(
  {
    name: HumanName(),
    sink: Type.Union([WebhookSink, NatsSink]),
    filter: Type.Optional(
      Filters('As on `GET /changes`: change_type, ci_type, ci_name, changed_at, ci_id, kind, severity, changed_field.'),
    ),
    search: Type.Optional(
      Type.String({ minLength: 1, maxLength: 500, description: 'The change search language, as on `GET /changes`.' }),
    ),
    quality_alerts: Type.Optional(
      Type.Boolean({
        default: false,
        description:
          "Also deliver `cinv.quality` messages: a data-quality score (overall or a measure's, as the owner sees them) " +
          "falling below the tenant's `alert_below`, or back above it (docs/quality.md).",
      }),
    ),
    enabled: Type.Optional(Type.Boolean({ default: true })),
  },
  { additionalProperties: false },
);
export type SubscriptionInput = Static<typeof SubscriptionInput>;

export const SubscriptionParams = Type.Object({ id: Uuid() });

export const Subscription = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    sink: Type.Object({
      type: Type.Union([Type.Literal('webhook'), Type.Literal('nats')]),
      url: Type.String({ description: 'As given, with the values of its query replaced by `***`.' }),
      subject: Type.Optional(Type.String()),
      header_names: Type.Optional(Type.Array(Type.String())),
    }),
    filter: Type.Array(Type.String()),
    search: Nullable(Type.String()),
    quality_alerts: Type.Boolean(),
    enabled: Type.Boolean(),
    state: Type.Union(
      ['active', 'failing', 'paused', 'gone'].map((s) => Type.Literal(s)),
      {
        description:
          '`active`; `failing`: a batch was dead-lettered since the last delivery that succeeded; `paused`: the owner may no ' +
          'longer read changes (deactivated, revoked, rights taken away), resumed once it may; `gone`: the receiver answered 410 ' +
          'and the subscription was disabled.',
      },
    ),
    state_reason: Nullable(Type.String()),
    owner: Type.Object({
      kind: Type.Union([Type.Literal('api_key'), Type.Literal('user')]),
      id: Uuid(),
      name: Type.String(),
    }),
    secret_rotating_until: Nullable(Timestamp('While set, deliveries are signed with the previous secret too.')),
    created_at: Timestamp(),
    updated_at: Timestamp(),
  },
  { title: 'Subscription' },
);

export const SubscriptionWithSecret = Type.Intersect([
  Subscription,
  Type.Object({ secret: Type.String({ description: 'The signing secret (`whsec_...`), shown this once.' }) }),
]);

export const SubscriptionList = Type.Object({ items: Type.Array(Subscription) }, { title: 'SubscriptionList' });

export const RotateSecretInput = Type.Object(
  {
    overlap_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 7 * 86_400,
        default: 86_400,
        description: 'How long the previous secret keeps signing beside the new one.',
      }),
    ),
  },
  { additionalProperties: false },
);

export const DELIVERY_STATUSES = ['pending', 'delivered', 'dead'] as const;

export const Delivery = Type.Object(
  {
    id: Type.String(),
    sequence: Type.Integer({ description: "The batch's number within the subscription, from 1, in delivery order." }),
    message_id: Type.String({ description: 'The `webhook-id` (and `Nats-Msg-Id`): the same for every attempt.' }),
    records: Type.Integer(),
    status: Type.Union(DELIVERY_STATUSES.map((s) => Type.Literal(s))),
    attempts: Type.Integer(),
    response_status: Nullable(Type.Integer()),
    response_ms: Nullable(Type.Integer()),
    error: Nullable(Type.String()),
    last_attempt_at: Nullable(Timestamp()),
    next_attempt_at: Nullable(Timestamp()),
    created_at: Timestamp(),
    delivered_at: Nullable(Timestamp()),
  },
  { title: 'SubscriptionDelivery' },
);

export const DeliveryQuery = Type.Object({
  limit: Limit(50, 500),
  cursor: Type.Optional(NumericId('Continue before this delivery id: `next_cursor` of the previous page')),
  status: Type.Optional(Type.Union(DELIVERY_STATUSES.map((s) => Type.Literal(s)))),
});
export type DeliveryQuery = Static<typeof DeliveryQuery>;

export const DeliveryList = Type.Object(
  { items: Type.Array(Delivery), next_cursor: Nullable(Type.String()) },
  { title: 'SubscriptionDeliveryList' },
);

export const DeliveryParams = Type.Object({ id: Uuid(), delivery_id: NumericId('The delivery id') });

export const TestResult = Type.Object(
  {
    delivered: Type.Boolean(),
    response_status: Nullable(Type.Integer()),
    response_ms: Type.Integer(),
    error: Nullable(Type.String()),
  },
  { title: 'SubscriptionTestResult' },
);

/** The body of every batch delivered (webhook body, NATS message data). */
export const BatchPayload = Type.Object(
  {
    type: Type.Union([Type.Literal('cinv.changes'), Type.Literal('cinv.test')]),
    timestamp: Timestamp('When the batch was cut from the feed.'),
    data: Type.Object({
      subscription_id: Uuid(),
      sequence: Type.Integer({
        description:
          "The batch's number within the subscription (0 for a test message), rising by one per batch cut. A number is skipped " +
          "only when the subscription changed owner: the previous owner's undelivered batches were set aside and their records " +
          'come again under new numbers.',
      }),
      records: Type.Array(ChangeRecord, {
        description: 'In commit order; those of one CI in the order they were written.',
      }),
    }),
  },
  { title: 'SubscriptionBatch' },
);
