import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from '../observability/logger.js';
import { databaseFailure } from '../db/failures.js';
import { AppError, unavailable } from '../errors.js';

export interface ErrorEnvelope {
  error: {
    id: string;
    code: string;
    message: string;
    details: Record<string, unknown>;
    path: string;
    method: string;
  };
}

interface HttpLikeError {
  status?: number;
  statusCode?: number;
  expose?: boolean;
  type?: string;
  message?: string;
}

const KNOWN_STATUS_MESSAGES: Record<number, string> = {
  400: 'Bad request',
  404: 'Route not found',
  405: 'Method not allowed',
  406: 'Not acceptable',
  411: 'Length required',
  413: 'Request body too large',
  415: 'Unsupported media type',
};

/**
 * Errors raised by Koa, the router and the body parser carry an HTTP status but no code; they get
 * `HTTP_<status>` and a fixed message, so nothing a client sent is echoed back unescaped.
 */
function fromHttpError(error: HttpLikeError): AppError | undefined {
  const status = error.status ?? error.statusCode;
  if (!status || status < 400 || status >= 500) return undefined;
  // the JSON parser refuses `__proto__` keys rather than risk prototype pollution further on
  if (status === 400 && /prototype/i.test(error.message ?? '')) {
    return new AppError(400, 'HTTP_400', 'JSON body contains a "__proto__" key, which is not accepted');
  }
  if (status === 400 && (error.type === 'entity.parse.failed' || /JSON|token|parse/i.test(error.message ?? ''))) {
    return new AppError(400, 'HTTP_400', 'Malformed JSON body');
  }
  return new AppError(status, `HTTP_${status}`, KNOWN_STATUS_MESSAGES[status] ?? 'Request failed');
}

/**
 * Values a client sent that PostgreSQL refuses to store or compare (a NUL byte, February 30th, a
 * number beyond numeric's range) are the client's error, not the server's. Only these data
 * exceptions are mapped; the database's message is not passed on.
 */
const CLIENT_DATA_ERRORS: Record<string, string> = {
  '22021': 'A value contains a character that cannot be stored (such as a NUL byte)',
  '22P05': 'A value contains a character that cannot be stored (such as \\u0000)',
  '22007': 'A date or time value is invalid',
  '22008': 'A date or time value is out of range',
  '22009': 'A date or time value is out of range',
  '22003': 'A numeric value is out of range',
  '22P02': 'A value has an invalid format',
  '2201B': 'A pattern is invalid',
};

function fromDatabaseError(error: { code?: unknown; name?: unknown }): AppError | undefined {
  switch (databaseFailure(error)) {
    case 'unavailable':
      return unavailable('The database is unavailable; retry shortly', 'database_unavailable', 5);
    case 'timeout':
      return unavailable(
        'The database did not finish in time (statement timeout); narrow the request or retry later',
        'statement_timeout',
        5,
      );
    case 'contention':
      return unavailable('The request collided with a concurrent write; retry it', 'contention', 1);
    default:
      break;
  }
  if (error?.name !== 'PostgresError' || typeof error.code !== 'string') return undefined;
  const message = CLIENT_DATA_ERRORS[error.code];
  return message ? new AppError(400, 'HTTP_400', message) : undefined;
}

/** Writes an error as the envelope, with the error's own headers (`Retry-After`). */
export function renderError(ctx: Context, error: AppError, id: string = randomUUID()): void {
  const body: ErrorEnvelope = {
    // a request target that is not a path (`OPTIONS *`, a proxy's `host:port`) is named as sent
    error: {
      id,
      code: error.code,
      message: error.message,
      details: error.details,
      path: ctx.path ?? ctx.url ?? '',
      method: ctx.method,
    },
  };
  ctx.status = error.status;
  for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
  ctx.type = 'application/json';
  ctx.body = body;
}

/** Told of every error answered, with its `error.id` (the audit log records refusals). */
export type ErrorObserver = (ctx: Context, error: AppError, id: string) => void;

/** Renders every failure as the spec's error envelope and logs it with the same `error.id`. */
export function errorMiddleware(logger: Logger, observe?: ErrorObserver) {
  return async function renderErrors(ctx: Context, next: Next): Promise<void> {
    try {
      await next();
    } catch (caught) {
      const id = randomUUID();
      const known =
        caught instanceof AppError
          ? caught
          : (fromHttpError(caught as HttpLikeError) ?? fromDatabaseError(caught as { code?: unknown; name?: unknown }));
      const error = known ?? new AppError(500, 'INTERNAL_SERVER_ERROR', 'Internal server error');
      const fields = { errorId: id, status: error.status, code: error.code, method: ctx.method, path: ctx.path };
      if (!known) {
        logger.error({ ...fields, err: caught }, 'unhandled error');
      } else if (error.status >= 500) {
        // the cause (a connection error, a timeout) is logged without the statement or its values
        const cause = caught instanceof AppError ? undefined : { code: (caught as { code?: unknown }).code };
        logger.warn({ ...fields, reason: error.details.reason, cause }, error.message);
      } else {
        logger.info(fields, error.message);
      }
      renderError(ctx, error, id);
      observe?.(ctx, error, id);
    }
  };
}
