import postgres from 'postgres';
import { guardedAddress } from '../../../platform/net/endpoint.js';
import type { CollectContext, CredentialDocument } from '../plugin.js';

/** The server a source names: where to connect (the address the guard checked), and the scope. */
export interface Target {
  host: string;
  port: number;
  address: string;
  database: string;
  serverName: string;
}

/** The source's endpoint and settings as a target; the host is resolved and checked here. */
export async function targetOf(context: CollectContext): Promise<Target> {
  const endpoint = context.source.endpoint;
  if (!endpoint) throw new Error('the source has no endpoint (postgres://host:port)');
  const url = new URL(endpoint);
  const port = url.port === '' ? 5432 : Number(url.port);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const config = context.source.config;
  const database =
    typeof config.database === 'string'
      ? config.database
      : url.pathname.length > 1
        ? decodeURIComponent(url.pathname.slice(1))
        : 'postgres';
  const serverName = typeof config.server_name === 'string' ? config.server_name : `${host}:${port}`;
  return { host, port, address: await guardedAddress(host, context.allowedHosts), database, serverName };
}

function sslOf(context: CollectContext, target: Target): postgres.Options<Record<string, never>>['ssl'] {
  const credentials = context.credentials;
  const mode = typeof context.source.config.sslmode === 'string' ? context.source.config.sslmode : 'prefer';
  const verify = mode === 'verify-full' && context.source.config.verify_ssl !== false;
  if (credentials?.type === 'tls') {
    return {
      cert: credentials.client_certificate,
      key: credentials.client_key,
      ca: credentials.ca_certificate,
      servername: target.host,
      rejectUnauthorized: verify,
    };
  }
  if (mode === 'disable') return false;
  if (mode === 'prefer') return 'prefer';
  return { servername: target.host, rejectUnauthorized: verify };
}

function userOf(credentials: CredentialDocument | undefined): { username?: string; password?: string } {
  if (!credentials) return {};
  if (credentials.type === 'basic') return { username: credentials.username, password: credentials.password };
  if (credentials.type === 'tls') return {};
  throw new Error('postgresql sources take basic (username and password) or tls credentials, not a token');
}

/** A connection to one database of the server, closed when the run is aborted. */
export function connect(context: CollectContext, target: Target, database: string) {
  const timeoutSeconds = typeof context.source.config.timeout === 'number' ? context.source.config.timeout : 30;
  const options: postgres.Options<Record<string, never>> = {
    host: target.address,
    port: target.port,
    database,
    ...userOf(context.credentials),
    ssl: sslOf(context, target),
    max: 1,
    prepare: false,
    connect_timeout: Math.max(1, Math.min(30, Math.ceil(timeoutSeconds))),
    idle_timeout: 5,
    onnotice: () => {},
    connection: {
      application_name: 'cinv collector',
      default_transaction_read_only: true,
      statement_timeout: Math.ceil(timeoutSeconds * 1000),
    },
  };
  const sql = postgres(options);
  const close = () => void sql.end({ timeout: 0 });
  context.signal.addEventListener('abort', close, { once: true });
  return {
    sql,
    async end() {
      context.signal.removeEventListener('abort', close);
      await sql.end({ timeout: 1 });
    },
  };
}
