import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { AllowedHosts, EndpointRefused, guardedAddress } from '../net/endpoint.js';
import { guardedRequest } from '../net/guarded-http.js';
import { webhookHeaders } from './signing.js';

/** A batch as it goes out: its body (the same on every attempt), its stable id, and what signs or routes it. */
export interface Outgoing {
  messageId: string;
  body: string;
}

export interface WebhookTarget {
  type: 'webhook';
  url: string;
  headers: Record<string, string>;
  /** The secrets valid now, newest first. */
  secrets: string[];
}

export interface NatsTarget {
  type: 'nats';
  url: string;
  subject: string;
}

export type Target = WebhookTarget | NatsTarget;

export interface SendResult {
  ok: boolean;
  /** The HTTP status, when a webhook answered. */
  status: number | null;
  ms: number;
  /** For people: what went wrong. Never holds a header value or the signing secret. */
  error: string | null;
  /** The receiver answered 410 Gone: it wants no more. */
  gone: boolean;
}

export interface SendOptions {
  allowedHosts: AllowedHosts;
  timeoutMs: number;
  now: Date;
}

const describe = (error: unknown): string => {
  if (error instanceof EndpointRefused) return error.message;
  const e = error as NodeJS.ErrnoException & { name?: string };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return 'the receiver did not answer in time';
  if (e?.code) return `${e.code}${e.message ? `: ${e.message}` : ''}`;
  return e?.message ?? String(error);
};

async function sendWebhook(target: WebhookTarget, out: Outgoing, options: SendOptions): Promise<SendResult> {
  const started = performance.now();
  try {
    const response = await guardedRequest(target.url, {
      method: 'POST',
      body: out.body,
      allowedHosts: options.allowedHosts,
      signal: AbortSignal.timeout(options.timeoutMs),
      maxBytes: 64 * 1024,
      headers: {
        ...target.headers,
        'content-type': 'application/json',
        'user-agent': 'cinv-webhooks/1',
        ...webhookHeaders(target.secrets, out.messageId, out.body, options.now),
      },
    });
    const ms = Math.round(performance.now() - started);
    const ok = response.status >= 200 && response.status < 300;
    return {
      ok,
      status: response.status,
      ms,
      error: ok ? null : `the receiver answered ${response.status}`,
      gone: response.status === 410,
    };
  } catch (error) {
    return { ok: false, status: null, ms: Math.round(performance.now() - started), error: describe(error), gone: false };
  }
}

/**
 * NATS connections by server URL, kept open between batches. A connection goes to the address the
 * endpoint guard resolved, and is checked again whenever it is made anew.
 */
export class NatsConnections {
  private readonly open = new Map<string, Promise<NatsConnection>>();

  async publish(target: NatsTarget, out: Outgoing, options: SendOptions): Promise<SendResult> {
    const started = performance.now();
    try {
      const nc = await this.connection(target.url, options);
      const js = jetstream(nc, { timeout: options.timeoutMs });
      // JetStream drops a message whose id it saw within the stream's duplicate window: a retry is never stored twice
      await js.publish(target.subject, out.body, { msgID: out.messageId, timeout: options.timeoutMs });
      return { ok: true, status: null, ms: Math.round(performance.now() - started), error: null, gone: false };
    } catch (error) {
      return { ok: false, status: null, ms: Math.round(performance.now() - started), error: `NATS: ${describe(error)}`, gone: false };
    }
  }

  private connection(url: string, options: SendOptions): Promise<NatsConnection> {
    let pending = this.open.get(url);
    if (!pending) {
      pending = (async () => {
        const parsed = new URL(url);
        const address = await guardedAddress(parsed.hostname, options.allowedHosts);
        const host = address.includes(':') ? `[${address}]` : address;
        const nc = await connect({ servers: `${host}:${parsed.port || '4222'}`, timeout: options.timeoutMs, maxReconnectAttempts: -1 });
        void nc.closed().then(() => this.open.delete(url));
        return nc;
      })();
      this.open.set(url, pending);
      pending.catch(() => this.open.delete(url));
    }
    return pending;
  }

  async close(): Promise<void> {
    const all = [...this.open.values()];
    this.open.clear();
    await Promise.all(all.map((p) => p.then((nc) => nc.close()).catch(() => undefined)));
  }
}

export function send(target: Target, out: Outgoing, options: SendOptions, nats: NatsConnections): Promise<SendResult> {
  return target.type === 'webhook' ? sendWebhook(target, out, options) : nats.publish(target, out, options);
}
