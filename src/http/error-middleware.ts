import { randomUUID } from 'node:crypto';
import type { Context, Next } from 'koa';
import type { Logger } from '../observability/logger.js';
import { AppError } from './errors.js';

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
  '22003': 'A numeric value is out of range',
  '22P02': 'A value has an invalid format',
  '2201B': 'A pattern is invalid',
};

function fromDatabaseError(error: { code?: unknown; name?: unknown }): AppError | undefined {
  if (error?.name !== 'PostgresError' || typeof error.code !== 'string') return undefined;
  const message = CLIENT_DATA_ERRORS[error.code];
  return message ? new AppError(400, 'HTTP_400', message) : undefined;
}

/** Renders every failure as the spec's error envelope and logs it with the same `error.id`. */
export function errorMiddleware(logger: Logger) {
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
      if (known) {
        logger.info({ errorId: id, status: error.status, code: error.code, method: ctx.method, path: ctx.path }, error.message);
      } else {
        logger.error({ errorId: id, err: caught, method: ctx.method, path: ctx.path }, 'unhandled error');
      }
      const body: ErrorEnvelope = {
        error: { id, code: error.code, message: error.message, details: error.details, path: ctx.path, method: ctx.method },
      };
      ctx.status = error.status;
      ctx.type = 'application/json';
      ctx.body = body;
    }
  };
}
