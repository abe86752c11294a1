import Router from '@koa/router';
import { METHODS } from 'node:http';
import type { TSchema } from '@sinclair/typebox';
import type { ValidateFunction } from 'ajv';
import type { Context } from 'koa';
import { can, type Principal } from '../auth/principal.js';
import { AppError, forbidden, validationFailed, type FieldError } from '../errors.js';
import type { RateLimits } from './rate-limit.js';
import { JsonText, toKoaPath, type AnyRouteOf } from './route.js';
import { parseJsonBody, readBody } from './body.js';
import { compileBody, compileRequest, compileResponse, toFieldErrors } from '../validation.js';

type Check = (input: unknown) => unknown;

/** What a request's allowance is counted against: the key or token, else the session's user. */
const credentialOf = (principal: Principal): string => (principal.keyId ? `key:${principal.keyId}` : `user:${principal.user?.id ?? principal.id}`);

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
    const value = Object.fromEntries(Object.entries((input ?? {}) as Record<string, unknown>).map(([name, raw]) => [name, Array.isArray(raw) ? [...(raw as unknown[])] : raw]));
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
      throw new Error(`response of ${route.method} ${route.path} does not match its schema: ${JSON.stringify(validate.errors)}`);
    }
  };
}

/**
 * Reads a JSON body: 415 for another media type or content encoding, 413 beyond the body limit
 * (counted after decompression), 400 for bytes that are not UTF-8, malformed JSON, a broken
 * compressed stream or a document nested deeper than MAX_JSON_DEPTH.
 */
async function readJsonBody(ctx: Context, limit: number): Promise<unknown> {
  if (!ctx.is('application/json')) throw new AppError(415, 'HTTP_415', 'Unsupported media type; send application/json' + (ctx.state.streamTypes ? ` or ${String(ctx.state.streamTypes)}` : ''));
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

/** Mounts route definitions: authentication, authorization, validation, handler, in that order. */
export function buildRouter<App extends RouterApp>(app: App, routes: readonly AnyRouteOf<App>[], options: RouterOptions<App>): Router {
  // every method Node parses counts as known: one a path does not serve is a 405 with `Allow`, not a 501
  const router = new Router({ methods: [...METHODS] });
  for (const route of routes) {
    const checkParams = requestCheck(route.params, 'path');
    const checkQuery = requestCheck(route.query, 'query');
    const checkBody = requestCheck(route.body, 'body');
    const checkResponse = options.checkResponses ? responseCheck(route) : undefined;
    router.register(toKoaPath(route.path), [route.method], async (ctx: Context) => {
      ctx.state.route = route.path;
      if (route.deniedEvent) ctx.state.deniedEvent = route.deniedEvent;
      if (route.streamTypes) ctx.state.streamTypes = route.streamTypes.join(', ');
      let principal: Principal | undefined;
      if (route.access !== 'public') {
        // requests without valid credentials count against their client address (guessing keys
        // costs the guesser), the others against their credential
        try {
          principal = await options.authenticate(ctx, app);
        } catch (error) {
          await app.limits.consume(ctx, `ip:${ctx.ip}`);
          const signIn = error instanceof AppError && error.status === 401 ? options.signInRedirect?.(ctx, app) : undefined;
          if (signIn !== undefined) {
            ctx.redirect(signIn);
            return;
          }
          throw error;
        }
        const interactive = ctx.state.signedInSession === true;
        await app.limits.consume(ctx, `${interactive ? 'session:' : ''}${credentialOf(principal)}`, interactive);
        if (route.access !== 'authenticated') {
          const { resource, action } = route.access;
          if (!can(principal, resource, action)) {
            throw forbidden(`This key may not ${action} ${resource.replace(/_/g, ' ')}`, { resource, action });
          }
        }
      }
      const streamed = route.streamTypes !== undefined && typeof ctx.is(...route.streamTypes) === 'string';
      // bodies are read only on routes that declare one, after authentication
      const received = route.body && !streamed ? await readJsonBody(ctx, app.config.bodyLimitBytes) : undefined;
      const params = checkParams(ctx.params);
      const query = checkQuery(ctx.query);
      const body = streamed ? undefined : checkBody(received);
      const analyst = typeof route.analystRead === 'function' ? route.analystRead(query as Record<string, unknown>) : route.analystRead === true;
      const served = analyst && options.analystApp ? options.analystApp(ctx, app, principal) : app;
      const result = await route.handler({ ctx, app: served, params, query, body, principal: principal as Principal });
      if (result instanceof JsonText) {
        ctx.type = 'application/json; charset=utf-8';
        ctx.body = result.text;
      } else if (result !== undefined) ctx.body = result;
      if (!READ_METHODS.has(route.method)) options.wrote?.(ctx, app, principal);
      checkResponse?.(ctx);
    });
  }
  return router;
}
