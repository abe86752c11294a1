import type { RequestOptions } from 'node:https';
import { isIP } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import { guardedAddress } from '../../../platform/net/endpoint.js';
import { WatchExpired, type CollectContext, type CredentialDocument } from '../plugin.js';
import { guardedGet, type GuardedRequestOptions } from '../../../platform/net/guarded-http.js';
import type { Json } from './kinds.js';

/** The client's user for the source's credentials; the cluster entry takes the CA of `tls` ones. */
function userOf(credentials: CredentialDocument | undefined, cluster: Json): Json {
  const user: Json = { name: 'cinv' };
  if (credentials?.type === 'token') user.token = credentials.token;
  else if (credentials?.type === 'tls') {
    user.certData = Buffer.from(credentials.client_certificate).toString('base64');
    user.keyData = Buffer.from(credentials.client_key).toString('base64');
    if (credentials.ca_certificate) cluster.caData = Buffer.from(credentials.ca_certificate).toString('base64');
  } else if (credentials?.type === 'basic') {
    throw new Error('kubernetes sources take token or tls credentials (the API server has no basic authentication)');
  }
  return user;
}

/**
 * One cluster's API server, as the source describes it. The official client turns the credentials
 * into request options and runs the watches; lists go through the request-forgery guard, and the
 * client connects to the address the guard checked.
 */
export class KubeApi {
  private request: Pick<GuardedRequestOptions, 'headers' | 'tls' | 'verifyTls'> = {};

  private constructor(
    readonly base: string,
    private readonly context: CollectContext,
    readonly kc: KubeConfig,
  ) {}

  static async connect(context: CollectContext): Promise<KubeApi> {
    const endpoint = context.source.endpoint;
    if (!endpoint) throw new Error('the source has no endpoint (the API server URL)');
    const url = new URL(endpoint);
    const address = await guardedAddress(url.hostname, context.allowedHosts);
    const pinned = new URL(endpoint);
    pinned.hostname = address.includes(':') ? `[${address}]` : address;
    const cluster: Json = {
      name: 'cluster',
      server: pinned.href.replace(/\/$/, ''),
      // the name the certificate is checked against, now that the connection goes to an address
      ...(isIP(url.hostname.replace(/^\[|\]$/g, '')) === 0 ? { tlsServerName: url.hostname } : {}),
      // the client refuses plain http unless told there is nothing to verify
      skipTLSVerify: context.source.config.verify_ssl === false || url.protocol === 'http:',
    };
    const user = userOf(context.credentials, cluster);
    // loaded on first use: the client holds some 70 MB of the process's memory once imported, which
    // an installation without a kubernetes source never needs
    const { KubeConfig } = await import('@kubernetes/client-node');
    const api = new KubeApi(endpoint.replace(/\/$/, ''), context, new KubeConfig());
    api.kc.loadFromOptions({
      clusters: [cluster],
      users: [user],
      contexts: [{ name: 'cinv', cluster: 'cluster', user: 'cinv' }],
      currentContext: 'cinv',
    });
    const options: RequestOptions = { headers: {} };
    await api.kc.applyToHTTPSOptions(options);
    const pem = (value: unknown) =>
      value === undefined ? undefined : Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
    api.request = {
      headers: options.headers as Record<string, string>,
      tls: { ca: pem(options.ca), cert: pem(options.cert), key: pem(options.key) },
      verifyTls: options.rejectUnauthorized !== false,
    };
    return api;
  }

  /** A GET of the API; a 410 answer is `WatchExpired` (a continue token too old), a 404 is null. */
  async get(path: string, query: Record<string, string> = {}): Promise<Json | null> {
    const url = new URL(`${this.base}${path}`);
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    const timeout =
      typeof this.context.source.config.timeout === 'number' ? this.context.source.config.timeout * 1000 : 60_000;
    const reply = await guardedGet(url.href, {
      ...this.request,
      allowedHosts: this.context.allowedHosts,
      signal: AbortSignal.any([this.context.signal, AbortSignal.timeout(timeout)]),
    });
    if (reply.status === 404) return null;
    if (reply.status === 410) throw new WatchExpired(`${path}: the list's continue token expired`);
    if (reply.status !== 200) {
      let message = `HTTP ${reply.status}`;
      try {
        message = String((JSON.parse(reply.body.toString('utf8')) as Json).message ?? message);
      } catch {
        // not a Status
      }
      throw new Error(`${path} answered ${reply.status}: ${message.slice(0, 300)}`);
    }
    return JSON.parse(reply.body.toString('utf8')) as Json;
  }
}
