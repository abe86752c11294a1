import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks (https://www.standardwebhooks.com): a secret is `whsec_` and base64 of its
 * bytes; a message is signed with HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<body>`, and
 * `webhook-signature` holds `v1,<base64 signature>` for each secret valid now, space-separated, so
 * a receiver rotating its secret accepts either during the overlap.
 */

const PREFIX = 'whsec_';

export const newSigningSecret = (): string => PREFIX + randomBytes(32).toString('base64');

function keyOf(secret: string): Buffer {
  return Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
}

export function signatureOf(secret: string, messageId: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', keyOf(secret)).update(`${messageId}.${timestamp}.${body}`).digest('base64')}`;
}

/** The three headers of a signed message. */
export function webhookHeaders(
  secrets: readonly string[],
  messageId: string,
  body: string,
  now: Date,
): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((secret) => signatureOf(secret, messageId, timestamp, body)).join(' '),
  };
}
