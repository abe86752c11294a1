import Koa from 'koa';
import { createSession } from 'koa-session';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { derivedKey } from './platform/config/derived-key.js';
import { readFileSync } from 'node:fs';
import { apiKeyRoutes } from './identity/api-keys/routes.js';
import { auditRefusal } from './platform/audit/log.js';
import { auditRoutes } from './identity/audit-events/routes.js';
import { savedViewRoutes } from './inventory/saved-views/routes.js';
import { baselineRoutes } from './history/baselines/routes.js';
import { subscriptionRoutes } from './history/subscriptions/routes.js';
import { BatchPayload } from './history/subscriptions/schema.js';
import { diffRoutes } from './inventory/diffs/routes.js';
import { identityRoutes } from './inventory/identities/routes.js';
import { qualityRoutes } from './inventory/quality/routes.js';
import { changeRuleRoutes } from './history/change-rules/routes.js';
import { installChangeRules } from './history/change-rules/service.js';
import { impactRoutes } from './inventory/impact/routes.js';
import { queryRoutes } from './inventory/queries/routes.js';
import { authenticate, signInRedirect } from './identity/sign-in/authenticate.js';
import { authRoutes } from './identity/sign-in/routes.js';
import { changeRoutes } from './history/changes/routes.js';
import { collectorRoutes } from './collection/collectors/routes.js';
import { configurationItemRoutes } from './inventory/configuration-items/routes.js';
import type { AppContext } from './context.js';
import { errorMiddleware } from './platform/http/error-middleware.js';
import { AppError } from './platform/errors.js';
import { buildOpenApi } from './platform/http/openapi.js';
import type { AnyRoute } from './context.js';
import { LoadShedder, type LoadLimits } from './platform/http/load.js';
import { buildRouter } from './platform/http/router.js';
import { enableProcessMetrics, httpRequestDuration } from './platform/observability/metrics.js';
import { relationshipRoutes } from './inventory/relationships/routes.js';
import { searchRoutes } from './history/changes/search-routes.js';
import { packagePath } from './platform/paths.js';
import { sourceRoutes } from './collection/sources/routes.js';
import { systemRoutes } from './operations/system/routes.js';
import { teamRoutes } from './identity/teams/routes.js';
import { tokenRoutes } from './identity/tokens/routes.js';
import { userRoutes } from './identity/users/routes.js';
import { webInterface } from './ui/serve.js';
import { DEFAULT_TENANT_ID } from './platform/tenants.js';

const { version } = JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as { version: string };

export const API_DESCRIPTION =
  'Inventory of discovered infrastructure components (configuration items) with lifecycle states and change ' +
  'history. Every `/api/v1` route needs an `X-API-Key` header (an API key or a user token) or a sign-in ' +
  'session cookie (single sign-on at `/auth/login`, or an API key exchanged at `POST /auth/session`; the web interface ' +
  'at `/ui/` uses these). Requests are rate-limited per credential (`X-RateLimit-*` headers, 429). ' +
  'Errors share one envelope: ' +
  '`{error: {id, code, message, details, path, method}}`.';

/** Every API route, in the order they appear in the OpenAPI document. */
export const apiRoutes: readonly AnyRoute[] = [
  ...configurationItemRoutes,
  ...relationshipRoutes,
  ...impactRoutes,
  ...diffRoutes,
  ...baselineRoutes,
  ...changeRoutes,
  ...subscriptionRoutes,
  ...searchRoutes,
  ...sourceRoutes,
  ...collectorRoutes,
  ...authRoutes,
  ...userRoutes,
  ...teamRoutes,
  ...tokenRoutes,
  ...apiKeyRoutes,
  ...auditRoutes,
  ...savedViewRoutes,
  ...queryRoutes,
  ...identityRoutes,
  ...qualityRoutes,
  ...changeRuleRoutes,
];

/** AES-256-GCM for the sign-in cookie; a cookie that does not decrypt is no sign-in at all. */
function loginCookieCodec(secret: string): { encode: (value: unknown) => string; decode: (text: string) => unknown } {
  const key = derivedKey(secret, 'cinv login cookie v1');
  return {
    encode(value) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const sealed = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
      return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url');
    },
    decode(text) {
      try {
        const raw = Buffer.from(text, 'base64url');
        const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
        decipher.setAuthTag(raw.subarray(12, 28));
        return JSON.parse(
          Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8'),
        ) as unknown;
      } catch {
        // koa-session starts a fresh session on a SyntaxError (and answers 500 on anything else)
        throw new SyntaxError('unreadable sign-in cookie');
      }
    },
  };
}

/**
 * The shedding bounds, with the defaults of the database in use. On PostgreSQL a mean event-loop
 * delay of 50 ms, or a request waiting for a connection for half of CINV_DB_ACQUIRE_TIMEOUT (when
 * readiness reports the instance saturated too), sheds. The embedded database runs on the event loop
 * and has one session for every job, so its own work shows as delay and as waiting: there only
 * explicitly set bounds apply.
 */
function loadLimits(app: AppContext): LoadLimits {
  const { config } = app;
  const onServer = app.database === 'postgres';
  return {
    maxInFlight: config.maxInFlight,
    maxExports: config.maxExports,
    maxNdjsonPushes: config.maxNdjsonPushes,
    maxLongPolls: config.maxLongPolls,
    maxLongPollsPerPrincipal: config.maxLongPollsPerPrincipal,
    maxEventLoopDelayMs: config.shedEventLoopDelayMs ?? (onServer ? 50 : 0),
    maxDatabaseWaitMs: config.shedDatabaseWaitMs ?? (onServer ? config.dbAcquireTimeoutMs / 2 : 0),
  };
}

/** Errors that escape the envelope middleware: a client that hung up mid-stream is routine. */
function reportResponseError(app: AppContext, error: NodeJS.ErrnoException): void {
  if (error.code === 'ECONNRESET' || error.code === 'EPIPE' || error.code === 'ERR_STREAM_PREMATURE_CLOSE') {
    app.logger.debug({ code: error.code }, 'client went away during the response');
    return;
  }
  app.logger.error({ err: error }, 'response failed');
}

const timeRequests: Koa.Middleware = async (ctx, next) => {
  const stop = httpRequestDuration.startTimer();
  try {
    await next();
  } finally {
    stop({
      method: ctx.method,
      route: (ctx.state.route as string | undefined) ?? 'unmatched',
      status: String(ctx.status),
    });
  }
};

/**
 * This process's own changes to keys, users, grants or scopes are not left to the notification
 * (sql/0031), which could arrive after the client's next request: any request that may have written
 * drops the cached principals before its response goes out (the sign-in callback updates the user
 * and its teams on a GET).
 */
function forgetPrincipalsAfterWrites(app: AppContext): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } finally {
      if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || ctx.path === '/auth/callback') app.principals?.forget();
    }
  };
}

/** Runs after the router and its method check: turns their bare statuses into the envelope. */
const envelopeBareStatuses: Koa.Middleware = async (ctx, next) => {
  await next();
  if (ctx.body != null) return;
  if (ctx.status === 404) throw new AppError(404, 'HTTP_404', 'Route not found');
  if (ctx.status === 405) {
    throw new AppError(405, 'HTTP_405', 'Method not allowed', { allowed: ctx.response.get('Allow').split(/,\s*/) });
  }
};

/**
 * A sign-in in progress (state, nonce, PKCE verifier, where to return) rides in a short-lived
 * cookie, encrypted as well as signed: the verifier must not be readable by page scripts or logs.
 * Only the two steps of a sign-in read or write it; other requests do not pay for its bookkeeping.
 */
function signInCookie(app: AppContext, koa: Koa): Koa.Middleware {
  const loginSession = createSession(
    {
      key: 'cinv_login',
      maxAge: 10 * 60_000,
      httpOnly: true,
      sameSite: 'lax',
      signed: true,
      ...loginCookieCodec(app.config.secret),
    },
    koa,
  );
  return (ctx, next) =>
    ctx.path === '/auth/login' || ctx.path === '/auth/callback' ? loginSession(ctx, next) : next();
}

export interface AppOptions {
  /** Validate every JSON response against its declared schema (tests turn this on). */
  checkResponses?: boolean;
}

export function createApp(app: AppContext, options: AppOptions = {}): Koa {
  enableProcessMetrics();
  installChangeRules();
  let openApi: Record<string, unknown> | undefined;
  const routes: AnyRoute[] = [];
  const load = new LoadShedder(loadLimits(app), () => app.gate.queue.oldestWaitMs);
  routes.push(
    ...systemRoutes(
      () =>
        (openApi ??= buildOpenApi(routes, {
          version,
          description: API_DESCRIPTION,
          schemas: { SubscriptionBatch: BatchPayload },
        })),
      load,
    ),
    ...apiRoutes,
  );

  const koa = new Koa({ proxy: app.config.trustProxy });
  // signs the session cookies; derived from CINV_SECRET, so every replica accepts every cookie
  koa.keys = [derivedKey(app.config.secret, 'cinv cookie signing v1').toString('base64url')];
  koa.on('error', (error: NodeJS.ErrnoException) => reportResponseError(app, error));
  const router = buildRouter(app, routes, {
    checkResponses: options.checkResponses ?? false,
    authenticate,
    signInRedirect,
    analystApp: app.analystReads
      ? (ctx, primary, principal) => app.analystReads!.choose(ctx, primary, principal)
      : undefined,
    wrote: app.analystReads ? (_ctx, _app, principal) => app.analystReads!.wrote(principal) : undefined,
  });

  koa.use(timeRequests);
  koa.use(forgetPrincipalsAfterWrites(app));
  koa.use(load.middleware());
  koa.use(
    errorMiddleware(app.logger, (ctx, error, id) =>
      auditRefusal(app.audit, DEFAULT_TENANT_ID, ctx, error.status, error.details, id),
    ),
  );
  koa.use(envelopeBareStatuses);
  koa.use(signInCookie(app, koa));
  koa.use(webInterface());
  koa.use(router.routes());
  koa.use(router.allowedMethods());
  return koa;
}
