import Router from '@koa/router';
import { METHODS } from 'node:http';
import type { TSchema } from '@sinclair/typebox';
import type { ValidateFunction } from 'ajv';
import type { Context } from 'koa';
import { can, type Principal } from '../auth/principal.js';
import { AppError, forbidden, validationFailed, type FieldError } from '../errors.js';
import type { RateLimits } from './rate-limit.js';
import { errorStatuses } from './openapi.js';
import { JsonText, toKoaPath, type AnyRouteOf } from './route.js';
import { parseJsonBody, readBody } from './body.js';
import { compileBody, compileRequest, compileResponse, toFieldErrors } from '../validation.js';

type Check = (input: unknown) => unknown;

/** What a request's allowance is counted against: the key or token, else the session's user. */
const credentialOf = (principal: Principal): string =>
  principal.keyId ? `key:${principal.keyId}` : `user:${principal.user?.id ?? principal.id}`;

/**
 * A NUL character can be neither stored nor compared by PostgreSQL, so a parameter holding one
 * could never match anything: it is a 422 naming the parameter rather than a database error.
 */
function refuseNul(values: Record<string, unknown>, location: FieldError['location']): void {
  const errors: FieldError[] = [];
  for (const [field, value] of Object.entries(values)) {
    const strings = Array.isArray(value) ? value : [value];
    if (strings.some((s) => typeof s === 'string' && s.includes('\u0000'))) {
      errors.push({ field, location, message: 'must not contain NUL characters (\\u0000)' });
    }
  }
  if (errors.length > 0) throw validationFailed(errors);
}

function requestCheck(schema: TSchema | undefined, location: FieldError['location']): Check {
  if (!schema) return () => ({});
  if (location === 'body') {
    const validate = compileBody(schema);
    // a body was parsed for this request alone: it is validated as it is
    return (input) => {
      const value = input ?? {};
      if (!validate(value)) throw validationFailed(toFieldErrors(validate.errors, location));
      return value;
    };
  }
  const validate = compileRequest(schema);
  return (input) => {
    // query and path objects are Koa's own and are coerced in place, so they are copied first
    // (their values are strings and arrays of strings: a copy one level down is a whole copy)
    const value = Object.fromEntries(
      Object.entries((input ?? {}) as Record<string, unknown>).map(([name, raw]) => [
        name,
        Array.isArray(raw) ? [...(raw as unknown[])] : raw,
      ]),
    );
    refuseNul(value, location);
    const errors = validate(value, location);
    if (errors.length > 0) throw validationFailed(errors);
    return value;
  };
}

function responseCheck<App>(route: AnyRouteOf<App>): (ctx: Context) => void {
  const validators = new Map<number, ValidateFunction>();
  for (const [status, spec] of Object.entries(route.responses)) {
    if (spec.schema) validators.set(Number(status), compileResponse(spec.schema));
  }
  return (ctx) => {
    const validate = validators.get(ctx.status);
    if (!validate || !ctx.response.is('json') || ctx.body == null) return;
    if (typeof ctx.body === 'object' && 'pipe' in ctx.body) return;
    const body = JSON.parse(typeof ctx.body === 'string' ? ctx.body : JSON.stringify(ctx.body)) as unknown;
    if (!validate(body)) {
      throw new Error(
        `response of ${route.method} ${route.path} does not match its schema: ${JSON.stringify(validate.errors)}`,
      );
    }
  };
}

/**
 * With checkResponses: a handler's error answer must be one its OpenAPI operation declares, so that
 * every test reaching an answer the document leaves out fails (as a 500) rather than a client
 * meeting it first.
 */
function statusCheck<App>(route: AnyRouteOf<App>): (error: unknown) => void {
  const declared = new Set([...Object.keys(route.responses).map(Number), ...errorStatuses(route)]);
  return (error) => {
    if (error instanceof AppError && !declared.has(error.status)) {
      throw new Error(
        `${route.method} ${route.path} answered ${error.status} (${error.message}), which its OpenAPI operation does not declare`,
      );
    }
  };
}

/**
 * Reads a JSON body: 415 for another media type or content encoding, 413 beyond the body limit
 * (counted after decompression), 400 for bytes that are not UTF-8, malformed JSON, a broken
 * compressed stream or a document nested deeper than MAX_JSON_DEPTH.
 */
async function readJsonBody(ctx: Context, limit: number): Promise<unknown> {
  if (!ctx.is('application/json'))
    throw new AppError(
      415,
      'HTTP_415',
      'Unsupported media type; send application/json' +
        (ctx.state.streamTypes ? ` or ${String(ctx.state.streamTypes)}` : ''),
    );
  return parseJsonBody(await readBody(ctx.req, limit));
}

/** What the router needs of the application its handlers are given. */
export interface RouterApp {
  limits: Pick<RateLimits, 'consume'>;
  config: { bodyLimitBytes: number };
}

export interface RouterOptions<App> {
  /** Check every JSON response against the route's declared schema (on in tests). */
  checkResponses: boolean;
  /** The request's principal; throws a 401 when its credentials are missing or not valid. */
  authenticate: (ctx: Context, app: App) => Promise<Principal>;
  /** Where a request refused a 401 is sent to sign in instead (a browser's page request), if anywhere. */
  signInRedirect?: (ctx: Context, app: App) => string | undefined;
  /** What an analyst read (see RouteDefinition.analystRead) is handed instead of `app`, if anything else. */
  analystApp?: (ctx: Context, app: App, principal: Principal | undefined) => App;
  /** Told of every request that may have written, once it succeeded. */
  wrote?: (ctx: Context, app: App, principal: Principal | undefined) => void;
}

const READ_METHODS = new Set(['GET', 'HEAD']);

const API = '/api/v1/';

/**
 * The API resource a path names (the segment after /api/v1/, in lower case: routes match in any
 * case), or undefined for a path outside the API.
 */
function resourceOf(path: string): string | undefined {
  if (path.length < API.length || path.slice(0, API.length).toLowerCase() !== API) return undefined;
  const end = path.indexOf('/', API.length);
  return path.slice(API.length, end === -1 ? undefined : end).toLowerCase();
}

type Handler<C, N, R> = (ctx: C, next: N) => R;

/** A middleware that hands each request to the one of its resource, or to `rest`. */
function byResource<C extends { path: string }, N, R>(
  held: ReadonlyMap<string | undefined, Handler<C, N, R>>,
  rest: Handler<C, N, R>,
): Handler<C, N, R> {
  return (ctx, next) => (held.get(resourceOf(ctx.path)) ?? rest)(ctx, next);
}

/**
 * Mounts route definitions: authentication, authorization, validation, handler, in that order.
 *
 * A router tests a request against the pattern of each of its routes in turn, so the routes are
 * kept in one router per API resource (and one for the rest) and a request goes to its resource's
 * router: with every route in one, matching took some 45 µs of a CI detail's CPU. A resource named
 * by a parameter would match any request: then all routes share one router, as before.
 */
export function buildRouter<App extends RouterApp>(
  app: App,
  routes: readonly AnyRouteOf<App>[],
  options: RouterOptions<App>,
) {
  const apart = !routes.some((route) => resourceOf(route.path)?.includes('{'));
  const groups = new Map<string | undefined, AnyRouteOf<App>[]>([[undefined, []]]);
  for (const route of routes) {
    const resource = apart ? resourceOf(route.path) : undefined;
    const group = groups.get(resource);
    if (group) group.push(route);
    else groups.set(resource, [route]);
  }
  const routers = [...groups].map(([resource, held]) => [resource, mountRoutes(app, held, options)] as const);
  const served = new Map(routers.map(([resource, router]) => [resource, router.routes()]));
  const allowed = new Map(routers.map(([resource, router]) => [resource, router.allowedMethods()]));
  return {
    routes: () => byResource(served, served.get(undefined)!),
    allowedMethods: () => byResource(allowed, allowed.get(undefined)!),
  };
}

function mountRoutes<App extends RouterApp>(
  app: App,
  routes: readonly AnyRouteOf<App>[],
  options: RouterOptions<App>,
): Router {
  // every method Node parses counts as known: one a path does not serve is a 405 with `Allow`, not a 501
  const router = new Router({ methods: [...METHODS] });
  for (const route of routes) router.register(toKoaPath(route.path), [route.method], routeHandler(app, route, options));
  return router;
}

/**
 * The request's principal, the request counted against its allowance; undefined when the request
 * was sent to sign in instead. Requests without valid credentials count against their client
 * address (guessing keys costs the guesser), the others against their credential.
 */
async function admit<App extends RouterApp>(
  ctx: Context,
  app: App,
  options: RouterOptions<App>,
): Promise<Principal | undefined> {
  let principal: Principal;
  try {
    principal = await options.authenticate(ctx, app);
  } catch (error) {
    await app.limits.consume(ctx, `ip:${ctx.ip}`);
    const signIn = error instanceof AppError && error.status === 401 ? options.signInRedirect?.(ctx, app) : undefined;
    if (signIn !== undefined) {
      ctx.redirect(signIn);
      return undefined;
    }
    throw error;
  }
  const interactive = ctx.state.signedInSession === true;
  await app.limits.consume(ctx, `${interactive ? 'session:' : ''}${credentialOf(principal)}`, interactive);
  return principal;
}

/** One route's request handling: authentication, authorization, validation, handler, in that order. */
function routeHandler<App extends RouterApp>(
  app: App,
  route: AnyRouteOf<App>,
  options: RouterOptions<App>,
): (ctx: Context) => Promise<void> {
  const checkParams = requestCheck(route.params, 'path');
  const checkQuery = requestCheck(route.query, 'query');
  const checkBody = requestCheck(route.body, 'body');
  const checkResponse = options.checkResponses ? responseCheck(route) : undefined;
  const checkStatus = options.checkResponses ? statusCheck(route) : undefined;
  return async (ctx: Context) => {
    ctx.state.route = route.path;
    if (route.deniedEvent) ctx.state.deniedEvent = route.deniedEvent;
    if (route.probe) ctx.state.probe = true;
    if (route.streamTypes) ctx.state.streamTypes = route.streamTypes.join(', ');
    let principal: Principal | undefined;
    // a refusal's audit event names what was refused, when the route says how to find it
    const naming = async (error: unknown): Promise<void> => {
      if (!route.deniedTarget || !principal || !(error instanceof AppError) || error.status !== 403) return;
      const asking = principal;
      ctx.state.deniedTarget = await route.deniedTarget({ ctx, app, principal: asking }).catch(() => undefined);
    };
    if (route.access !== 'public') {
      principal = await admit(ctx, app, options);
      // sent to sign in
      if (!principal) return;
      if (route.access !== 'authenticated') {
        const { resource, action } = route.access;
        if (!can(principal, resource, action)) {
          const refusal = forbidden(`This key may not ${action} ${resource.replace(/_/g, ' ')}`, {
            resource,
            action,
          });
          await naming(refusal);
          throw refusal;
        }
      }
    }
    const streamed = route.streamTypes !== undefined && typeof ctx.is(...route.streamTypes) === 'string';
    // bodies are read only on routes that declare one, after authentication
    const received = route.body && !streamed ? await readJsonBody(ctx, app.config.bodyLimitBytes) : undefined;
    const params = checkParams(ctx.params);
    const query = checkQuery(ctx.query);
    const body = streamed ? undefined : checkBody(received);
    const analyst =
      typeof route.analystRead === 'function'
        ? route.analystRead(query as Record<string, unknown>)
        : route.analystRead === true;
    const served = analyst && options.analystApp ? options.analystApp(ctx, app, principal) : app;
    const result = await route
      .handler({ ctx, app: served, params, query, body, principal: principal as Principal })
      .catch(async (error: unknown) => {
        checkStatus?.(error);
        await naming(error);
        throw error;
      });
    if (result instanceof JsonText) {
      ctx.type = 'application/json; charset=utf-8';
      ctx.body = result.text;
    } else if (result !== undefined) ctx.body = result;
    if (!READ_METHODS.has(route.method)) options.wrote?.(ctx, app, principal);
    checkResponse?.(ctx);
  };
}
