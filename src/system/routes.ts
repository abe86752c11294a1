import { Type } from '@sinclair/typebox';
import { createReadStream } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { notFound } from '../http/errors.js';
import { defineRoute, type AnyRoute } from '../http/route.js';
import { Timestamp } from '../http/schemas.js';
import { metricsRegistry } from '../observability/metrics.js';

const tags = ['System'];
const require = createRequire(import.meta.url);
const swaggerDir = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const redocDir = path.join(path.dirname(require.resolve('redoc/package.json')), 'bundles');

/** The only files served from npm packages; nothing is fetched from a CDN. */
const ASSETS: Record<string, { file: string; type: string }> = {
  'swagger-ui.css': { file: path.join(swaggerDir, 'swagger-ui.css'), type: 'text/css' },
  'swagger-ui-bundle.js': { file: path.join(swaggerDir, 'swagger-ui-bundle.js'), type: 'application/javascript' },
  'favicon-32x32.png': { file: path.join(swaggerDir, 'favicon-32x32.png'), type: 'image/png' },
  'redoc.standalone.js': { file: path.join(redocDir, 'redoc.standalone.js'), type: 'application/javascript' },
};

const HEALTH_TIMEOUT_MS = 2000;

const Health = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]),
  timestamp: Timestamp(),
  checks: Type.Object({
    database: Type.Object({ status: Type.String(), kind: Type.String(), latency_ms: Type.Optional(Type.Number()) }),
  }),
});

const health = defineRoute({
  method: 'GET',
  path: '/health',
  operationId: 'health',
  summary: 'Service health',
  description: 'Reports the database as well; answers 503 with the same body when the database cannot be reached.',
  tags,
  access: 'public',
  responses: {
    200: { description: 'Healthy.', schema: Health },
    503: { description: 'The database is unreachable.', schema: Health },
  },
  async handler({ app, ctx }) {
    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timeout')), HEALTH_TIMEOUT_MS);
    });
    let database: { status: string; kind: string; latency_ms?: number };
    try {
      await Promise.race([app.sql`select 1`, timeout]);
      database = { status: 'ok', kind: app.database, latency_ms: Date.now() - started };
    } catch {
      database = { status: 'unavailable', kind: app.database };
    } finally {
      clearTimeout(timer);
    }
    const ok = database.status === 'ok';
    ctx.status = ok ? 200 : 503;
    ctx.set('Cache-Control', 'no-store');
    return { status: ok ? 'ok' : 'unavailable', timestamp: new Date().toISOString(), checks: { database } };
  },
});

const metrics = defineRoute({
  method: 'GET',
  path: '/metrics',
  operationId: 'metrics',
  summary: 'Prometheus metrics',
  tags,
  access: 'public',
  responses: { 200: { description: 'Prometheus text exposition.', otherContent: { 'text/plain': {} } } },
  async handler({ ctx }) {
    ctx.type = metricsRegistry.contentType;
    ctx.body = await metricsRegistry.metrics();
  },
});

const html = (title: string, head: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
  `<title>${title}</title><link rel="icon" href="/docs/assets/favicon-32x32.png">${head}</head><body>${body}</body></html>`;

const docs = defineRoute({
  method: 'GET',
  path: '/docs',
  operationId: 'swaggerUi',
  summary: 'Interactive API documentation (Swagger UI)',
  tags,
  access: 'public',
  responses: { 200: { description: 'HTML page.', otherContent: { 'text/html': {} } } },
  async handler({ ctx }) {
    ctx.type = 'text/html';
    ctx.body = html(
      'cinv API',
      '<link rel="stylesheet" href="/docs/assets/swagger-ui.css">',
      '<div id="swagger-ui"></div><script src="/docs/assets/swagger-ui-bundle.js"></script>' +
        "<script>window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true });</script>",
    );
  },
});

const redoc = defineRoute({
  method: 'GET',
  path: '/redoc',
  operationId: 'redoc',
  summary: 'API reference (ReDoc)',
  tags,
  access: 'public',
  responses: { 200: { description: 'HTML page.', otherContent: { 'text/html': {} } } },
  async handler({ ctx }) {
    ctx.type = 'text/html';
    ctx.body = html('cinv API reference', '', '<redoc spec-url="/openapi.json"></redoc><script src="/docs/assets/redoc.standalone.js"></script>');
  },
});

const assets = defineRoute({
  method: 'GET',
  path: '/docs/assets/{file}',
  operationId: 'docsAsset',
  summary: 'Static files of the documentation pages',
  tags,
  access: 'public',
  params: Type.Object({ file: Type.String({ description: Object.keys(ASSETS).join(', ') }) }),
  responses: { 200: { description: 'The file.', otherContent: { 'application/javascript': {}, 'text/css': {}, 'image/png': {} } } },
  async handler({ ctx, params }) {
    const asset = ASSETS[params.file];
    if (!asset) throw notFound('No such documentation asset');
    ctx.type = asset.type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = createReadStream(asset.file);
  },
});

/** `/openapi.json` is defined where the document is built, since it needs the full route list. */
export function systemRoutes(openApi: () => Record<string, unknown>): AnyRoute[] {
  const document = defineRoute({
    method: 'GET',
    path: '/openapi.json',
    operationId: 'openapi',
    summary: 'This OpenAPI 3.1 document',
    tags,
    access: 'public',
    responses: { 200: { description: 'The OpenAPI document.', otherContent: { 'application/json': {} } } },
    async handler() {
      return openApi();
    },
  });
  return [health, metrics, document, docs, redoc, assets];
}
