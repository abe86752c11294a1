import { Type } from '@sinclair/typebox';
import { auditChange } from '../audit/log.js';
import { issueApiKey, rightsOfKeyRequest } from '../auth/api-keys.js';
import { assertWithinCeiling } from '../auth/grant-ceiling.js';
import { listApiKeys, revokeApiKey, type ApiKeyListing } from '../auth/api-key-store.js';
import { notFound, validationFailed } from '../http/errors.js';
import { defineRoute, type AnyRoute } from '../http/route.js';
import { Nullable, Timestamp, Uuid } from '../http/schemas.js';
import { checkedScopes } from '../users/rights.js';
import { PermissionName, ScopeBody, ScopeView, scopeView } from '../users/schema.js';

const MAX_LIFETIME_MS = 10 * 366 * 24 * 3600 * 1000;

const ApiKey = Type.Object({
  id: Uuid(),
  name: Type.String(),
  tier: Type.Union([Type.Literal('adm'), Type.Literal('svc'), Type.Literal('ro')]),
  hint: Type.String({ description: 'The last characters of the key.' }),
  permissions: Type.Array(Type.String(), { description: 'svc keys: what they may do; adm and ro keys have fixed access.' }),
  scopes: Type.Union([Type.Literal('all'), Type.Array(ScopeView)], { description: 'svc and scoped ro keys: the data they may see; `all` for adm keys and unscoped ro keys.' }),
  created_at: Timestamp(),
  expires_at: Nullable(Timestamp()),
  revoked_at: Nullable(Timestamp()),
  last_used_at: Nullable(Timestamp()),
});
const KeyParams = Type.Object({ key_id: Uuid('The API key identifier') });

function presentKey(row: ApiKeyListing) {
  return {
    id: row.id,
    name: row.name,
    tier: row.tier as 'adm' | 'svc' | 'ro',
    hint: row.key_hint,
    permissions: [...row.permissions].sort(),
    scopes: row.tier === 'svc' || (row.tier === 'ro' && row.narrow_scopes) ? row.scopes.map(scopeView) : ('all' as const),
    created_at: row.created_at.toISOString(),
    expires_at: row.expires_at?.toISOString() ?? null,
    revoked_at: row.revoked_at?.toISOString() ?? null,
    last_used_at: row.last_used_at?.toISOString() ?? null,
  };
}

const TAGS = ['API keys'];

const list = defineRoute({
  method: 'GET',
  path: '/api/v1/api-keys',
  operationId: 'listApiKeys',
  summary: 'List API keys',
  description: 'svc, adm and ro keys of the tenant (user tokens are listed per user), newest first; never their secrets.',
  tags: TAGS,
  access: { resource: 'api_keys', action: 'read' },
  query: Type.Object({ include_revoked: Type.Boolean({ default: false }) }),
  responses: { 200: { description: 'The keys.', schema: Type.Array(ApiKey) } },
  async handler({ app, principal, query }) {
    return (await listApiKeys(app.sql, principal.tenantId, { includeRevoked: query.include_revoked })).map(presentKey);
  },
});

const get = defineRoute({
  method: 'GET',
  path: '/api/v1/api-keys/{key_id}',
  operationId: 'getApiKey',
  summary: 'Get an API key',
  tags: TAGS,
  access: { resource: 'api_keys', action: 'read' },
  params: KeyParams,
  responses: { 200: { description: 'The key.', schema: ApiKey } },
  async handler({ app, principal, params }) {
    const [row] = await listApiKeys(app.sql, principal.tenantId, { id: params.key_id, includeRevoked: true });
    if (!row) throw notFound('API key not found', { key_id: params.key_id });
    return presentKey(row);
  },
});

const create = defineRoute({
  method: 'POST',
  path: '/api/v1/api-keys',
  operationId: 'createApiKey',
  summary: 'Create an API key',
  description:
    '`adm` keys have full access; `ro` keys read everything but credentials, users and keys, within `scopes` when ' +
    'given (all data otherwise); `svc` keys hold the `permissions` and `scopes` given here (none given: nothing). ' +
    'The grant ceiling applies: the new key may hold nothing the caller does not hold itself, permissions and data ' +
    'scopes alike, so a caller with scoped data can create only scoped keys (403 naming what exceeds, audited as ' +
    '`permission.denied`). `expires_at` is optional. The secret is in this response only.',
  tags: TAGS,
  access: { resource: 'api_keys', action: 'write' },
  body: Type.Object(
    {
      name: Type.String({ minLength: 1, maxLength: 200 }),
      tier: Type.Union([Type.Literal('adm'), Type.Literal('svc'), Type.Literal('ro')]),
      permissions: Type.Optional(Type.Array(PermissionName, { uniqueItems: true })),
      scopes: Type.Optional(Type.Array(ScopeBody, { maxItems: 1000 })),
      expires_at: Type.Optional(Nullable(Timestamp())),
    },
    { additionalProperties: false },
  ),
  responses: { 201: { description: 'The key, with its secret.', schema: Type.Composite([ApiKey, Type.Object({ key: Type.String() })]) } },
  async handler({ ctx, app, principal, body }) {
    if (body.tier === 'adm' && (body.permissions !== undefined || body.scopes !== undefined)) {
      throw validationFailed([{ field: 'permissions', location: 'body', message: 'adm keys hold everything: they take neither permissions nor scopes' }]);
    }
    if (body.tier === 'ro' && body.permissions !== undefined) {
      throw validationFailed([{ field: 'permissions', location: 'body', message: 'ro keys hold the read permissions of their tier; only svc keys take permissions' }]);
    }
    const now = app.now();
    const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
    if (expiresAt && (!(expiresAt > now) || expiresAt.getTime() - now.getTime() > MAX_LIFETIME_MS)) {
      throw validationFailed([{ field: 'expires_at', location: 'body', message: 'must lie in the future and at most ten years ahead' }]);
    }
    const scopes = body.scopes ? await checkedScopes(app, principal, body.scopes) : undefined;
    const request = { tenantId: principal.tenantId, name: body.name, tier: body.tier, permissions: body.permissions ?? [], scopes, expiresAt };
    assertWithinCeiling(principal, [{ subject: `the new ${body.tier} key`, after: rightsOfKeyRequest(request) }]);
    const { id, key } = await issueApiKey(app.sql, app.config.secret, request, (tx, id) =>
      auditChange(tx, app.audit, ctx, principal, 'api_key.created', { type: 'api_key', id, name: body.name }, { tier: body.tier }),
    );
    const [row] = await listApiKeys(app.sql, principal.tenantId, { id, includeRevoked: true });
    ctx.status = 201;
    return { ...presentKey(row!), key };
  },
});

const revoke = defineRoute({
  method: 'DELETE',
  path: '/api/v1/api-keys/{key_id}',
  operationId: 'revokeApiKey',
  summary: 'Revoke an API key',
  description: 'Refused from the next request on. The row stays for the audit trail (`include_revoked=true`).',
  tags: TAGS,
  access: { resource: 'api_keys', action: 'delete' },
  params: KeyParams,
  responses: { 200: { description: 'Revoked.', schema: Type.Object({ message: Type.String() }) } },
  async handler({ ctx, app, principal, params }) {
    await app.sql.begin(async (tx) => {
      if (!(await revokeApiKey(tx, principal.tenantId, params.key_id, app.now()))) throw notFound('API key not found', { key_id: params.key_id });
      await auditChange(tx, app.audit, ctx, principal, 'api_key.revoked', { type: 'api_key', id: params.key_id });
    });
    return { message: 'API key revoked' };
  },
});

export const apiKeyRoutes: AnyRoute[] = [list, get, create, revoke];
