import { Type, type Static } from '@sinclair/typebox';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { defineRoute, type AnyRoute, type AppContext } from '../../context.js';
import { notFound } from '../../platform/errors.js';
import type { LoadShedder } from '../../platform/http/load.js';
import { JsonObject, Nullable, Timestamp } from '../../platform/http/schemas.js';
import { historyCoversSince } from '../../history/records/retention.js';
import { metricsRegistry } from '../../platform/observability/metrics.js';

const tags = ['System'];
const require = createRequire(import.meta.url);
const swaggerDir = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const redocDir = path.join(path.dirname(require.resolve('redoc/package.json')), 'bundles');

/**
 * The one address ReDoc's bundle would load from elsewhere (the logo beside "API docs by Redocly"),
 * replaced by an empty inline image: the pages load nothing from another origin.
 */
const REDOC_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg';
const EMPTY_IMAGE = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='1' height='1'/%3E";
let redocBundle: Promise<string> | undefined;
const localRedoc = (file: string) =>
  (redocBundle ??= readFile(file, 'utf8').then((text) => text.replaceAll(REDOC_LOGO, EMPTY_IMAGE)));

/**
 * What the documentation pages may load: their own origin only (styles and images inline too, which
 * both renderers write). Swagger UI's page starts it with one inline script.
 */
const DOCS_POLICY = (inlineScript: boolean) =>
  `default-src 'self'; script-src 'self'${inlineScript ? " 'unsafe-inline'" : ''}; style-src 'self' 'unsafe-inline'; ` +
  "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'";

/** The only files served from npm packages; nothing is fetched from a CDN. */
const ASSETS: Record<string, { file: string; type: string; load?: (file: string) => Promise<string> }> = {
  'swagger-ui.css': { file: path.join(swaggerDir, 'swagger-ui.css'), type: 'text/css' },
  'swagger-ui-bundle.js': { file: path.join(swaggerDir, 'swagger-ui-bundle.js'), type: 'application/javascript' },
  'favicon-32x32.png': { file: path.join(swaggerDir, 'favicon-32x32.png'), type: 'image/png' },
  'redoc.standalone.js': {
    file: path.join(redocDir, 'redoc.standalone.js'),
    type: 'application/javascript',
    load: localRedoc,
  },
};

const DatabaseCheck = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]),
  kind: Type.Union([Type.Literal('embedded'), Type.Literal('postgres')]),
  latency_ms: Type.Optional(Type.Number({ description: 'Round trip of `select 1` on the health connection.' })),
});

const RateLimitCheck = Type.Object(
  {
    backend: Type.Union([Type.Literal('redis'), Type.Literal('memory')]),
    status: Type.Union([Type.Literal('ok'), Type.Literal('degraded')]),
    detail: Type.Optional(Type.String()),
  },
  {
    description:
      'Where request limits are counted: `redis` (shared by replicas; `degraded` while unreachable, when each process counts alone) or `memory`.',
  },
);

const ReplicaCheck = Type.Object(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('lagging'), Type.Literal('unavailable')]),
    lag_seconds: Nullable(
      Type.Number({
        description: 'How far the replica is behind the primary; null while it cannot be reached or does not replay.',
      }),
    ),
    max_lag_seconds: Type.Number({ description: 'CINV_REPLICA_MAX_LAG: beyond it the primary serves analyst reads.' }),
    detail: Type.Optional(Type.String()),
  },
  {
    description:
      'The read replica (DATABASE_REPLICA_URL), present only when one is set. Analyst reads go to it while it is `ok`; ' +
      'while it is `lagging` or `unavailable` the primary serves them, so the instance stays healthy.',
  },
);

const Days = Nullable(Type.Number({ description: 'Days; null keeps forever.' }));

const HistoryCoverage = Type.Object(
  {
    covers_since: Nullable(
      Timestamp('The earliest moment from which every change is still kept; null when all history is kept forever.'),
    ),
    retention: Type.Object({
      default_days: Days,
      by_ci_type: Type.Record(Type.String(), Days, { description: 'CINV_CHANGE_RETENTION_OVERRIDES.' }),
    }),
  },
  {
    description:
      'What the change history covers (CINV_CHANGE_RETENTION); the sweep removes what is older (beyond the spec).',
  },
);

const Health = Type.Object({
  status: Type.Union([Type.Literal('ok'), Type.Literal('unavailable')]),
  timestamp: Timestamp(),
  checks: Type.Object({ database: DatabaseCheck, replica: Type.Optional(ReplicaCheck), rate_limits: RateLimitCheck }),
  history: HistoryCoverage,
});

const DAY_MS = 86_400_000;
const daysOf = (ms: number | null) => (ms === null ? null : ms / DAY_MS);

function historyCoverage(app: AppContext): Static<typeof HistoryCoverage> {
  const retention = app.config.changeRetention;
  const since = historyCoversSince(retention, app.now());
  return {
    covers_since: since ? since.toISOString() : null,
    retention: {
      default_days: daysOf(retention.defaultMs),
      by_ci_type: Object.fromEntries([...retention.byType].map(([type, ms]) => [type, daysOf(ms)])),
    },
  };
}

const Readiness = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('saturated'), Type.Literal('unavailable')]),
  timestamp: Timestamp(),
  checks: Type.Object({
    database: DatabaseCheck,
    search: Type.Object(
      {
        backend: Type.Union([Type.Literal('postgres'), Type.Literal('opensearch')]),
        status: Type.Union([Type.Literal('ok'), Type.Literal('degraded'), Type.Literal('unavailable')]),
        detail: Type.Optional(Type.String()),
      },
      {
        description:
          'The search backend; an unavailable OpenSearch does not make the instance unready (only search needs it).',
      },
    ),
    rate_limits: RateLimitCheck,
    load: Type.Object({
      in_flight: Type.Integer({ description: 'Requests being served now (health and metrics excluded).' }),
      max_in_flight: Type.Integer({ description: 'CINV_MAX_IN_FLIGHT: beyond it requests are answered 503 at once.' }),
      db_connections_busy: Type.Integer(),
      db_connections: Type.Integer({ description: 'The pool size (CINV_DB_POOL_SIZE; 1 on the embedded database).' }),
      db_waiting: Type.Integer({ description: 'Requests waiting for a database connection.' }),
      db_oldest_wait_ms: Type.Integer(),
    }),
  }),
});

function replicaCheck(app: AppContext): { replica?: Static<typeof ReplicaCheck> } {
  if (!app.analystReads) return {};
  const { status, lagSeconds, detail } = app.analystReads.state();
  return {
    replica: {
      status,
      lag_seconds: lagSeconds,
      max_lag_seconds: app.config.replicaMaxLagMs / 1000,
      ...(detail === undefined ? {} : { detail }),
    },
  };
}

async function checkDatabase(app: AppContext): Promise<Static<typeof DatabaseCheck>> {
  const probe = await app.health.probe();
  return probe.up
    ? { status: 'ok', kind: app.database, latency_ms: probe.latencyMs }
    : { status: 'unavailable', kind: app.database };
}

const health = defineRoute({
  method: 'GET',
  path: '/health',
  operationId: 'health',
  summary: 'Liveness: the process runs and reaches its database',
  description:
    'Answers 200 while the process runs and the database answers `select 1` on a connection of its own, which never ' +
    'waits behind busy requests: a saturated instance is still live. 503 with the same body when the database cannot ' +
    'be reached (within CINV_DB_ACQUIRE_TIMEOUT). Never refused by load shedding. Use it as the liveness check. With a read replica (DATABASE_REPLICA_URL), `checks.replica` reports its lag; a replica lagging or down leaves the answer 200 (the primary serves its reads).',
  tags,
  access: 'public',
  responses: {
    200: { description: 'Live.', schema: Health },
    503: { description: 'The database is unreachable.', schema: Health },
  },
  async handler({ app, ctx }) {
    const database = await checkDatabase(app);
    const ok = database.status === 'ok';
    ctx.status = ok ? 200 : 503;
    ctx.set('Cache-Control', 'no-store');
    return {
      status: ok ? 'ok' : 'unavailable',
      timestamp: new Date().toISOString(),
      checks: { database, ...replicaCheck(app), rate_limits: app.limits.state() },
      history: historyCoverage(app),
    };
  },
});

function readinessRoute(load: LoadShedder) {
  return defineRoute({
    method: 'GET',
    path: '/health/ready',
    operationId: 'readiness',
    summary: 'Readiness: whether to send this instance more traffic',
    description:
      '200 `ready` when the database answers and the instance has room. 503 `saturated` while it serves ' +
      'CINV_MAX_IN_FLIGHT requests, while its event loop lags more than CINV_SHED_EVENT_LOOP_DELAY, or while requests ' +
      'wait longer than CINV_SHED_DB_WAIT (or half of CINV_DB_ACQUIRE_TIMEOUT) for a database connection; 503 ' +
      "`unavailable` when the database cannot be reached. Use it as the load balancer's readiness " +
      'check: a saturated instance drops out of rotation until it drains, without being restarted.',
    tags,
    access: 'public',
    responses: {
      200: { description: 'Ready for traffic.', schema: Readiness },
      503: { description: 'Saturated or without its database.', schema: Readiness },
    },
    async handler({ app, ctx }) {
      const [database, search] = await Promise.all([checkDatabase(app), app.search.health()]);
      const queue = app.gate.queue;
      const waitingTooLong = queue.oldestWaitMs > app.config.dbAcquireTimeoutMs / 2;
      const status =
        database.status !== 'ok' ? 'unavailable' : load.saturated || waitingTooLong ? 'saturated' : 'ready';
      ctx.status = status === 'ready' ? 200 : 503;
      ctx.set('Cache-Control', 'no-store');
      return {
        status,
        timestamp: new Date().toISOString(),
        checks: {
          database,
          search,
          rate_limits: app.limits.state(),
          load: {
            in_flight: load.inFlight,
            max_in_flight: load.maxInFlight,
            db_connections_busy: app.gate.busy,
            db_connections: app.gate.capacity,
            db_waiting: queue.waiting,
            db_oldest_wait_ms: queue.oldestWaitMs,
          },
        },
      };
    },
  });
}

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
    ctx.set('Content-Security-Policy', DOCS_POLICY(true));
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
    ctx.set('Content-Security-Policy', DOCS_POLICY(false));
    ctx.body = html(
      'cinv API reference',
      '',
      '<redoc spec-url="/openapi.json"></redoc><script src="/docs/assets/redoc.standalone.js"></script>',
    );
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
  responses: {
    200: { description: 'The file.', otherContent: { 'application/javascript': {}, 'text/css': {}, 'image/png': {} } },
  },
  async handler({ ctx, params }) {
    const asset = Object.hasOwn(ASSETS, params.file) ? ASSETS[params.file] : undefined;
    if (!asset) throw notFound('No such documentation asset');
    ctx.type = asset.type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = asset.load ? await asset.load(asset.file) : createReadStream(asset.file);
  },
});

/** `/openapi.json` is defined where the document is built, since it needs the full route list. */
export function systemRoutes(openApi: () => Record<string, unknown>, load: LoadShedder): AnyRoute[] {
  const document = defineRoute({
    method: 'GET',
    path: '/openapi.json',
    operationId: 'openapi',
    summary: 'This OpenAPI 3.1 document',
    tags,
    access: 'public',
    responses: { 200: { description: 'The OpenAPI document.', schema: JsonObject('An OpenAPI 3.1 document.') } },
    async handler() {
      return openApi();
    },
  });
  return [health, readinessRoute(load), metrics, document, docs, redoc, assets];
}
