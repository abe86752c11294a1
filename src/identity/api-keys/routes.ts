import { Type } from '@sinclair/typebox';
import { defineRoute, type AnyRoute } from '../../context.js';
import { ApiKey, KeyParams, NewApiKey } from './schema.js';
import { presentKey } from './presenter.js';
import { apiKeyOr404, createApiKey, listKeys, revokeApiKeyAudited } from './service.js';

const TAGS = ['API keys'];

const list = defineRoute({
  method: 'GET',
  path: '/api/v1/api-keys',
  operationId: 'listApiKeys',
  summary: 'List API keys',
  description:
    'svc, adm and ro keys of the tenant (user tokens are listed per user), newest first; never their secrets.',
  tags: TAGS,
  access: { resource: 'api_keys', action: 'read' },
  query: Type.Object({ include_revoked: Type.Boolean({ default: false }) }),
  responses: { 200: { description: 'The keys.', schema: Type.Array(ApiKey) } },
  async handler({ app, principal, query }) {
    return (await listKeys(app, principal, query.include_revoked)).map(presentKey);
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
    return presentKey(await apiKeyOr404(app, principal, params.key_id));
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
    '`permission.denied`). A scope listed twice is held once. `expires_at` is optional (a leap second, `23:59:60`, is a ' +
    '422). The secret is in this response only.',
  tags: TAGS,
  access: { resource: 'api_keys', action: 'write' },
  body: NewApiKey,
  responses: {
    201: {
      description: 'The key, with its secret.',
      schema: Type.Composite([ApiKey, Type.Object({ key: Type.String() })]),
    },
  },
  async handler({ ctx, app, principal, body }) {
    const { id, key } = await createApiKey(app, ctx, principal, body);
    const row = await apiKeyOr404(app, principal, id);
    ctx.status = 201;
    return { ...presentKey(row), key };
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
    await revokeApiKeyAudited(app, ctx, principal, params.key_id);
    return { message: 'API key revoked' };
  },
});

export const apiKeyRoutes: AnyRoute[] = [list, get, create, revoke];
