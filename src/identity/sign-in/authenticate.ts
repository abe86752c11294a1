import type { Context } from 'koa';
import type { AppContext } from '../../context.js';
import { AppError, forbidden, unauthorized } from '../../platform/errors.js';
import type { AuthFailure } from '../../platform/audit/log.js';
import { keyHint, parseApiKey } from '../../platform/auth/api-key-format.js';
import { principalForKey, principalForKeyId, userPrincipal } from '../../platform/auth/api-keys.js';
import { endSession, extendSession, findSessionUser, type SessionUser } from '../../platform/auth/sessions.js';
import { touchKey } from '../../platform/auth/api-key-store.js';
import type { Principal } from '../../platform/auth/principal.js';

/** Query parameter names a key could be sent in, compared without regard to case. */
const KEY_QUERY_PARAMETERS = new Set([
  'api_key',
  'apikey',
  'api-key',
  'key',
  'x-api-key',
  'x_api_key',
  'token',
  'access_token',
  'api_token',
  'apitoken',
  'auth_token',
  'authorization',
]);

/** The query parameter a request tries to send a key in, if any. */
export function keyQueryParameter(ctx: Context): string | undefined {
  return Object.keys(ctx.query).find((name) => KEY_QUERY_PARAMETERS.has(name.toLowerCase()));
}

/**
 * Where a page request refused for want of credentials is sent: a browser without a (live) session
 * signs in and comes back. Never a request with a key in the query: the address it returns to would
 * carry the key on.
 */
export function signInRedirect(ctx: Context, app: AppContext): string | undefined {
  if (
    !app.sso ||
    ctx.method !== 'GET' ||
    ctx.accepts('json', 'html') !== 'html' ||
    keyQueryParameter(ctx) !== undefined
  )
    return undefined;
  return `/auth/login?return_to=${encodeURIComponent(ctx.originalUrl)}`;
}

export const SESSION_COOKIE = 'cinv_session';
const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
/** Sessions move their expiry on use at most this often (it is a write). */
const ROLL_EVERY_MS = 60_000;

/**
 * Resolves the request's principal: from the `X-API-Key` header, else from the sign-in session
 * cookie. A key in the query string is refused whatever else the request carries: it ends up in
 * access logs, proxy logs and browser history, so a client sending one must learn to stop, not be
 * served on the strength of its header. The parameter's value is never read, logged or echoed.
 */
export async function authenticate(ctx: Context, app: AppContext): Promise<Principal> {
  const parameter = keyQueryParameter(ctx);
  if (parameter !== undefined) {
    ctx.state.authFailure = { reason: 'missing_credentials' } satisfies AuthFailure;
    throw new AppError(401, 'HTTP_401', 'Authentication required', {
      reason:
        'API keys are accepted only in the X-API-Key header, never as a query parameter; remove it from the URL (and revoke the key if the URL was shared or logged)',
      parameter: parameter.toLowerCase(),
    });
  }
  const key = ctx.get('x-api-key');
  if (!key) {
    const sessionId = ctx.cookies.get(SESSION_COOKIE, { signed: true });
    if (sessionId) return sessionPrincipal(ctx, app, sessionId);
    ctx.state.authFailure = { reason: 'missing_credentials' } satisfies AuthFailure;
    throw unauthorized('missing X-API-Key header or sign-in session');
  }
  const principal = await keyPrincipalOrRefuse(ctx, app, key);
  ctx.state.principal = principal;
  if (principal.keyId) noteUse(app, principal.keyId);
  app.audit.authenticated(principal, ctx, principal.tier === 'usr' ? 'user_token' : 'api_key');
  return principal;
}

/**
 * The principal of a key (from the header, or handed to the sign-in form), or a 401 with the
 * failure recorded for the audit log: the key's public hint only, never the key.
 */
export async function keyPrincipalOrRefuse(ctx: Context, app: AppContext, key: string): Promise<Principal> {
  const principal = await principalForKey(app.sql, app.config.secret, key, app.now(), app.principals);
  if (principal) return principal;
  ctx.state.authFailure = (
    parseApiKey(key)
      ? { reason: 'unknown_revoked_or_expired', keyHint: `${key.slice(0, key.indexOf('_', 5) + 1)}…${keyHint(key)}` }
      : { reason: 'malformed_key' }
  ) satisfies AuthFailure;
  app.logger.info({ method: ctx.method, path: ctx.path, ip: ctx.ip }, 'authentication failed');
  throw unauthorized('invalid, expired or revoked API key');
}

/**
 * A browser's session: refused once ended (logout, deactivation) or expired, rolled forward while
 * in use. Unsafe methods must come from this origin: a cookie is sent with cross-site requests
 * too, so a same-origin `Origin` (or `Sec-Fetch-Site: same-origin`) is what tells a request the
 * person made from one another site made for them.
 */
async function sessionPrincipal(ctx: Context, app: AppContext, sessionId: string): Promise<Principal> {
  const now = app.now();
  const session = await findSessionUser(app.sql, app.config.secret, sessionId, now);
  const principal = session ? await sessionOwner(app, session, now) : undefined;
  if (!session || !principal) {
    if (session) await endSession(app.sql, app.config.secret, sessionId);
    clearSessionCookie(ctx);
    const [reason, message]: [AuthFailure['reason'], string] = !session
      ? ['session_expired', 'the sign-in session ended or expired; sign in again']
      : session.user
        ? ['user_deactivated', 'this user is deactivated']
        : ['unknown_revoked_or_expired', 'the key this session was opened with is revoked or expired; sign in again'];
    ctx.state.authFailure = { reason, tenantId: session?.tenant_id } satisfies AuthFailure;
    throw unauthorized(message);
  }
  ctx.state.principal = principal;
  // counted against the session allowance, not the key's: see RateLimits
  ctx.state.signedInSession = true;
  if (UNSAFE_METHODS.has(ctx.method) && !sameOrigin(ctx)) {
    throw forbidden('Cross-site request refused: requests under a sign-in session must come from this origin', {
      reason: 'csrf',
    });
  }
  const ttl = app.config.sessionTtlMs;
  if (session.expires_at.getTime() - now.getTime() < ttl - ROLL_EVERY_MS) {
    const expiresAt = new Date(now.getTime() + ttl);
    await extendSession(app.sql, app.config.secret, sessionId, expiresAt);
    setSessionCookie(ctx, sessionId, ttl);
  }
  app.audit.authenticated(principal, ctx, 'session');
  return principal;
}

/** Who a live session acts as now: its active user, or the key it was opened with while that key lives. */
async function sessionOwner(app: AppContext, session: SessionUser, now: Date): Promise<Principal | undefined> {
  if (session.user) return session.user.active ? userPrincipal(session.tenant_id, session.user) : undefined;
  return session.api_key_id ? principalForKeyId(app.sql, session.api_key_id, now) : undefined;
}

/** This service's origin as the client addressed it (`X-Forwarded-*` with CINV_TRUST_PROXY). Koa's ctx.origin is the Origin header. */
export const ownOrigin = (ctx: Context): string => `${ctx.protocol}://${ctx.host}`;

/** Whether an unsafe request comes from a page of this origin. */
export function sameOrigin(ctx: Context): boolean {
  const origin = ctx.get('origin');
  if (origin) return origin === ownOrigin(ctx);
  return ctx.get('sec-fetch-site') === 'same-origin';
}

export function setSessionCookie(ctx: Context, sessionId: string, ttlMs: number): void {
  ctx.cookies.set(SESSION_COOKIE, sessionId, {
    signed: true,
    httpOnly: true,
    sameSite: 'lax',
    secure: ctx.secure,
    maxAge: ttlMs,
    overwrite: true,
  });
}

export function clearSessionCookie(ctx: Context): void {
  ctx.cookies.set(SESSION_COOKIE, null, {
    signed: true,
    httpOnly: true,
    sameSite: 'lax',
    secure: ctx.secure,
    overwrite: true,
  });
}

/** When each key's last use was last written: listings show it to the minute, not to the request. */
const lastWritten = new Map<string, number>();
const USE_RESOLUTION_MS = 60_000;

function noteUse(app: AppContext, keyId: string): void {
  const now = app.now();
  const written = lastWritten.get(keyId);
  if (written !== undefined && now.getTime() - written < USE_RESOLUTION_MS) return;
  if (lastWritten.size >= 10_000) lastWritten.clear();
  lastWritten.set(keyId, now.getTime());
  // off the request's path: a failed bookkeeping write must not fail the request
  touchKey(app.sql, keyId, now).catch((error: unknown) =>
    app.logger.warn({ err: error }, 'could not record the last use of a key'),
  );
}
