/** One field-level validation failure, as listed under `details.errors`. */
export interface FieldError {
  field: string;
  location: 'path' | 'query' | 'body' | 'header';
  message: string;
}

/**
 * The one error type routes and services throw. The error middleware renders it as the spec's
 * envelope; anything that is not an AppError becomes a 500 with no detail.
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
    /** Response headers that belong to the error, such as `Retry-After`. */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const notFound = (message: string, details: Record<string, unknown> = {}) =>
  new AppError(404, 'HTTP_404', message, details);

export const validationFailed = (errors: FieldError[]) =>
  new AppError(422, 'VALIDATION_ERROR', 'Request validation failed', { errors });

/** A 422 for parameters that are well-formed but contradictory (cursors, sort rules). */
export const unprocessable = (message: string, details: Record<string, unknown> = {}) =>
  new AppError(422, 'HTTP_422', message, details);

export const invalidFilter = (filter: string, reason: string) =>
  new AppError(400, 'INVALID_FILTER', `Invalid filter "${filter}": ${reason}`, { filter, reason });

export const unauthorized = (reason: string) => new AppError(401, 'HTTP_401', 'Authentication required', { reason });

export const forbidden = (message: string, details: Record<string, unknown> = {}) =>
  new AppError(403, 'HTTP_403', message, details);

/** A 409: the request clashes with what exists (a taken name, a limit reached). */
export const conflict = (message: string, details: Record<string, unknown> = {}) =>
  new AppError(409, 'HTTP_409', message, details);

export const notAcceptable = (available: string[]) =>
  new AppError(406, 'HTTP_406', `Not acceptable; this route serves ${available.join(', ')}`, { available });

/**
 * A 429: this credential asks for more than its allowance at once; `retryAfterSeconds` becomes
 * `Retry-After`.
 */
export const tooManyRequests = (message: string, details: Record<string, unknown>, retryAfterSeconds: number) =>
  new AppError(429, 'HTTP_429', message, details, { 'Retry-After': String(retryAfterSeconds) });

/**
 * A 503 the client may retry: the database is unreachable or saturated, or the work it asked for
 * has to wait its turn. `reason` is machine-readable, `retryAfterSeconds` becomes `Retry-After`.
 */
export const unavailable = (message: string, reason: string, retryAfterSeconds: number) =>
  new AppError(503, 'HTTP_503', message, { reason }, { 'Retry-After': String(retryAfterSeconds) });
