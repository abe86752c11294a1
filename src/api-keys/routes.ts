import { Type } from '@sinclair/typebox';
import { auditAction } from '../audit/log.js';
import { issueApiKey } from '../auth/api-keys.js';
import { listApiKeys, revokeApiKey, type ApiKeyListing } from '../auth/api-key-store.js';
import { forbidden, notFound, validationFailed } from '../http/errors.js';
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
  scopes: Type.Union([Type.Literal('all'), Type.Array(ScopeView)], { description: 'svc keys: the data they may see.' }),
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
    scopes: row.tier === 'svc' ? row.scopes.map(scopeView) : ('all' as const),
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
    '`adm` keys have full access, `ro` keys read everything but credentials, users and keys; `svc` keys hold the ' +
    '`permissions` and `scopes` given here (none given: nothing). Creating an `adm` key, or a key with ' +
    'permissions the caller does not hold, needs a caller that holds them (403). `expires_at` is optional. ' +
    'The secret is in this response only.',
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
    if (body.tier !== 'svc' && (body.permissions !== undefined || body.scopes !== undefined)) {
      throw validationFailed([{ field: 'permissions', location: 'body', message: 'only svc keys carry permissions and scopes' }]);
    }
    // nobody hands out more than they hold
    const wanted = body.tier === 'adm' ? 'everything' : (body.permissions ?? []).filter((p) => !principal.superadmin && !principal.permissions.has(p));
    if (wanted === 'everything' ? !principal.superadmin && principal.tier !== 'adm' : wanted.length > 0) {
      throw forbidden('You may not create a key with rights you do not hold', { missing: wanted });
    }
    const now = app.now();
    const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
    if (expiresAt && (!(expiresAt > now) || expiresAt.getTime() - now.getTime() > MAX_LIFETIME_MS)) {
      throw validationFailed([{ field: 'expires_at', location: 'body', message: 'must lie in the future and at most ten years ahead' }]);
    }
    const scopes = body.scopes ? await checkedScopes(app, principal, body.scopes) : [];
    const { id, key } = await issueApiKey(app.sql, app.config.secret, {
      tenantId: principal.tenantId,
      name: body.name,
      tier: body.tier,
      permissions: body.permissions ?? [],
      scopes,
      expiresAt,
    });
    const [row] = await listApiKeys(app.sql, principal.tenantId, { id, includeRevoked: true });
    ctx.status = 201;
    auditAction(app.audit, ctx, principal, 'api_key.created', { type: 'api_key', id, name: body.name }, { tier: body.tier });
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
    if (!(await revokeApiKey(app.sql, principal.tenantId, params.key_id, app.now()))) throw notFound('API key not found', { key_id: params.key_id });
    auditAction(app.audit, ctx, principal, 'api_key.revoked', { type: 'api_key', id: params.key_id });
    return { message: 'API key revoked' };
  },
});

export const apiKeyRoutes: AnyRoute[] = [list, get, create, revoke];
