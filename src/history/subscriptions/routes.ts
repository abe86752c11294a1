import { defineRoute, type AnyRoute } from '../../context.js';
import { ErrorEnvelope } from '../../platform/http/schemas.js';
import { deliveriesOf, redeliverBatch } from './delivery-log.js';
import { sendTestMessage } from './messages.js';
import { presentDelivery, presentSubscription } from './presenter.js';
import {
  Delivery,
  DeliveryList,
  DeliveryParams,
  DeliveryQuery,
  RotateSecretInput,
  Subscription,
  SubscriptionInput,
  SubscriptionList,
  SubscriptionParams,
  SubscriptionWithSecret,
  TestResult,
} from './schema.js';
import { rotateSigningSecret } from './secrets.js';
import {
  createSubscription,
  removeSubscription,
  replaceSubscription,
  subscriptionOf,
  subscriptionsOf,
} from './service.js';

const tags = ['Change subscriptions'];
const read = { resource: 'subscriptions', action: 'read' } as const;
const write = { resource: 'subscriptions', action: 'write' } as const;
const notFound = {
  404: {
    description:
      'No such subscription in the tenant, or one the caller may not see (`HTTP_404`, as if absent: see the access rule above).',
    schema: ErrorEnvelope,
  },
};

const ACCESS =
  'A subscription is seen and acted on (read, listed, its deliveries read, changed, tested, its secret rotated, a batch ' +
  "redelivered, deleted) only by its owner, or by a principal whose rights cover the owner's as they are now: a " +
  "superadmin, or one holding every permission and data scope the owner holds (the grant ceiling's measure). An owner " +
  'revoked, expired or deactivated is taken to hold everything. To anybody else it answers 404, as if absent.';
const conflicts = {
  409: {
    description:
      'The name is taken in the tenant, or the server holds no CINV_MASTER_KEY to seal the secret (`HTTP_409`).',
    schema: ErrorEnvelope,
  },
};

const DELIVERY =
  'Each subscription follows the change feed (`GET /changes/feed`) from the moment it was created and delivers, in batches, ' +
  "the change records its owner may read at the moment each batch is cut (the owner's tenant, data scopes and " +
  '`changes:read` as they are then), that its `filter` and `search` select. Batches go out one after the other, in commit ' +
  'order (so those of one CI in the order they were written), at least once: a batch is retried with exponential backoff ' +
  'and jitter (about 1 s, 2 s, 4 s … up to an hour) before any later one goes, for CINV_SUBSCRIPTION_RETRY_WINDOW (24 h); ' +
  'then it is dead-lettered (`dead` in the deliveries, redeliverable) and the subscription is `failing` until a batch ' +
  'succeeds. A 2xx is success; 410 Gone disables the subscription (`gone`); anything else, a timeout ' +
  '(CINV_WEBHOOK_TIMEOUT, 10 s) or a refused connection is retried. An owner revoked, deactivated or without ' +
  '`changes:read` pauses it (`paused`) until it may read again.\n\n' +
  'Webhooks follow Standard Webhooks: `webhook-id` (the same on every attempt of a batch: deduplicate on it), ' +
  "`webhook-timestamp` (seconds), `webhook-signature` (`v1,` and base64 of HMAC-SHA256 with the secret's bytes over " +
  "`<webhook-id>.<webhook-timestamp>.<body>`; during a secret's rotation one signature per valid secret, space-separated). " +
  'A NATS sink publishes the same body to its subject through JetStream with `Nats-Msg-Id` set to the same id, and counts ' +
  'a batch delivered on the stream\'s acknowledgement. The body is a `SubscriptionBatch`: `{type: "cinv.changes", ' +
  'timestamp, data: {subscription_id, sequence, records}}`, at most CINV_SUBSCRIPTION_BATCH_RECORDS (500) records and ' +
  'about CINV_SUBSCRIPTION_BATCH_BYTES (1 MiB).';

const list = defineRoute({
  method: 'GET',
  path: '/api/v1/subscriptions',
  operationId: 'listSubscriptions',
  summary: 'List change subscriptions',
  description: `The tenant's subscriptions the caller may see, by name. Secrets and header values are never shown.\n\n${ACCESS}`,
  tags,
  access: read,
  responses: { 200: { description: 'The subscriptions.', schema: SubscriptionList } },
  async handler({ app, principal }) {
    return { items: (await subscriptionsOf(app, principal)).map((row) => presentSubscription(row, app.now())) };
  },
});

const create = defineRoute({
  method: 'POST',
  path: '/api/v1/subscriptions',
  operationId: 'createSubscription',
  summary: 'Subscribe a webhook or a NATS subject to changes',
  description:
    `${DELIVERY}\n\nThe caller becomes the owner and needs \`changes:read\` (403). The signing secret is generated and ` +
    "returned in this answer only; it is stored sealed with the tenant's data key, like source credentials. A sink URL " +
    'refused by the endpoint guard or holding credentials is a 422; a malformed filter is a 400 (`INVALID_FILTER`, as on ' +
    '`GET /changes`), a malformed search as there. The payload delivered is documented as the ' +
    '`SubscriptionBatch` schema.',
  tags,
  access: write,
  body: SubscriptionInput,
  responses: {
    201: { description: 'The subscription, with its signing secret.', schema: SubscriptionWithSecret },
    ...conflicts,
  },
  async handler({ ctx, app, principal, body }) {
    const { row, secret } = await createSubscription(app, ctx, principal, body);
    ctx.status = 201;
    return { ...presentSubscription(row, app.now()), secret };
  },
});

const show = defineRoute({
  method: 'GET',
  path: '/api/v1/subscriptions/{id}',
  operationId: 'getSubscription',
  summary: 'One change subscription',
  description: `Secrets and header values are never shown.\n\n${ACCESS}`,
  tags,
  access: read,
  params: SubscriptionParams,
  responses: { 200: { description: 'The subscription.', schema: Subscription }, ...notFound },
  async handler({ app, principal, params }) {
    return presentSubscription(await subscriptionOf(app, principal, params.id), app.now());
  },
});

const replace = defineRoute({
  method: 'PUT',
  path: '/api/v1/subscriptions/{id}',
  operationId: 'replaceSubscription',
  summary: 'Change a subscription',
  description:
    'Replaces name, sink (header values included: omitted headers are dropped), filter, search and enabled. Whoever ' +
    'changes a subscription becomes its owner, so it then delivers what they may read (and they need `changes:read`). ' +
    'When the owner changes, batches cut for the previous owner and not yet delivered are set aside (`dead`, never sent) ' +
    "and their records cut again with the new owner's rights under new sequence numbers. " +
    'The signing secret and the place in the feed stay; enabling a `gone` or `paused` subscription makes it `active` and ' +
    `sends its pending batch first.\n\n${ACCESS}`,
  tags,
  access: write,
  params: SubscriptionParams,
  body: SubscriptionInput,
  responses: { 200: { description: 'The subscription.', schema: Subscription }, ...notFound, ...conflicts },
  async handler({ ctx, app, principal, params, body }) {
    return presentSubscription(await replaceSubscription(app, ctx, principal, params.id, body), app.now());
  },
});

const remove = defineRoute({
  method: 'DELETE',
  path: '/api/v1/subscriptions/{id}',
  operationId: 'deleteSubscription',
  summary: 'Delete a subscription',
  description: `With its deliveries and their log.\n\n${ACCESS}`,
  tags,
  access: write,
  params: SubscriptionParams,
  responses: { 204: { description: 'Deleted.' }, ...notFound },
  async handler({ ctx, app, principal, params }) {
    await removeSubscription(app, ctx, principal, params.id);
    ctx.status = 204;
    return undefined;
  },
});

const rotate = defineRoute({
  method: 'POST',
  path: '/api/v1/subscriptions/{id}/rotate-secret',
  operationId: 'rotateSubscriptionSecret',
  summary: 'Rotate the signing secret',
  description:
    'A new secret, returned in this answer only. For `overlap_seconds` (default a day) every delivery is signed with both ' +
    `secrets, so the receiver can switch without losing a batch.\n\n${ACCESS}`,
  tags,
  access: write,
  params: SubscriptionParams,
  body: RotateSecretInput,
  responses: {
    200: { description: 'The subscription, with its new secret.', schema: SubscriptionWithSecret },
    ...notFound,
    ...conflicts,
  },
  async handler({ ctx, app, principal, params, body }) {
    const { row, secret } = await rotateSigningSecret(app, ctx, principal, params.id, body.overlap_seconds ?? 86_400);
    return { ...presentSubscription(row, app.now()), secret };
  },
});

const deliveries = defineRoute({
  method: 'GET',
  path: '/api/v1/subscriptions/{id}/deliveries',
  operationId: 'listSubscriptionDeliveries',
  summary: 'The delivery log of a subscription',
  description:
    'Newest batch first: its status, attempts, the last answer (status and time) or error, and the next attempt. Errors are ' +
    `as coarse as the test's (see \`POST .../test\`).\n\n${ACCESS}`,
  tags,
  access: read,
  params: SubscriptionParams,
  query: DeliveryQuery,
  responses: { 200: { description: 'A page of deliveries.', schema: DeliveryList }, ...notFound },
  async handler({ app, principal, params, query }) {
    const page = await deliveriesOf(app, principal, params.id, query);
    return { items: page.rows.map(presentDelivery), next_cursor: page.nextCursor };
  },
});

const again = defineRoute({
  method: 'POST',
  path: '/api/v1/subscriptions/{id}/deliveries/{delivery_id}/redeliver',
  operationId: 'redeliverSubscriptionBatch',
  summary: 'Send a batch again',
  description:
    'Puts a delivered or dead-lettered batch back in line, with the same body and `webhook-id` and a new retry window; ' +
    "it goes out before any later pending batch. Only a batch cut for the subscription's present owner: one cut with " +
    `a previous owner's rights is refused (409, reason \`other_owner\`).\n\n${ACCESS}`,
  tags,
  access: write,
  params: DeliveryParams,
  responses: {
    200: { description: 'The delivery, pending.', schema: Delivery },
    404: {
      description:
        'No such subscription or delivery, or a subscription the caller may not see (`HTTP_404`, as if absent).',
      schema: ErrorEnvelope,
    },
    409: { description: 'The batch was cut for a previous owner (`reason: other_owner`).', schema: ErrorEnvelope },
  },
  async handler({ app, principal, params }) {
    return presentDelivery(await redeliverBatch(app, principal, params.id, params.delivery_id));
  },
});

const test = defineRoute({
  method: 'POST',
  path: '/api/v1/subscriptions/{id}/test',
  operationId: 'testSubscription',
  summary: 'Send a signed sample message',
  description:
    'Sends `{type: "cinv.test", timestamp, data: {subscription_id, sequence: 0, records: []}}`, signed like every batch, ' +
    'now, and answers how the receiver took it. Nothing is recorded in the deliveries.\n\n' +
    'The answer is coarse: `delivered`, and otherwise one error for a refused or reset connection, a timeout, an answer ' +
    'that is not HTTP and a withheld status alike (the server log has the detail). `response_status` is given only when ' +
    'the receiver answered from a public address or from a host or network CINV_SOURCE_ALLOWED_HOSTS lists; a loopback or ' +
    'private receiver keeps its status to the server log, so that webhooks cannot map which internal ports listen.\n\n' +
    ACCESS,
  tags,
  access: write,
  params: SubscriptionParams,
  responses: { 200: { description: 'How the receiver answered.', schema: TestResult }, ...notFound, ...conflicts },
  async handler({ app, principal, params }) {
    const result = await sendTestMessage(app, principal, params.id);
    return { delivered: result.ok, response_status: result.status, response_ms: result.ms, error: result.error };
  },
});

export const subscriptionRoutes: AnyRoute[] = [list, create, show, replace, remove, rotate, deliveries, again, test];
