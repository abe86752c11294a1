import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { AllowedHosts, EndpointRefused, guardedAddress, isPublicAddress } from '../../platform/net/endpoint.js';
import { guardedRequest } from '../../platform/net/guarded-http.js';
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
  /** The HTTP status, when a webhook answered from an address whose answers are shown (see shownStatus). */
  status: number | null;
  ms: number;
  /**
   * For the subscription's clients: what went wrong, coarsely (see NOT_TAKEN). Never holds a
   * header value or the signing secret.
   */
  error: string | null;
  /** For the server log only: what happened exactly (the error code, the address, the status). Never holds a secret. */
  detail: string | null;
  /** The receiver answered 410 Gone: it wants no more. */
  gone: boolean;
}

export interface SendOptions {
  allowedHosts: AllowedHosts;
  timeoutMs: number;
  now: Date;
}

/** What went wrong exactly, for the server log. */
const describe = (error: unknown): string => {
  if (error instanceof EndpointRefused) return error.message;
  const e = error as NodeJS.ErrnoException & { name?: string };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return 'the receiver did not answer in time';
  if (e?.code) return `${e.code}${e.message ? `: ${e.message}` : ''}`;
  return e?.message ?? String(error);
};

/**
 * What clients (the test route, the deliveries log) are told of every failure but an HTTP answer
 * whose status is shown. A refused connection, a reset, an answer that is not HTTP, a timeout and a
 * status withheld all read the same: told apart, they would map which ports of which internal hosts
 * listen and what speaks there, to anyone allowed to point a webhook. The detail goes to the server log.
 */
export const NOT_TAKEN =
  'the receiver could not be reached or did not accept the message (the server log has the details)';
const GUARD_REFUSED = "the endpoint guard refused the receiver's address (the server log has the details)";
export const NATS_NOT_TAKEN =
  'NATS: the message was not acknowledged: the server could not be reached, or no stream took it (the server log has the details)';

/**
 * Whether a receiver's HTTP status may be shown: when it answered from a public address, or from a
 * host or network the operator lists in CINV_SOURCE_ALLOWED_HOSTS. A loopback or private address
 * reachable only because CINV_SOURCE_ALLOW_PRIVATE lets it be keeps its status to the server log:
 * a status says that something speaks HTTP on that port, and what.
 */
function shownStatus(url: string, address: string | undefined, allowed: AllowedHosts): boolean {
  if (address === undefined) return false;
  if (isPublicAddress(address)) return true;
  return allowed.allowsAddress(address) || allowed.allowsName(new URL(url).hostname);
}

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
    const shown = shownStatus(target.url, response.address, options.allowedHosts);
    return {
      ok,
      status: shown ? response.status : null,
      ms,
      error: ok ? null : shown ? `the receiver answered ${response.status}` : NOT_TAKEN,
      detail: ok ? null : `the receiver at ${response.address ?? 'an unknown address'} answered ${response.status}`,
      gone: response.status === 410,
    };
  } catch (error) {
    const told = error instanceof EndpointRefused ? GUARD_REFUSED : NOT_TAKEN;
    return {
      ok: false,
      status: null,
      ms: Math.round(performance.now() - started),
      error: told,
      detail: describe(error),
      gone: false,
    };
  }
}

/**
 * NATS connections by server URL, kept open between batches. A connection goes to the address the
 * endpoint guard resolved, and is checked again whenever it is made anew. The servers a NATS server
 * advertises (`connect_urls` in its INFO, its cluster's other members) are never added: the client
 * connects, and reconnects, only to the address that was checked.
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
      return {
        ok: true,
        status: null,
        ms: Math.round(performance.now() - started),
        error: null,
        detail: null,
        gone: false,
      };
    } catch (error) {
      const told = error instanceof EndpointRefused ? `NATS: ${GUARD_REFUSED}` : NATS_NOT_TAKEN;
      return {
        ok: false,
        status: null,
        ms: Math.round(performance.now() - started),
        error: told,
        detail: `NATS: ${describe(error)}`,
        gone: false,
      };
    }
  }

  private connection(url: string, options: SendOptions): Promise<NatsConnection> {
    let pending = this.open.get(url);
    if (!pending) {
      pending = (async () => {
        const parsed = new URL(url);
        const address = await guardedAddress(parsed.hostname, options.allowedHosts);
        const host = address.includes(':') ? `[${address}]` : address;
        const nc = await connect({
          servers: `${host}:${parsed.port || '4222'}`,
          timeout: options.timeoutMs,
          maxReconnectAttempts: -1,
          ignoreClusterUpdates: true,
        });
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
