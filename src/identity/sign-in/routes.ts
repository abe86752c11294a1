import { Type } from '@sinclair/typebox';
import type { Context } from 'koa';
import { requestFacts } from '../../platform/audit/log.js';
import { DEFAULT_TENANT_ID } from '../../platform/tenants.js';
import { defineRoute, type AnyRoute, type AppContext } from '../../context.js';
import { AppError, forbidden, notFound } from '../../platform/errors.js';
import { Nullable, Uuid } from '../../platform/http/schemas.js';
import { ScopeView, scopeView } from '../grants/schema.js';
import { signInWithIdentity } from './service.js';
import {
  clearSessionCookie,
  keyPrincipalOrRefuse,
  ownOrigin,
  sameOrigin,
  SESSION_COOKIE,
  setSessionCookie,
} from './authenticate.js';
import { createSession, endSession } from '../../platform/auth/sessions.js';
import type { PendingLogin, SingleSignOn } from '../../platform/auth/sso.js';
import { dataScopesOf, type Principal } from '../../platform/auth/principal.js';

const Me = Type.Object({
  kind: Type.Union([Type.Literal('api_key'), Type.Literal('user')]),
  tier: Nullable(Type.String()),
  name: Type.String(),
  key_id: Nullable(Uuid()),
  user: Nullable(Type.Object({ id: Uuid(), name: Type.String(), email: Nullable(Type.String()) })),
  superadmin: Type.Boolean(),
  permissions: Type.Array(Type.String()),
  scopes: Type.Union([Type.Literal('all'), Type.Array(ScopeView)]),
});

function presentMe(principal: Principal) {
  const scopes = dataScopesOf(principal);
  return {
    kind: principal.kind,
    tier: principal.tier ?? null,
    name: principal.name,
    key_id: principal.keyId ?? null,
    user: principal.user ?? null,
    superadmin: principal.superadmin,
    permissions: [...principal.permissions].sort(),
    scopes: scopes === 'all' ? ('all' as const) : scopes.map(scopeView),
  };
}

const me = defineRoute({
  method: 'GET',
  path: '/api/v1/me',
  operationId: 'getMe',
  summary: 'Who the request acts as, with its effective permissions and data scopes',
  description:
    'What to check when a request is unexpectedly 403 or empty: the permissions and data scopes this request holds, ' +
    "as every other route sees them (for a user token: its user's own and team grants as of now, narrowed by the token). " +
    '`scopes` is `"all"` or a list of `{source_id, scope_id}`; an empty list sees no data.',
  tags: ['Users'],
  access: 'authenticated',
  responses: { 200: { description: 'The caller.', schema: Me } },
  async handler({ principal }) {
    return presentMe(principal);
  },
});

const TAGS = ['Single sign-on'];
/** Where a person lands after signing in when no (acceptable) `return_to` was given. */
const DEFAULT_LANDING = '/ui/';
/** A sign-in must come back from the provider within this time. */
const LOGIN_WINDOW_MS = 10 * 60_000;

function ssoOr404(app: AppContext): SingleSignOn {
  if (!app.sso) throw notFound('Single sign-on is not configured (CINV_OIDC_ISSUER)');
  return app.sso;
}

/** A path on this origin to go back to after signing in; anything else (another origin, a scheme) is ignored. */
function sameOriginPath(ctx: Context, value: string | undefined): string {
  if (!value || !value.startsWith('/') || value.startsWith('//') || value.startsWith('/\\')) return DEFAULT_LANDING;
  try {
    const url = new URL(value, ownOrigin(ctx));
    return url.origin === ownOrigin(ctx) ? `${url.pathname}${url.search}${url.hash}` : DEFAULT_LANDING;
  } catch {
    return DEFAULT_LANDING;
  }
}

interface LoginSession {
  login?: PendingLogin | null;
}

const login = defineRoute({
  method: 'GET',
  path: '/auth/login',
  operationId: 'signIn',
  summary: 'Start single sign-on',
  description:
    'Redirects to the identity provider (authorization code flow with PKCE, `state` and `nonce`). `return_to` is a path on ' +
    'this origin to land on afterwards; another origin is ignored (the default page is used). 404 when single sign-on is ' +
    'not configured.',
  tags: TAGS,
  access: 'public',
  query: Type.Object({
    return_to: Type.Optional(
      Type.String({ maxLength: 2048, description: 'A path on this origin, e.g. `/ui/changes?q=nginx`.' }),
    ),
  }),
  responses: {
    302: { description: 'To the identity provider.' },
    404: { description: 'Single sign-on is not configured.' },
  },
  async handler({ ctx, app, query }) {
    const sso = ssoOr404(app);
    const { url, pending } = await sso.start(sameOriginPath(ctx, query.return_to), app.now().getTime());
    (ctx.session as LoginSession).login = pending;
    ctx.set('Cache-Control', 'no-store');
    ctx.redirect(url.href);
    return undefined;
  },
});

const callback = defineRoute({
  method: 'GET',
  path: '/auth/callback',
  operationId: 'signInCallback',
  summary: 'Where the identity provider sends the person back',
  description:
    'Checks `state`, `nonce` and the PKCE verifier, creates the user at its first sign-in (name and email from the ' +
    'provider; no permissions until a team, a group mapping or an admin grants them), starts a session (an `HttpOnly`, ' +
    '`SameSite=Lax` cookie, `Secure` behind TLS) and redirects to where the sign-in started. A callback used twice, ' +
    'with a foreign `state` or a wrong `nonce` is a 400; a deactivated user is a 403.',
  tags: TAGS,
  access: 'public',
  query: Type.Object({}, { additionalProperties: Type.String() }),
  responses: {
    303: { description: 'Signed in: to the page the sign-in started from.' },
    400: { description: 'The sign-in cannot be completed (expired, replayed, tampered); start again.' },
    403: { description: 'The user is deactivated, or its email belongs to another user.' },
    404: { description: 'Single sign-on is not configured.' },
  },
  async handler({ ctx, app }) {
    const sso = ssoOr404(app);
    const session = ctx.session as LoginSession;
    const pending = session.login;
    // one use only: a replayed callback finds nothing to complete
    session.login = null;
    if (!pending || app.now().getTime() - pending.startedAt > LOGIN_WINDOW_MS) {
      throw refuseSignIn(
        ctx,
        'No sign-in is in progress in this browser (it expired or was completed already); start again at /auth/login',
        400,
        'sso_failed',
      );
    }
    const identity = await sso.finish(ctx.querystring, pending).catch((error: unknown) => {
      if (error instanceof AppError && error.status === 400) ctx.state.authFailure = { reason: 'sso_failed' };
      throw error;
    });
    // sign-in identities belong to the default tenant: one provider per deployment
    const tenantId = DEFAULT_TENANT_ID;
    const now = app.now();
    const { signedIn } = await signInWithIdentity(app, ctx, tenantId, identity, now);
    if (signedIn.outcome === 'deactivated')
      throw refuseSignIn(ctx, 'This user is deactivated', 403, 'user_deactivated');
    if (signedIn.outcome === 'email_taken') {
      throw refuseSignIn(
        ctx,
        'Another user holds this email; an admin must resolve it (or the provider must verify the email)',
        403,
        'email_taken',
      );
    }
    const user = signedIn.user;
    const sessionId = await createSession(app.sql, app.config.secret, {
      tenant_id: tenantId,
      user_id: user.id,
      created_at: now,
      expires_at: new Date(now.getTime() + app.config.sessionTtlMs),
    });
    setSessionCookie(ctx, sessionId, app.config.sessionTtlMs);
    const actor = { kind: 'user' as const, id: user.id, name: user.name };
    app.audit.record({
      tenantId,
      type: 'auth.succeeded',
      outcome: 'success',
      actor,
      details: { method: 'sso' },
      ...requestFacts(ctx),
    });
    ctx.status = 303;
    ctx.redirect(pending.returnTo);
    return undefined;
  },
});

function refuseSignIn(
  ctx: Context,
  message: string,
  status: 400 | 403,
  reason: 'sso_failed' | 'user_deactivated' | 'email_taken',
): AppError {
  ctx.state.authFailure = { reason };
  return new AppError(status, `HTTP_${status}`, message, { reason });
}

const logout = defineRoute({
  method: 'POST',
  path: '/auth/logout',
  operationId: 'signOut',
  summary: 'End the sign-in session',
  description:
    'Ends the session at once (on every replica) and clears its cookie: 204, or, with single sign-on configured, for a ' +
    "browser form post (`Accept: text/html`) a 303 to the provider's logout (RP-initiated logout, when the provider offers it; it sends the browser back to " +
    '`/auth/login`) or else to `/auth/login`. Must come from this origin (`Origin` or `Sec-Fetch-Site: same-origin`): a ' +
    'cross-site one is a 403. Without a session it is a 204 all the same.',
  tags: TAGS,
  access: 'public',
  responses: {
    204: { description: 'Signed out.' },
    303: { description: "Signed out; to the provider's logout or the sign-in page." },
    403: { description: 'Cross-site request refused (`HTTP_403`).' },
  },
  async handler({ ctx, app }) {
    const sessionId = ctx.cookies.get(SESSION_COOKIE, { signed: true });
    if (sessionId) {
      if (!sameOrigin(ctx)) {
        throw forbidden('Cross-site request refused: sign out from this origin', { reason: 'csrf' });
      }
      await endSession(app.sql, app.config.secret, sessionId);
    }
    clearSessionCookie(ctx);
    // a browser goes on to sign in again (through the provider's logout when it has one); without
    // single sign-on there is no page to send it to
    if (app.sso && ctx.accepts('json', 'html') === 'html') {
      const loginPage = `${ownOrigin(ctx)}/auth/login`;
      const providerLogout = await app.sso.endSessionUrl(loginPage);
      ctx.status = 303;
      ctx.redirect(providerLogout?.href ?? '/auth/login');
      return undefined;
    }
    ctx.status = 204;
    return undefined;
  },
});

const authMe = defineRoute({
  method: 'GET',
  path: '/auth/me',
  operationId: 'getSignedIn',
  summary: 'Who is signed in',
  description:
    'The same answer as `GET /api/v1/me`, under `/auth` for browser code that checks its session. A request that ' +
    'presents no credential at all gets its 401 without an `auth.failed` audit event: the web interface asks this at ' +
    'every page load before anyone signs in. A key or session that is refused is audited as on every route.',
  tags: TAGS,
  access: 'authenticated',
  probe: true,
  responses: { 200: { description: 'The caller.', schema: Me } },
  async handler({ principal }) {
    return presentMe(principal);
  },
});

const methods = defineRoute({
  method: 'GET',
  path: '/auth/methods',
  operationId: 'getSignInMethods',
  summary: 'How a person can sign in here',
  description:
    'For sign-in pages: `sso` is true when single sign-on is configured (`/auth/login`); `api_key` is always true ' +
    '(`POST /auth/session` exchanges an API key or user token for a session).',
  tags: TAGS,
  access: 'public',
  responses: {
    200: { description: 'The sign-in methods.', schema: Type.Object({ sso: Type.Boolean(), api_key: Type.Boolean() }) },
  },
  async handler({ app }) {
    return { sso: app.sso !== undefined, api_key: true };
  },
});

const keySession = defineRoute({
  method: 'POST',
  path: '/auth/session',
  operationId: 'signInWithKey',
  summary: 'Exchange an API key or user token for a sign-in session',
  description:
    'For the web interface where single sign-on is not configured (and for people who hold a key rather than an ' +
    'identity-provider account): the key is checked once and a session cookie (`HttpOnly`, `SameSite=Lax`, `Secure` ' +
    'behind TLS) is set, so the key is never kept in the browser. The session acts as the key does at each request: its ' +
    'tier, permissions and data scopes as they are now; revoking or expiring the key ends the session on its next request. ' +
    'Must come from this origin (`Origin` or `Sec-Fetch-Site: same-origin`), else 403. An unknown, revoked, expired or ' +
    'malformed key is a 401.',
  tags: TAGS,
  access: 'public',
  body: Type.Object(
    { api_key: Type.String({ minLength: 1, maxLength: 512, description: 'An API key or user token.' }) },
    { additionalProperties: false },
  ),
  responses: {
    200: { description: 'Signed in: who the session acts as.', schema: Me },
    401: { description: 'The key is unknown, revoked, expired or malformed.' },
    403: { description: 'Cross-site request refused (`HTTP_403`).' },
  },
  async handler({ ctx, app, body }) {
    if (!sameOrigin(ctx)) throw forbidden('Cross-site request refused: sign in from this origin', { reason: 'csrf' });
    const principal = await keyPrincipalOrRefuse(ctx, app, body.api_key);
    const now = app.now();
    const sessionId = await createSession(app.sql, app.config.secret, {
      tenant_id: principal.tenantId,
      user_id: null,
      // every key principal carries its key's id
      api_key_id: principal.keyId!,
      created_at: now,
      expires_at: new Date(now.getTime() + app.config.sessionTtlMs),
    });
    setSessionCookie(ctx, sessionId, app.config.sessionTtlMs);
    ctx.set('Cache-Control', 'no-store');
    app.audit.authenticated(principal, ctx, 'session');
    return presentMe(principal);
  },
});

export const authRoutes: AnyRoute[] = [me, login, callback, logout, authMe, methods, keySession];
