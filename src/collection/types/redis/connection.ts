import { Redis } from 'ioredis';
import { guardedAddress } from '../../../platform/net/endpoint.js';
import type { CollectContext, CredentialDocument } from '../plugin.js';

/** The server a source names: where to connect (the address the guard checked), and the scope. */
export interface Target {
  host: string;
  port: number;
  address: string;
  tls: boolean;
  /** `host:port` as the source's endpoint names it. */
  endpoint: string;
  serverName: string;
}

/** The source's endpoint and settings as a target; the host is resolved and checked here. */
export async function targetOf(context: CollectContext): Promise<Target> {
  const endpoint = context.source.endpoint;
  if (!endpoint) throw new Error('the source has no endpoint (redis://host:port)');
  const url = new URL(endpoint);
  const port = url.port === '' ? 6379 : Number(url.port);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const config = context.source.config;
  const hostPort = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const serverName = typeof config.server_name === 'string' ? config.server_name : hostPort;
  return {
    host,
    port,
    address: await guardedAddress(host, context.allowedHosts),
    tls: url.protocol === 'rediss:',
    endpoint: hostPort,
    serverName,
  };
}

/**
 * The AUTH arguments for the credentials: `basic` is an ACL user and its password (Redis 6 and
 * later; `default` for the default user), `token` the password of a server with `requirepass` only.
 */
function authOf(credentials: CredentialDocument | undefined): string[] | undefined {
  if (!credentials || credentials.type === 'tls') return undefined;
  if (credentials.type === 'basic') return [credentials.username, credentials.password];
  return [credentials.token];
}

/** A reply error's words without the command's arguments, which ioredis keeps beside them (AUTH carries the password). */
const replyText = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** What a person reads when the server cannot be used at all; the cause (ioredis' own error) is left out on purpose. */
class Unreachable extends Error {}

/** Connects, authenticates and pings: each way of failing gets its own sentence. */
async function handshake(client: Redis, target: Target, credentials: CredentialDocument | undefined): Promise<void> {
  await client.connect().catch((error: unknown) => {
    const code = (error as { code?: string }).code ?? '';
    if (/^ERR_TLS|^ERR_SSL|CERT|SSL/i.test(code) || /certificate|SSL|TLS/i.test(replyText(error)))
      throw new Unreachable(`the TLS handshake with ${target.endpoint} failed (${code || 'certificate or protocol'})`);
    throw new Unreachable(`no server answers at ${target.endpoint}`);
  });
  const auth = authOf(credentials);
  if (auth) {
    await client.call('AUTH', ...auth).catch((error: unknown) => {
      const words = replyText(error);
      if (/WRONGPASS|invalid password|invalid username|disabled/i.test(words))
        throw new Unreachable(`the server at ${target.endpoint} refused the credentials`);
      if (/wrong number of arguments/i.test(words))
        throw new Unreachable(
          `the server at ${target.endpoint} has no ACL users (Redis before 6): give a token credential (the requirepass password)`,
        );
      if (/without any password|no password is set/i.test(words)) return;
      throw new Unreachable(`the server at ${target.endpoint} did not accept AUTH: ${words.slice(0, 200)}`);
    });
  }
  await client.call('PING').catch((error: unknown) => {
    const words = replyText(error);
    if (/NOAUTH/i.test(words))
      throw new Unreachable(`the server at ${target.endpoint} requires credentials (AUTH), and none were given`);
    if (/NOPERM/i.test(words))
      throw new Unreachable(`the user may not run PING on ${target.endpoint}: grant at least +ping and +info`);
    throw new Unreachable(`the server at ${target.endpoint} did not answer PING: ${words.slice(0, 200)}`);
  });
}

/** One connection to the server, with the credentials checked, closed when the run is aborted. */
export interface Connection {
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
  /** Several commands in one round trip; each answer or its error. */
  batch(commands: (string | number)[][]): Promise<{ value?: unknown; error?: string }[]>;
  end(): Promise<void>;
}

/**
 * Connects and authenticates. A server that does not answer, or refuses the credentials, fails
 * here with a sentence naming the server only: nothing of the credentials, nothing of the client.
 */
export async function connect(context: CollectContext, target: Target): Promise<Connection> {
  const credentials = context.credentials;
  const timeoutSeconds = typeof context.source.config.timeout === 'number' ? context.source.config.timeout : 30;
  const timeoutMs = Math.max(1000, Math.min(30_000, Math.ceil(timeoutSeconds * 1000)));
  const tls = target.tls
    ? {
        servername: target.host,
        rejectUnauthorized: context.source.config.verify_ssl !== false,
        ...(credentials?.type === 'tls'
          ? { cert: credentials.client_certificate, key: credentials.client_key, ca: credentials.ca_certificate }
          : {}),
      }
    : undefined;
  if (credentials?.type === 'tls' && !target.tls)
    throw new Error('a client certificate (tls credentials) needs a rediss:// endpoint');
  const client = new Redis({
    host: target.address,
    port: target.port,
    tls,
    // AUTH is sent by hand below, so that a refusal is told apart from an outage
    lazyConnect: true,
    protocol: 2,
    enableReadyCheck: false,
    enableOfflineQueue: false,
    disableClientInfo: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
  });
  // ioredis prints unhandled error events; every failure reaches a caller through its command
  client.on('error', () => {});
  const close = () => client.disconnect();
  context.signal.addEventListener('abort', close, { once: true });
  const end = async () => {
    context.signal.removeEventListener('abort', close);
    await client.quit().catch(() => client.disconnect());
  };
  try {
    await handshake(client, target, credentials);
  } catch (error) {
    await end().catch(() => undefined);
    context.signal.throwIfAborted();
    throw error instanceof Unreachable
      ? new Error(error.message)
      : new Error(`no server answers at ${target.endpoint}`);
  }
  return {
    call: (command, ...args) => client.call(command, ...args),
    async batch(commands) {
      const pipeline = client.pipeline();
      for (const [command, ...args] of commands) pipeline.call(String(command), ...args);
      const answers = (await pipeline.exec()) ?? [];
      return answers.map(([error, value]) => (error ? { error: replyText(error) } : { value }));
    },
    end,
  };
}
