import { uuidv7 } from 'uuidv7';
import type { Principal } from '../../platform/auth/principal.js';
import type { AppContext } from '../../context.js';
import { ownerPrincipal } from './access.js';
import { sendOptionsOf } from './receivers.js';
import { targetOf } from './secrets.js';
import { subscriptionOf } from './service.js';
import { NatsConnections, send, type SendResult } from './sinks.js';
import type { SubscriptionRow } from './store.js';

export const messageIdOf = (subscriptionId: string, sequence: string) =>
  `msg_${subscriptionId.replace(/-/g, '')}_${sequence}`;

/** A message's body: the records are JSON texts already (written once for every subscription). */
export function messageBody(
  type: 'cinv.changes' | 'cinv.test',
  now: Date,
  subscriptionId: string,
  sequence: string,
  records: readonly string[],
): string {
  return (
    `{"type":${JSON.stringify(type)},"timestamp":${JSON.stringify(now.toISOString())},` +
    `"data":{"subscription_id":${JSON.stringify(subscriptionId)},"sequence":${sequence},"records":[${records.join(',')}]}}`
  );
}

/**
 * What a failed send did exactly, for the server log: clients see only the coarse `error` (see
 * NOT_TAKEN in sinks.ts). Neither the URL (its query may hold a token) nor a header or secret.
 */
export function logFailure(
  app: AppContext,
  row: SubscriptionRow,
  result: SendResult,
  about: Record<string, string>,
): void {
  app.logger.warn(
    { subscription_id: row.id, sink: row.sink.type, ...about, detail: result.detail, response_ms: result.ms },
    'subscription message not delivered',
  );
}

/**
 * Sends a signed sample message (`cinv.test`, no records) at once and says how the receiver answered,
 * as coarsely as the deliveries log does.
 */
export async function sendTestMessage(app: AppContext, principal: Principal, id: string): Promise<SendResult> {
  const row = await subscriptionOf(app, principal, id);
  const body = messageBody('cinv.test', app.now(), row.id, '0', []);
  const nats = new NatsConnections();
  try {
    const options = sendOptionsOf(app, await ownerPrincipal(app, row));
    const result = await send(
      await targetOf(app, row),
      { messageId: `msg_test_${uuidv7().replace(/-/g, '')}`, body },
      options,
      nats,
    );
    if (!result.ok) logFailure(app, row, result, { test: 'true' });
    return result;
  } finally {
    await nats.close();
  }
}
