/**
 * What a database failure means for the caller. `unavailable`: the database could not be reached
 * or dropped the connection (a restart, a network fault): nothing of the statement happened, or
 * its transaction rolled back, so the same request may simply be retried. `timeout`: the statement
 * ran out of time. `contention`: a deadlock or serialization failure, also safe to retry.
 */
export type DatabaseFailure = 'unavailable' | 'timeout' | 'contention';

// Socket-level errors and the ones postgres.js raises for its own connection states.
const CONNECTION_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENOENT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
]);

// SQLSTATEs of a server that is shutting down, starting up, or out of connection slots.
const UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300', '53400']);

/** Classifies an error thrown by a query; undefined for errors that are not the database's state. */
export function databaseFailure(error: unknown): DatabaseFailure | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, name } = error as { code?: unknown; name?: unknown };
  if (typeof code !== 'string') return undefined;
  if (name === 'PostgresError') {
    if (code.startsWith('08') || UNAVAILABLE_STATES.has(code)) return 'unavailable';
    if (code === '57014') return 'timeout';
    if (code === '40P01' || code === '40001') return 'contention';
    return undefined;
  }
  return CONNECTION_ERRORS.has(code) ? 'unavailable' : undefined;
}
