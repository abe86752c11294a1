import type { TSchema } from '@sinclair/typebox';
import { ErrorEnvelope } from './schemas.js';
import { isAlwaysServed } from './load.js';
import { SERVED_BY_HEADER, type AnyRoute } from './route.js';

type Json = Record<string, unknown>;

/** TypeBox schemas carry symbol keys; a JSON round trip leaves plain JSON Schema. */
const plain = (schema: TSchema): Json => JSON.parse(JSON.stringify(schema)) as Json;

function withoutId(schema: TSchema): Json {
  const { $id: _id, ...rest } = plain(schema);
  return rest;
}

function parameters(schema: TSchema | undefined, location: 'path' | 'query'): Json[] {
  if (!schema) return [];
  const object = plain(schema) as { properties?: Record<string, Json>; required?: string[] };
  return Object.entries(object.properties ?? {}).map(([name, property]) => {
    const { description, ...rest } = property;
    const parameter: Json = {
      name,
      in: location,
      required: location === 'path' || ((object.required ?? []).includes(name) && rest.default === undefined),
      schema: rest,
    };
    if (description) parameter.description = description;
    if (rest.type === 'array') Object.assign(parameter, { style: 'form', explode: true });
    return parameter;
  });
}

/**
 * The path's parameters: those its route declares, then any `{name}` of the path it declares no
 * schema for (the removed collector routes answer 410 whatever the id), which OpenAPI requires
 * every operation of the path to name all the same.
 */
function pathParameters(route: AnyRoute): Json[] {
  const declared = parameters(route.params, 'path');
  const named = new Set(declared.map((parameter) => parameter.name));
  const undeclared = [...route.path.matchAll(/\{(\w+)\}/g)]
    .map((match) => match[1]!)
    .filter((name) => !named.has(name))
    .map((name): Json => ({ name, in: 'path', required: true, schema: { type: 'string' } }));
  return [...declared, ...undeclared];
}

const ERROR_STATUSES: Record<number, string> = {
  400:
    'Invalid parameters (`INVALID_FILTER` for a malformed filter) or an unreadable body (`HTTP_400`: malformed JSON, ' +
    'JSON nested deeper than 64 levels, a broken gzip or deflate stream).',
  401:
    'Missing or invalid API key or sign-in session (`HTTP_401`). With single sign-on configured, a browser ' +
    '(`Accept: text/html`, GET) is redirected to `/auth/login` instead and brought back afterwards.',
  403: 'The key lacks the permission (`HTTP_403`).',
  404: 'Not found (`HTTP_404`).',
  413: 'The body exceeds CINV_BODY_LIMIT_BYTES, counted after decompression (`HTTP_413`).',
  415: 'The body is not `application/json`, or its Content-Encoding is not gzip, deflate, br or identity (`HTTP_415`).',
  429:
    'Too many requests from this credential (or, without valid credentials, this client address): `HTTP_429`, with ' +
    '`Retry-After`. Every authenticated answer carries `X-RateLimit-Limit` (requests per minute), `X-RateLimit-Remaining` ' +
    'and `X-RateLimit-Reset` (Unix seconds when the allowance is whole again).',
  422: 'Declared-parameter failure (`VALIDATION_ERROR`) or contradictory parameters (`HTTP_422`).',
  500: 'Internal error (`INTERNAL_SERVER_ERROR`); `error.id` matches the server log.',
  503:
    'Retry later, as `Retry-After` says (`HTTP_503`; `details.reason`: `overloaded` — the process serves ' +
    'CINV_MAX_IN_FLIGHT requests, its event loop lags or requests wait for database connections —, `exports_busy` — ' +
    'CINV_MAX_EXPORTS CSV exports are streaming —, `pushes_busy` — CINV_MAX_NDJSON_PUSHES NDJSON pushes are being ' +
    'taken —, `long_polls_busy` — CINV_MAX_LONG_POLLS change-feed reads are waiting —, `database_busy` — no connection within CINV_DB_ACQUIRE_TIMEOUT —, ' +
    '`database_unavailable`, `statement_timeout`, `contention`, `source_busy` for an ingest waiting on another, or ' +
    '`search_unavailable` when OpenSearch cannot answer).',
};

/** The error statuses a route can answer, from what it declares: auth, parameters, body, filters. */
export function errorStatuses(route: AnyRoute): number[] {
  const statuses = [500];
  if (!isAlwaysServed(route.path)) statuses.push(503);
  if (route.access !== 'public') statuses.push(401, 403, 429);
  if (route.params) statuses.push(404);
  if (route.query || route.params || route.body) statuses.push(422);
  if (route.body) statuses.push(400, 413, 415);
  if (route.query && 'filter' in ((plain(route.query).properties as Json | undefined) ?? {})) statuses.push(400);
  return [...new Set(statuses)].sort();
}

/** Said on analyst reads when a read replica is configured. */
const SERVED_BY = {
  [SERVED_BY_HEADER]: {
    description:
      'Which database answered: `replica` or `primary`. Present when a read replica (DATABASE_REPLICA_URL) is configured: ' +
      "this read goes to it while it is within CINV_REPLICA_MAX_LAG and has replayed past the caller's last write.",
    schema: { type: 'string', enum: ['replica', 'primary'] },
  },
};

function operation(route: AnyRoute): Json {
  const responses: Json = {};
  for (const [status, spec] of Object.entries(route.responses)) {
    const content: Json = {};
    if (spec.schema) content['application/json'] = { schema: withoutId(spec.schema) };
    for (const [type, other] of Object.entries(spec.otherContent ?? {})) {
      content[type] = other.description
        ? { schema: { type: 'string', description: other.description } }
        : { schema: { type: 'string' } };
    }
    const response: Json = { description: spec.description };
    if (Object.keys(content).length > 0) response.content = content;
    if (spec.headers) response.headers = spec.headers;
    if (route.analystRead && Number(status) < 300)
      response.headers = { ...(response.headers as Json | undefined), ...SERVED_BY };
    responses[status] = response;
  }
  const errorRef = { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } };
  for (const status of errorStatuses(route)) {
    if (responses[status]) continue;
    const response: Json = { description: ERROR_STATUSES[status], content: errorRef };
    if (status === 503 || status === 429)
      response.headers = {
        'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
      };
    responses[status] = response;
  }
  const op: Json = {
    operationId: route.operationId,
    summary: route.summary,
    tags: route.tags,
    parameters: [...pathParameters(route), ...parameters(route.query, 'query')],
    responses,
  };
  if (route.description) op.description = route.description;
  if (route.body) {
    const content: Json = { 'application/json': { schema: withoutId(route.body) } };
    for (const type of route.streamTypes ?? [])
      content[type] = { schema: { type: 'string', description: 'Streamed; see the operation description.' } };
    op.requestBody = { required: true, content };
  }
  op.security = route.access === 'public' ? [] : [{ ApiKeyAuth: [] }, { SessionCookie: [] }];
  if (typeof route.access === 'object') op['x-permission'] = `${route.access.resource}:${route.access.action}`;
  return op;
}

export interface OpenApiInfo {
  version: string;
  description: string;
  /** Schemas no route answers with but the document names: what cinv sends elsewhere (webhook bodies). */
  schemas?: Record<string, TSchema>;
}

/** The OpenAPI 3.1 document, derived from the same route definitions that serve requests. */
export function buildOpenApi(routes: readonly AnyRoute[], info: OpenApiInfo): Json {
  const paths: Record<string, Json> = {};
  for (const route of routes) {
    paths[route.path] ??= {};
    paths[route.path]![route.method.toLowerCase()] = operation(route);
  }
  return {
    openapi: '3.1.0',
    info: { title: 'cinv: Configuration Inventory Service', version: info.version, description: info.description },
    servers: [{ url: '/' }],
    security: [{ ApiKeyAuth: [] }, { SessionCookie: [] }],
    paths,
    components: {
      securitySchemes: {
        ApiKeyAuth: {
          type: 'apiKey',
          in: 'header',
          name: 'X-API-Key',
          description:
            'Keys look like `cinv_<tier>_...` (tiers adm, svc, ro, usr). Never accepted in the query string.',
        },
        SessionCookie: {
          type: 'apiKey',
          in: 'cookie',
          name: 'cinv_session',
          description:
            'A single sign-on session (`/auth/login`). Unsafe methods under a session need a same-origin `Origin` (or ' +
            '`Sec-Fetch-Site: same-origin`) header; others are 403.',
        },
      },
      schemas: {
        ErrorEnvelope: withoutId(ErrorEnvelope),
        ...Object.fromEntries(Object.entries(info.schemas ?? {}).map(([name, schema]) => [name, withoutId(schema)])),
      },
    },
  };
}
