import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { AllowedHosts, EndpointRefused, guardedLookup, refusedAddress } from './endpoint.js';

export interface GuardedResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The URL that answered, after redirects. */
  url: string;
  /** The address of the peer that answered, as connected to. */
  address: string | undefined;
}

export interface GuardedRequestOptions {
  allowedHosts: AllowedHosts;
  signal: AbortSignal;
  headers?: Record<string, string>;
  /** `config.verify_ssl` (default true). */
  verifyTls?: boolean;
  /** PEM material from `tls` credentials. */
  tls?: { cert?: string; key?: string; ca?: string };
  maxRedirects?: number;
  /** Responses larger than this are refused rather than held in memory. */
  maxBytes?: number;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/**
 * A GET for collectors with the request forgery guard applied to every connection: the address a
 * name resolves to is checked before connecting (guardedLookup), literal addresses likewise, and
 * each redirect is a new, checked connection. Redirects are followed by hand (at most 5) so that
 * none escapes the check.
 */
export async function guardedGet(url: string, options: GuardedRequestOptions): Promise<GuardedResponse> {
  return guardedRequest(url, options);
}

/**
 * A request with the guard of guardedGet. A request with a body (a webhook's POST) follows no
 * redirect: the answer is the redirect itself, and a body is never sent where the endpoint that was
 * checked did not send it.
 */
export async function guardedRequest(
  url: string,
  options: GuardedRequestOptions & { method?: string; body?: string | Buffer },
): Promise<GuardedResponse> {
  let current = new URL(url);
  const lookup = guardedLookup(options.allowedHosts);
  for (let hop = 0; hop <= (options.maxRedirects ?? 5); hop++) {
    // addresses written as such are connected to without a lookup: they are checked here
    const literal = refusedAddress(current.hostname, options.allowedHosts);
    if (literal) throw new EndpointRefused(`connection to ${current.hostname} refused: ${literal}`);
    const address = current.hostname.replace(/^\[|\]$/g, '');
    if (isIP(address) !== 0 && options.allowedHosts.restricts && !options.allowedHosts.allowsAddress(address)) {
      throw new EndpointRefused(`connection to ${address} refused: not in CINV_SOURCE_ALLOWED_HOSTS`);
    }
    const response = await once(current, options, lookup);
    const location = response.headers.location;
    if (!REDIRECTS.has(response.status) || !location || options.body !== undefined) return response;
    current = new URL(location, current);
    if (current.protocol !== 'http:' && current.protocol !== 'https:')
      throw new EndpointRefused(`redirect to ${current.protocol} refused`);
  }
  throw new EndpointRefused('too many redirects');
}

function once(
  url: URL,
  options: GuardedRequestOptions & { method?: string; body?: string | Buffer },
  lookup: ReturnType<typeof guardedLookup>,
): Promise<GuardedResponse> {
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const limit = options.maxBytes ?? 64 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    const outgoing = request(
      url,
      {
        method: options.method ?? 'GET',
        headers: options.headers,
        lookup,
        signal: options.signal,
        rejectUnauthorized: options.verifyTls ?? true,
        cert: options.tls?.cert,
        key: options.tls?.key,
        ca: options.tls?.ca,
      },
      (incoming) => {
        const address = incoming.socket?.remoteAddress;
        const chunks: Buffer[] = [];
        let size = 0;
        incoming.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > limit) {
            incoming.destroy(new Error(`response larger than ${limit} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        incoming.on('error', reject);
        incoming.on('end', () =>
          resolve({
            status: incoming.statusCode ?? 0,
            headers: incoming.headers,
            body: Buffer.concat(chunks),
            url: url.href,
            address,
          }),
        );
      },
    );
    outgoing.on('error', reject);
    outgoing.end(options.body);
  });
}
