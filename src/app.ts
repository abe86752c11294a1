import Koa from 'koa';
import { readFileSync } from 'node:fs';
import { changeRoutes } from './changes/routes.js';
import { configurationItemRoutes } from './configuration-items/routes.js';
import type { AppContext } from './context.js';
import { errorMiddleware } from './http/error-middleware.js';
import { AppError } from './http/errors.js';
import { buildOpenApi } from './http/openapi.js';
import type { AnyRoute } from './http/route.js';
import { LoadShedder } from './http/load.js';
import { buildRouter } from './http/router.js';
import { enableProcessMetrics, httpRequestDuration } from './observability/metrics.js';
import { relationshipRoutes } from './relationships/routes.js';
import { searchRoutes } from './search/routes.js';
import { packagePath } from './paths.js';
import { sourceRoutes } from './sources/routes.js';
import { systemRoutes } from './system/routes.js';

const { version } = JSON.parse(readFileSync(packagePath('package.json'), 'utf8')) as { version: string };

export const API_DESCRIPTION =
  'Inventory of discovered infrastructure components (configuration items) with lifecycle states and change ' +
  'history. Every `/api/v1` route needs an `X-API-Key` header. Errors share one envelope: ' +
  '`{error: {id, code, message, details, path, method}}`.';

/** Every API route, in the order they appear in the OpenAPI document. */
export const apiRoutes: readonly AnyRoute[] = [
  ...configurationItemRoutes,
  ...relationshipRoutes,
  ...changeRoutes,
  ...searchRoutes,
  ...sourceRoutes,
];

export interface AppOptions {
  /** Validate every JSON response against its declared schema (tests turn this on). */
  checkResponses?: boolean;
}

export function createApp(app: AppContext, options: AppOptions = {}): Koa {
  enableProcessMetrics();
  let openApi: Record<string, unknown> | undefined;
  const routes: AnyRoute[] = [];
  const load = new LoadShedder(app.config.maxInFlight);
  routes.push(...systemRoutes(() => (openApi ??= buildOpenApi(routes, { version, description: API_DESCRIPTION })), load), ...apiRoutes);

  const koa = new Koa({ proxy: process.env.CINV_TRUST_PROXY === 'true' });
  // errors that escape the envelope middleware: a client that hung up mid-stream is routine
  koa.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'ECONNRESET' || error.code === 'EPIPE' || error.code === 'ERR_STREAM_PREMATURE_CLOSE') {
      app.logger.debug({ code: error.code }, 'client went away during the response');
      return;
    }
    app.logger.error({ err: error }, 'response failed');
  });
  const router = buildRouter(app, routes, { checkResponses: options.checkResponses ?? false });

  koa.use(async (ctx, next) => {
    const stop = httpRequestDuration.startTimer();
    try {
      await next();
    } finally {
      stop({ method: ctx.method, route: (ctx.state.route as string | undefined) ?? 'unmatched', status: String(ctx.status) });
    }
  });
  koa.use(load.middleware());
  koa.use(errorMiddleware(app.logger));
  // runs after the router and its method check: turns their bare statuses into the envelope
  koa.use(async (ctx, next) => {
    await next();
    if (ctx.body != null) return;
    if (ctx.status === 404) throw new AppError(404, 'HTTP_404', 'Route not found');
    if (ctx.status === 405) {
      throw new AppError(405, 'HTTP_405', 'Method not allowed', { allowed: ctx.response.get('Allow').split(/,\s*/) });
    }
    if (ctx.status === 501) throw new AppError(501, 'HTTP_501', 'Method not implemented');
  });
  koa.use(router.routes());
  koa.use(router.allowedMethods());
  return koa;
}
