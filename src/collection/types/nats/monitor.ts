import { EndpointRefused } from '../../../platform/net/endpoint.js';
import { guardedGet } from '../../../platform/net/guarded-http.js';
import type { CollectContext } from '../plugin.js';

/** The monitoring endpoint a source names, and the instance name CIs are scoped by. */
export interface Target {
  /** The endpoint with a trailing slash, so that paths resolve under a base path (`http_base_path`, a proxy's prefix). */
  base: string;
  /** `host:port` as reached, for messages and the host facts. */
  address: string;
  serverName: string;
}

export function targetOf(context: CollectContext): Target {
  const endpoint = context.source.endpoint;
  if (!endpoint) throw new Error('the source has no endpoint (http://host:8222, the monitoring port)');
  const url = new URL(endpoint);
  url.search = '';
  url.hash = '';
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  const address = `${url.hostname}:${port}`;
  const config = context.source.config;
  return { base: url.href, address, serverName: typeof config.server_name === 'string' ? config.server_name : address };
}

/** Raised when the endpoint cannot be read at all: the run fails with this message, as it is. */
export class Unreachable extends Error {}

/** Network failures that mean nothing answers (rather than a server answering wrongly). */
const NO_ANSWER = /^(ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|EPIPE)$/;

/**
 * The server's HTTP monitoring endpoint, read through the request forgery guard with the source's
 * credentials. nats-server itself asks for none on that port; `basic` and `token` are for a proxy
 * in front of it.
 */
export class MonitorApi {
  private readonly headers: Record<string, string> = { accept: 'application/json' };
  /** Per request, so that a server that accepts but never answers does not hold the run until it is cancelled. */
  private readonly timeoutSeconds: number;

  constructor(
    private readonly target: Target,
    private readonly context: CollectContext,
  ) {
    const timeout = context.source.config.timeout;
    this.timeoutSeconds = typeof timeout === 'number' ? timeout : 30;
    const credentials = context.credentials;
    if (credentials?.type === 'token') this.headers.authorization = `Bearer ${credentials.token}`;
    else if (credentials?.type === 'basic')
      this.headers.authorization = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
    else if (credentials?.type === 'tls')
      throw new Unreachable(
        'nats sources take basic or token credentials (for a proxy in front of the monitoring port), or none',
      );
  }

  /**
   * One monitoring answer as JSON. Failures to reach the endpoint, and an answer refusing the
   * credentials, are `Unreachable` (the run fails); any other bad answer is an ordinary error
   * (the part that asked fails).
   */
  async get<T>(path: string, query: Record<string, string> = {}): Promise<T> {
    const url = new URL(path, this.target.base);
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    const timeout = AbortSignal.timeout(this.timeoutSeconds * 1000);
    let reply;
    try {
      reply = await guardedGet(url.href, {
        allowedHosts: this.context.allowedHosts,
        signal: AbortSignal.any([this.context.signal, timeout]),
        headers: this.headers,
        verifyTls: this.context.source.config.verify_ssl !== false,
        maxBytes: 512 * 1024 * 1024,
      });
    } catch (error) {
      if (timeout.aborted && !this.context.signal.aborted)
        throw new Unreachable(`the server at ${this.target.address} did not answer within ${this.timeoutSeconds} s`);
      throw this.unreachable(error);
    }
    if (reply.status === 401 || reply.status === 403) {
      throw new Unreachable(
        this.context.credentials
          ? `the server at ${this.target.address} refused the credentials (HTTP ${reply.status})`
          : `the server at ${this.target.address} asks for credentials (HTTP ${reply.status}); none are set`,
      );
    }
    if (reply.status !== 200) throw new Error(`/${path} answered HTTP ${reply.status}`);
    try {
      return JSON.parse(reply.body.toString('utf8')) as T;
    } catch {
      throw new Error(`/${path} did not answer JSON`);
    }
  }

  private unreachable(error: unknown): unknown {
    if (this.context.signal.aborted || error instanceof EndpointRefused) return error;
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && NO_ANSWER.test(code))
      return new Unreachable(`no server answers at ${this.target.address}`);
    if (typeof code === 'string' && code.startsWith('HPE_'))
      return new Unreachable(
        `the server at ${this.target.address} does not answer HTTP: is it the client port (4222) rather than the monitoring port (8222)?`,
      );
    if (typeof code === 'string' && /CERT|TLS|SSL/.test(code))
      return new Unreachable(`the TLS connection to ${this.target.address} failed (${code})`);
    return error;
  }
}
