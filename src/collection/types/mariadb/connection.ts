import mariadb, { type Connection, type ConnectionConfig } from 'mariadb';
import type { ConnectionOptions } from 'node:tls';
import { guardedAddress } from '../../../platform/net/endpoint.js';
import type { CollectContext } from '../plugin.js';

/** The server a source names: where to connect (the address the guard checked), and the scope. */
export interface Target {
  host: string;
  port: number;
  address: string;
  serverName: string;
}

/** The source's endpoint and settings as a target; the host is resolved and checked here. */
export async function targetOf(context: CollectContext): Promise<Target> {
  const endpoint = context.source.endpoint;
  if (!endpoint) throw new Error('the source has no endpoint (mysql://host:port or mariadb://host:port)');
  const url = new URL(endpoint);
  const port = url.port === '' ? 3306 : Number(url.port);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const config = context.source.config;
  const serverName = typeof config.server_name === 'string' ? config.server_name : `${host}:${port}`;
  return { host, port, address: await guardedAddress(host, context.allowedHosts), serverName };
}

function sslOf(context: CollectContext, target: Target): ConnectionConfig['ssl'] {
  const mode = typeof context.source.config.ssl === 'string' ? context.source.config.ssl : 'disable';
  if (mode === 'disable') return undefined;
  // the address is what the guard checked; the certificate names the host the source wrote
  const verify = mode === 'verify-full' && context.source.config.verify_ssl !== false;
  const options: ConnectionOptions = { servername: target.host, rejectUnauthorized: verify };
  return options as ConnectionConfig['ssl'];
}

/** The text of a server error without the connector's prefix (connection id, error number, SQL state). */
export function serverWords(error: unknown): string {
  const sqlMessage = (error as { sqlMessage?: unknown }).sqlMessage;
  if (typeof sqlMessage === 'string' && sqlMessage) return sqlMessage;
  return error instanceof Error ? error.message.replace(/^\(conn:[^)]*\)\s*/, '') : String(error);
}

const REFUSED_CREDENTIALS = new Set([1045, 1044, 1698, 1251, 1524]);
const UNREACHABLE_CODES =
  /^(ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|EPIPE|ER_CONNECTION_REFUSED|ER_CONNECTION_TIMEOUT|ER_SOCKET_TIMEOUT|ER_SOCKET_UNEXPECTED_CLOSE|ER_CONNECTION_ALREADY_CLOSED)$/;

/**
 * Why the first connection failed, in words for the person reading the source's last error: the
 * connector's own messages name its internals (connection ids, timeouts in milliseconds, stacks).
 */
function connectFailure(error: unknown, target: Target): Error {
  const where = `${target.host}:${target.port}`;
  const { errno, code } = error as { errno?: unknown; code?: unknown };
  if (typeof errno === 'number' && REFUSED_CREDENTIALS.has(errno))
    return new Error(`the server at ${where} refused the credentials`);
  if (code === 'ER_CON_COUNT_ERROR' || errno === 1040)
    return new Error(`the server at ${where} refused the connection: it has too many connections`);
  if (code === 'ER_HOST_NOT_PRIVILEGED' || errno === 1130)
    return new Error(`the server at ${where} does not let the user connect from this host`);
  const cause = (error as { cause?: { code?: unknown } }).cause;
  const network = [code, cause?.code].some((c) => typeof c === 'string' && UNREACHABLE_CODES.test(c));
  if (network || code === undefined) return new Error(`no server answers at ${where}`);
  return new Error(`the server at ${where} could not be connected to: ${serverWords(error)}`);
}

export interface Session {
  query<T = Record<string, unknown>>(sql: string, values?: unknown[]): Promise<T[]>;
  end(): Promise<void>;
}

/**
 * One connection to the server, in a read-only session, closed when the run is aborted. Refused
 * credentials and an unreachable server are the run's failure; everything after is a part's.
 */
export async function connect(context: CollectContext, target: Target): Promise<Session> {
  const credentials = context.credentials;
  if (credentials?.type !== 'basic') throw new Error('mariadb sources take basic credentials (username and password)');
  const timeoutSeconds = typeof context.source.config.timeout === 'number' ? context.source.config.timeout : 30;
  let connection: Connection;
  try {
    connection = await mariadb.createConnection({
      host: target.address,
      port: target.port,
      user: credentials.username,
      password: credentials.password,
      ssl: sslOf(context, target),
      connectTimeout: Math.max(1, Math.min(30, Math.ceil(timeoutSeconds))) * 1000,
      socketTimeout: Math.ceil(timeoutSeconds * 1000),
      bigIntAsNumber: true,
      decimalAsNumber: true,
      dateStrings: true,
      connectAttributes: { program_name: 'cinv collector' },
    });
  } catch (error) {
    context.signal.throwIfAborted();
    throw connectFailure(error, target);
  }
  // a connection lost mid-run fails the statement in flight; the event alone would crash the process
  connection.on('error', () => undefined);
  const close = () => void connection.destroy();
  context.signal.addEventListener('abort', close, { once: true });
  // a collector never writes; a server that refuses the setting (an old MySQL) is read as it is
  await connection.query('SET SESSION TRANSACTION READ ONLY').catch(() => undefined);
  return {
    async query<T>(sql: string, values?: unknown[]) {
      try {
        return (await connection.query({ sql, rowsAsArray: false }, values)) as T[];
      } catch (error) {
        context.signal.throwIfAborted();
        // the server's error number stays, for a caller that expects one
        throw Object.assign(new Error(serverWords(error)), { errno: (error as { errno?: unknown }).errno });
      }
    },
    async end() {
      context.signal.removeEventListener('abort', close);
      await connection.end().catch(() => connection.destroy());
    },
  };
}
