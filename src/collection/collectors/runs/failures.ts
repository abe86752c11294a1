import { randomUUID } from 'node:crypto';
import type { CredentialDocument } from '../../types/plugin.js';
import type { Logger } from '../../../platform/observability/logger.js';
import { redactCredentials } from '../../sources/credentials.js';
import type { Components } from './runs.js';

/** The message of a failure, with the source's credentials struck out (a server may echo what it was sent). */
export const messageOf = (error: unknown, credentials?: CredentialDocument): string =>
  redactCredentials(error instanceof Error ? ownWords(error) : String(error), credentials).slice(0, 2000);

/** An error's message; one Node leaves empty (a refused connection to every address of a name) is told by its parts or its code. */
function ownWords(error: Error): string {
  if (error.message) return error.message;
  const parts =
    error instanceof AggregateError
      ? error.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e))).filter(Boolean)
      : [];
  if (parts.length > 0) return parts.join('; ');
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? `${error.name}: ${code}` : error.name;
}

/** What JavaScript throws on a mistake in the code (a property of undefined, a bad argument), not on a failing source. */
const PROGRAMMING_ERRORS = [TypeError, RangeError, ReferenceError, SyntaxError, EvalError, URIError];
/**
 * Codes that make even such an error a collection failure: the network, DNS and TLS, and URLs or
 * header values that come from the source's settings or credentials.
 */
const COLLECTION_CODES =
  /^(E[A-Z0-9_]+|ERR_TLS_\w+|ERR_SSL_\w+|ERR_INVALID_URL|ERR_INVALID_CHAR|ERR_INVALID_HTTP_TOKEN|ERR_STREAM_PREMATURE_CLOSE|UND_ERR_\w+)$/;

/**
 * Whether a failure comes from the code rather than from the source: a message such as "Cannot
 * read properties of undefined" tells the person reading a source's last error nothing, and
 * anything that is not an Error was never meant to be shown. An answer that is not JSON is the
 * source's doing, though JSON.parse reports it as a SyntaxError.
 */
export function isInternalFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && COLLECTION_CODES.test(code)) return false;
  if (error instanceof SyntaxError && /\bJSON\b/.test(error.message)) return false;
  return PROGRAMMING_ERRORS.some((type) => error instanceof type);
}

/** Where a failure happened, for the log line that holds it whole. */
export interface FailureSite {
  run: string;
  source?: string;
  component?: string;
}

/**
 * What a person reads about a failure (the source's last error, its health, the run): the
 * failure's own words, credentials struck out, for a collection failure; for a mistake in the
 * code, a sentence pointing to the log line that holds the whole error under the same id.
 */
export function failureText(
  logger: Logger,
  error: unknown,
  where: FailureSite,
  credentials?: CredentialDocument,
): string {
  if (!isInternalFailure(error)) return messageOf(error, credentials);
  const errorId = randomUUID();
  const redact = (text: string | undefined) => (text === undefined ? undefined : redactCredentials(text, credentials));
  // logged by hand rather than as `err`: the text and stack go through the same redaction
  const failure =
    error instanceof Error
      ? { type: error.name, message: redact(error.message), stack: redact(error.stack) }
      : { value: redact(String(error)) };
  logger.error({ errorId, ...where, failure }, 'collection failed on an internal error');
  return `The collector failed unexpectedly (internal error ${errorId}); see the server log`;
}

/** What a list that failed in some of its parts reports: each failed part and why; undefined when none failed. */
export function failedPartsText(components: Components): string | undefined {
  const failedParts = Object.entries(components).filter(([, c]) => c.status === 'unhealthy');
  if (failedParts.length === 0) return undefined;
  return failedParts
    .map(([name, c]) => `${name}: ${c.message ?? 'failed'}`)
    .join('; ')
    .slice(0, 2000);
}
