import type { Context } from 'koa';
import { auditChange } from '../../platform/audit/log.js';
import { issueApiKey, rightsOfKeyRequest } from '../../platform/auth/api-keys.js';
import { listApiKeys, revokeApiKey, type ApiKeyListing } from '../../platform/auth/api-key-store.js';
import { assertWithinCeiling } from '../../platform/auth/grant-ceiling.js';
import type { Principal } from '../../platform/auth/principal.js';
import type { AppContext } from '../../context.js';
import { checkedScopes } from '../grants/service.js';
import { notFound, validationFailed } from '../../platform/errors.js';
import { MAX_LIFETIME_MS, type NewApiKey } from './schema.js';

/**
 * Issues a key within the grant ceiling, with its audit event in the same transaction. The secret
 * is returned this once.
 */
export async function createApiKey(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  body: typeof NewApiKey.static,
): Promise<{ id: string; key: string }> {
  if (body.tier === 'adm' && (body.permissions !== undefined || body.scopes !== undefined)) {
    throw validationFailed([
      {
        field: 'permissions',
        location: 'body',
        message: 'adm keys hold everything: they take neither permissions nor scopes',
      },
    ]);
  }
  if (body.tier === 'ro' && body.permissions !== undefined) {
    throw validationFailed([
      {
        field: 'permissions',
        location: 'body',
        message: 'ro keys hold the read permissions of their tier; only svc keys take permissions',
      },
    ]);
  }
  const now = app.now();
  const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
  if (expiresAt && (!(expiresAt > now) || expiresAt.getTime() - now.getTime() > MAX_LIFETIME_MS)) {
    throw validationFailed([
      { field: 'expires_at', location: 'body', message: 'must lie in the future and at most ten years ahead' },
    ]);
  }
  const scopes = body.scopes ? await checkedScopes(app, principal, body.scopes) : undefined;
  const request = {
    tenantId: principal.tenantId,
    name: body.name,
    tier: body.tier,
    permissions: body.permissions ?? [],
    scopes,
    expiresAt,
  };
  assertWithinCeiling(principal, [{ subject: `the new ${body.tier} key`, after: rightsOfKeyRequest(request) }]);
  return issueApiKey(app.sql, app.config.secret, request, (tx, id) =>
    auditChange(
      tx,
      app.audit,
      ctx,
      principal,
      'api_key.created',
      { type: 'api_key', id, name: body.name },
      { tier: body.tier },
    ),
  );
}

/** Revokes a key with its audit event; the key is refused from the next request on. */
export async function revokeApiKeyAudited(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  keyId: string,
): Promise<void> {
  await app.sql.begin(async (tx) => {
    if (!(await revokeApiKey(tx, principal.tenantId, keyId, app.now())))
      throw notFound('API key not found', { key_id: keyId });
    await auditChange(tx, app.audit, ctx, principal, 'api_key.revoked', { type: 'api_key', id: keyId });
  });
}

/** The tenant's svc, adm and ro keys, newest first. */
export function listKeys(app: AppContext, principal: Principal, includeRevoked: boolean): Promise<ApiKeyListing[]> {
  return listApiKeys(app.sql, principal.tenantId, { includeRevoked });
}

/** One key of the tenant, revoked ones included. */
export async function apiKeyOr404(app: AppContext, principal: Principal, keyId: string): Promise<ApiKeyListing> {
  const [row] = await listApiKeys(app.sql, principal.tenantId, { id: keyId, includeRevoked: true });
  if (!row) throw notFound('API key not found', { key_id: keyId });
  return row;
}
