import type { TSchema } from '@sinclair/typebox';
import { ErrorEnvelope } from './schemas.js';
import type { AnyRoute } from './route.js';

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

const ERROR_STATUSES: Record<number, string> = {
  400: 'Invalid parameters (`INVALID_FILTER` for a malformed filter).',
  401: 'Missing or invalid API key (`HTTP_401`, "Authentication required").',
  403: 'The key lacks the permission (`HTTP_403`).',
  404: 'Not found (`HTTP_404`).',
  422: 'Declared-parameter failure (`VALIDATION_ERROR`) or contradictory parameters (`HTTP_422`).',
  500: 'Internal error (`INTERNAL_SERVER_ERROR`); `error.id` matches the server log.',
};

function operation(route: AnyRoute): Json {
  const responses: Json = {};
  for (const [status, spec] of Object.entries(route.responses)) {
    const content: Json = {};
    if (spec.schema) content['application/json'] = { schema: withoutId(spec.schema) };
    for (const [type, other] of Object.entries(spec.otherContent ?? {})) {
      content[type] = other.description ? { schema: { type: 'string', description: other.description } } : { schema: { type: 'string' } };
    }
    const response: Json = { description: spec.description };
    if (Object.keys(content).length > 0) response.content = content;
    if (spec.headers) response.headers = spec.headers;
    responses[status] = response;
  }
  const errorRef = { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } };
  const applicable = Object.keys(ERROR_STATUSES)
    .map(Number)
    .filter((status) => {
      if (route.access === 'public') return status === 500 || (status === 404 && !!route.params);
      if (status === 404) return !!route.params;
      if (status === 400) return !!route.query && 'filter' in ((plain(route.query).properties as Json | undefined) ?? {});
      if (status === 422) return !!(route.query || route.params || route.body);
      return true;
    });
  for (const status of applicable) {
    if (!responses[status]) responses[status] = { description: ERROR_STATUSES[status], content: errorRef };
  }
  const op: Json = {
    operationId: route.operationId,
    summary: route.summary,
    tags: route.tags,
    parameters: [...parameters(route.params, 'path'), ...parameters(route.query, 'query')],
    responses,
  };
  if (route.description) op.description = route.description;
  if (route.body) op.requestBody = { required: true, content: { 'application/json': { schema: withoutId(route.body) } } };
  op.security = route.access === 'public' ? [] : [{ ApiKeyAuth: [] }];
  if (route.access !== 'public') op['x-permission'] = `${route.access.resource}:${route.access.action}`;
  return op;
}

export interface OpenApiInfo {
  version: string;
  description: string;
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
    security: [{ ApiKeyAuth: [] }],
    paths,
    components: {
      securitySchemes: {
        ApiKeyAuth: {
          type: 'apiKey',
          in: 'header',
          name: 'X-API-Key',
          description: 'Keys look like `cinv_<tier>_...` (tiers adm, svc, ro, usr). Never accepted in the query string.',
        },
      },
      schemas: { ErrorEnvelope: withoutId(ErrorEnvelope) },
    },
  };
}
