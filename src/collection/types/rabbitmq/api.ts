import { EndpointRefused } from '../../../platform/net/endpoint.js';
import { guardedGet } from '../../../platform/net/guarded-http.js';
import type { CollectContext } from '../plugin.js';

/** The management API a source names: where it answers, and the instance name CIs are scoped by. */
export interface Target {
  base: string;
  /** `host:port`, as messages for people name the server. */
  endpoint: string;
  serverName: string;
}

export function targetOf(context: CollectContext): Target {
  const endpoint = context.source.endpoint;
  if (!endpoint) throw new Error('the source has no endpoint (http(s)://host:15672)');
  const url = new URL(endpoint);
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  const hostPort = `${url.hostname}:${port}`;
  const serverName =
    typeof context.source.config.server_name === 'string' ? context.source.config.server_name : hostPort;
  return { base: endpoint.endsWith('/') ? endpoint : `${endpoint}/`, endpoint: hostPort, serverName };
}

/** One page of a paged list (`/api/queues?page=N&page_size=M`). */
interface Page<T> {
  items: T[];
  page: number;
  page_count: number;
}

/** A refusal the management API gives a user without the tag a route needs (its `reason`, e.g. "Not administrator user"). */
export class NotAuthorised extends Error {}

/**
 * The management HTTP API with the source's `basic` credentials, every request through the
 * request-forgery guard. Failures are worded for people: the server's address and what happened,
 * never the request or its headers.
 */
export class RabbitApi {
  private readonly headers: Record<string, string> = { accept: 'application/json' };
  private readonly timeoutMs: number;

  constructor(
    readonly target: Target,
    private readonly context: CollectContext,
  ) {
    const credentials = context.credentials;
    if (credentials && credentials.type !== 'basic')
      throw new Error('rabbitmq sources take basic credentials (a management user and its password)');
    if (credentials)
      this.headers.authorization = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
    const seconds = typeof context.source.config.timeout === 'number' ? context.source.config.timeout : 30;
    this.timeoutMs = Math.min(seconds, 60) * 1000;
  }

  async get<T>(path: string, query: Record<string, string> = {}): Promise<T> {
    const url = new URL(path.replace(/^\//, ''), this.target.base);
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    const where = this.target.endpoint;
    const timeout = AbortSignal.timeout(this.timeoutMs);
    let reply;
    try {
      reply = await guardedGet(url.href, {
        allowedHosts: this.context.allowedHosts,
        signal: AbortSignal.any([this.context.signal, timeout]),
        headers: this.headers,
        verifyTls: this.context.source.config.verify_ssl !== false,
        maxBytes: 256 * 1024 * 1024,
      });
    } catch (error) {
      this.context.signal.throwIfAborted();
      if (error instanceof EndpointRefused) throw error;
      if (timeout.aborted)
        throw new Error(`the server at ${where} did not answer within ${this.timeoutMs / 1000} s`, { cause: error });
      throw new Error(connectionFailure(error, where, url.hostname), { cause: error });
    }
    const text = reply.body.toString('utf8');
    if (reply.status === 401 || reply.status === 403) {
      const reason = reasonOf(text);
      if (reason && !/login failed/i.test(reason))
        throw new NotAuthorised(`the server at ${where} refused ${url.pathname} to this user: ${reason}`);
      throw new Error(`the server at ${where} refused the credentials`);
    }
    if (reply.status !== 200)
      throw new Error(`the server at ${where} answered ${url.pathname} with HTTP ${reply.status}`);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new Error(`the server at ${where} answered ${url.pathname} with something other than JSON`);
    }
  }

  /**
   * Every item of a paged list, one page at a time: only one page's answer is held, so a broker of
   * ten thousand queues costs a page of them. A server that ignores paging answers the whole list
   * as one array, which is passed on as one page.
   */
  async *pages<T>(path: string, pageSize: number): AsyncGenerator<T[]> {
    for (let page = 1; ; page++) {
      const answer = await this.get<Page<T> | T[]>(path, { page: String(page), page_size: String(pageSize) });
      if (Array.isArray(answer)) {
        yield answer;
        return;
      }
      if (answer.items.length > 0) yield answer.items;
      if (page >= answer.page_count) return;
    }
  }
}

const UNANSWERED = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EPIPE']);

/** A failed connection in words for people: nobody answering, a name that does not resolve, or TLS refusing. */
function connectionFailure(error: unknown, where: string, host: string): string {
  const code = (error as { code?: unknown }).code;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `the name ${host} does not resolve`;
  if (typeof code !== 'string' || UNANSWERED.has(code) || !(error instanceof Error))
    return `no server answers at ${where}`;
  return `the connection to ${where} failed: ${error.message}`;
}

/** The `reason` of a management API error answer, shortened; the API words it for people. */
function reasonOf(text: string): string | undefined {
  try {
    const body = JSON.parse(text) as { reason?: unknown };
    return typeof body.reason === 'string' ? body.reason.slice(0, 200) : undefined;
  } catch {
    return undefined;
  }
}
