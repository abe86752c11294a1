import type { Static, TSchema } from '@sinclair/typebox';
import type { Context } from 'koa';
import type { Action, Principal, Resource } from '../auth/principal.js';

/** The response header that says which database answered an analyst read (see RouteDefinition.analystRead). */
export const SERVED_BY_HEADER = 'X-Cinv-Served-By';

/**
 * A JSON body already written as text, for parts the database writes as JSON itself (the items of
 * the CI list): the router sends it as it is, where an object would be serialised.
 */
export class JsonText {
  constructor(readonly text: string) {}
}

/**
 * A JSON object of `parts`, each JSON text written elsewhere (the database's), followed by the
 * members of `rest`, serialised here.
 */
export function jsonWith(parts: Record<string, string>, rest: Record<string, unknown>): JsonText {
  const written = Object.entries(parts).map(([name, text]) => `${JSON.stringify(name)}:${text}`);
  const tail = JSON.stringify(rest);
  return new JsonText(`{${written.join(',')}${tail === '{}' ? '}' : `,${tail.slice(1)}`}`);
}

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface ResponseSpec {
  description: string;
  /** JSON body schema; validated against the real response when response checking is on. */
  schema?: TSchema;
  /** Other media types the route can produce for this status, e.g. `text/csv`. */
  otherContent?: Record<string, { description?: string }>;
  headers?: Record<string, { description: string; schema: Record<string, unknown> }>;
}

/** `public`: no credentials; `authenticated`: any valid credentials (the route decides the rest); else a permission. */
export type Access = 'public' | 'authenticated' | { resource: Resource; action: Action };

/** The target an audit event names (`target_type`, `target_id`, `target_name`). */
export interface DeniedTarget {
  type: string;
  id: string;
  name?: string | null;
}

type Maybe<T extends TSchema | undefined> = T extends TSchema ? Static<T> : Record<string, never>;

export interface RouteRequest<
  App,
  P extends TSchema | undefined,
  Q extends TSchema | undefined,
  B extends TSchema | undefined,
> {
  ctx: Context;
  /** What the application hands every handler (its services and settings). */
  app: App;
  params: Maybe<P>;
  query: Maybe<Q>;
  body: Maybe<B>;
  /** Present on every route that is not public. */
  principal: Principal;
}

/**
 * One declaration per route: the router, the request validation, the TypeScript types of the
 * handler's input and the OpenAPI operation are all derived from it.
 */
export interface RouteDefinition<
  App,
  P extends TSchema | undefined = TSchema | undefined,
  Q extends TSchema | undefined = TSchema | undefined,
  B extends TSchema | undefined = TSchema | undefined,
> {
  method: Method;
  /** OpenAPI-style path: `/api/v1/configuration-items/{ci_id}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  access: Access;
  params?: P;
  query?: Q;
  body?: B;
  responses: Record<number, ResponseSpec>;
  /** Media types besides JSON the handler reads as a stream itself (the body is then neither parsed nor validated). */
  streamTypes?: string[];
  /** The audit event a refused permission writes instead of `permission.denied` (credential reveals). */
  deniedEvent?: 'credentials.reveal_denied';
  /**
   * A request that presents no credential at all asks whether it is signed in (a browser checking
   * its session): its 401 is an answer, not a failed authentication, and is not audited. One that
   * presents a key or an ended session is audited as on every route.
   */
  probe?: true;
  /**
   * What the audit event of a refused request (403) names as its target: the source of a refused
   * credential reveal. Looked up once the request is refused, whether by the route's permission or
   * by the handler; a lookup that fails leaves the target out rather than the event.
   */
  deniedTarget?: (request: { ctx: Context; app: App; principal: Principal }) => Promise<DeniedTarget | undefined>;
  /**
   * An analyst read (search, statistics, history, exports, the past): it may be served by a read
   * replica. A function decides from the request's query (the inventory only when it asks for the past).
   */
  analystRead?: boolean | ((query: Record<string, unknown>) => boolean);
  /** Returns the JSON body, or sets `ctx.body` itself (streams) and returns undefined. */
  handler: (request: RouteRequest<App, P, Q, B>) => Promise<unknown>;
}

/**
 * The `defineRoute` of an application whose handlers are given `App`: an identity function that lets
 * TypeScript infer the handler's parameter types from the schemas. The HTTP layer knows nothing of
 * what `App` holds; the application binds it once.
 */
export function routeDefiner<App>() {
  return <P extends TSchema | undefined, Q extends TSchema | undefined, B extends TSchema | undefined>(
    route: RouteDefinition<App, P, Q, B>,
  ): RouteDefinition<App, P, Q, B> => route;
}

// Handlers are contravariant in their request type; the registry only needs them callable.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRouteOf<App> = RouteDefinition<App, any, any, any>;
/** A route of any application, as the OpenAPI builder reads it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = AnyRouteOf<any>;

export const toKoaPath = (path: string): string => path.replace(/\{(\w+)\}/g, ':$1');
