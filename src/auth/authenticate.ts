import type { Context } from 'koa';
import type { AppContext } from '../context.js';
import { unauthorized } from '../http/errors.js';
import { principalForKey } from './api-keys.js';
import type { Principal } from './principal.js';

const KEY_QUERY_PARAMETERS = ['api_key', 'apikey', 'api-key', 'key', 'x-api-key', 'token', 'access_token'];

/**
 * Resolves the request's principal from the `X-API-Key` header. Keys are never read from the query
 * string (they would end up in access logs and browser history); a request that tries gets told.
 */
export async function authenticate(ctx: Context, app: AppContext): Promise<Principal> {
  const key = ctx.get('x-api-key');
  if (!key) {
    const inQuery = Object.keys(ctx.query).some((name) => KEY_QUERY_PARAMETERS.includes(name.toLowerCase()));
    throw unauthorized(inQuery ? 'API keys are accepted only in the X-API-Key header' : 'missing X-API-Key header');
  }
  const principal = await principalForKey(app.sql, app.config.secret, key, app.now());
  if (!principal) {
    app.logger.info({ method: ctx.method, path: ctx.path, ip: ctx.ip }, 'authentication failed');
    throw unauthorized('invalid, expired or revoked API key');
  }
  ctx.state.principal = principal;
  return principal;
}
