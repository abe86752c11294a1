import { Type } from '@sinclair/typebox';
import type { Context } from 'koa';
import { auditChange } from '../audit/log.js';
import { assertWithinCeiling } from '../auth/grant-ceiling.js';
import type { AppContext } from '../context.js';
import { insertUserToken } from '../auth/api-keys.js';
import { everyPermission, normalizeScopes, type DataScope, type Permission, type Principal } from '../auth/principal.js';
import { conflict, forbidden, notFound, validationFailed } from '../http/errors.js';
import { defineRoute, type AnyRoute } from '../http/route.js';
import { Nullable, Timestamp, Uuid } from '../http/schemas.js';
import { checkedScopes } from '../users/rights.js';
import { PermissionName, ScopeBody, ScopeView, scopeView, UserParams } from '../users/schema.js';
import { effectiveRights, findUser, type UserRow } from '../users/store.js';
import { listTokens, lockAndCountLiveTokens, revokeToken, type TokenRow } from './store.js';

export const MAX_LIVE_TOKENS = 10;
const MAX_LIFETIME_MS = 366 * 24 * 3600 * 1000;

const Token = Type.Object({
  id: Uuid(),
  name: Type.String(),
  hint: Type.String({ description: 'The last characters of the token, to tell tokens apart.' }),
  created_at: Timestamp(),
  expires_at: Timestamp(),
  last_used_at: Nullable(Timestamp('Updated at most once a minute.')),
  expired: Type.Boolean(),
  permissions: Nullable(Type.Array(Type.String(), { description: 'The subset of its user\'s permissions a narrowed token holds; null holds them all.' })),
  scopes: Nullable(Type.Array(ScopeView, { description: 'The subset of its user\'s data scopes a narrowed token holds; null holds them all.' })),
});
const CreatedToken = Type.Composite([Token, Type.Object({ token: Type.String({ description: 'The secret, shown this once. Send it as `X-API-Key`.' }) })]);
const NewToken = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    expires_at: Timestamp('Required; in the future and at most one year ahead.'),
    permissions: Type.Optional(Type.Array(PermissionName, { uniqueItems: true, description: 'Narrow the token to these of your permissions.' })),
    scopes: Type.Optional(Type.Array(ScopeBody, { maxItems: 1000, description: 'Narrow the token to these of your data scopes.' })),
  },
  { additionalProperties: false },
);
const TokenParams = Type.Object({ token_id: Uuid('The token identifier') });
const UserTokenParams = Type.Composite([UserParams, TokenParams]);

function presentToken(row: TokenRow, now: Date) {
  return {
    id: row.id,
    name: row.name,
    hint: row.key_hint,
    created_at: row.created_at.toISOString(),
    expires_at: row.expires_at.toISOString(),
    last_used_at: row.last_used_at?.toISOString() ?? null,
    expired: row.expires_at <= now,
    permissions: row.narrow_permissions ? [...row.permissions].sort() : null,
    scopes: row.narrow_scopes ? row.scopes.map(scopeView) : null,
  };
}

/**
 * The rules every token creation follows, for a user's own tokens and for tokens an admin mints:
 * what the token names must be held by its user (422), and what the token will act with must be
 * within the caller's own rights (403): a narrowed token cannot mint a wider one, and an admin with
 * scoped rights cannot mint a token for a user who holds more.
 */
async function mintToken(app: AppContext, ctx: Context, principal: Principal, user: UserRow, body: typeof NewToken.static) {
  const now = app.now();
  const expiresAt = new Date(body.expires_at);
  if (!(expiresAt > now) || expiresAt.getTime() - now.getTime() > MAX_LIFETIME_MS) {
    throw validationFailed([{ field: 'expires_at', location: 'body', message: 'must lie in the future and at most one year ahead' }]);
  }
  if (user.deactivated_at) throw conflict('The user is deactivated', { user_id: user.id });
  const held = await effectiveRights(app.sql, user.id);
  const scopes: DataScope[] | null = body.scopes ? normalizeOrAll(await checkedScopes(app, principal, body.scopes)) : null;
  // what the token names, or else all its user holds, must be within the caller's own rights
  assertWithinCeiling(principal, [
    {
      subject: 'the new token',
      after: {
        superadmin: user.superadmin && body.permissions === undefined && scopes === null,
        permissions: body.permissions ?? (user.superadmin ? everyPermission() : held.permissions),
        scopes: scopes ?? (user.superadmin ? 'all' : held.scopes),
      },
    },
  ]);
  let permissions: Permission[] | null = null;
  if (body.permissions) {
    const missing = user.superadmin ? [] : body.permissions.filter((p) => !held.permissions.includes(p));
    if (missing.length > 0) {
      throw validationFailed(missing.map((p) => ({ field: 'permissions', location: 'body' as const, message: `the user does not hold ${p}` })));
    }
    permissions = [...body.permissions];
  }
  const { id, key } = await app.sql.begin(async (tx) => {
    if ((await lockAndCountLiveTokens(tx, user.id, now)) >= MAX_LIVE_TOKENS) {
      throw conflict(`A user may hold at most ${MAX_LIVE_TOKENS} live tokens; revoke one first`, { limit: MAX_LIVE_TOKENS });
    }
    const token = await insertUserToken(tx, app.config.secret, { tenantId: principal.tenantId, userId: user.id, name: body.name, expiresAt, permissions, scopes });
    await auditChange(tx, app.audit, ctx, principal, 'token.created', { type: 'token', id: token.id, name: body.name }, { user_id: user.id, expires_at: expiresAt.toISOString() });
    return token;
  });
  const row = (await listTokens(app.sql, user.id)).find((t) => t.id === id)!;
  return { ...presentToken(row, now), token: key };
}

/** Revokes a token with its audit event in one transaction; false when there is no such live token. */
async function revokeWithAudit(app: AppContext, ctx: Context, principal: Principal, userId: string, tokenId: string): Promise<void> {
  await app.sql.begin(async (tx) => {
    if (!(await revokeToken(tx, userId, tokenId, app.now()))) throw notFound('Token not found', { token_id: tokenId });
    await auditChange(tx, app.audit, ctx, principal, 'token.revoked', { type: 'token', id: tokenId }, { user_id: userId });
  });
}

/** Narrowing to "all data" narrows nothing: kept as the one row that says so. */
const normalizeOrAll = (scopes: DataScope[]): DataScope[] => {
  const normal = normalizeScopes(scopes);
  return normal === 'all' ? [{ sourceId: null, scopeId: null }] : normal;
};

function ownUser(principal: Principal): string {
  if (principal.kind !== 'user' || !principal.user) {
    throw forbidden('Tokens belong to users: sign in, or use a user token, to manage your tokens');
  }
  return principal.user.id;
}

async function userOr404(app: AppContext, principal: Principal, id: string): Promise<UserRow> {
  const user = await findUser(app.sql, principal.tenantId, id);
  if (!user) throw notFound('User not found', { user_id: id });
  return user;
}

const TAGS = ['Tokens'];
const TOKEN_RULES =
  `At most ${MAX_LIVE_TOKENS} live tokens per user (the next is a 409); \`expires_at\` is required, at most one year ahead. ` +
  'The secret is in the creation response only. A token acts as its user with the user\'s rights at each request; with ' +
  '`permissions` and/or `scopes` it is narrowed to those (each must be held by the user; the token holds what both name ' +
  'and the user still has). What the token will act with must be within the caller\'s own rights (403 otherwise): a ' +
  'narrowed token cannot create a wider one. It stops working when it expires, is revoked, or its user is deactivated.';

const listOwn = defineRoute({
  method: 'GET',
  path: '/api/v1/tokens',
  operationId: 'listTokens',
  summary: 'List your tokens',
  description: 'Tokens that are not revoked, newest first; never their secrets. API keys calling this get 403: tokens belong to users.',
  tags: TAGS,
  access: 'authenticated',
  responses: { 200: { description: 'Your tokens.', schema: Type.Array(Token) } },
  async handler({ app, principal }) {
    const now = app.now();
    return (await listTokens(app.sql, ownUser(principal))).map((t) => presentToken(t, now));
  },
});

const createOwn = defineRoute({
  method: 'POST',
  path: '/api/v1/tokens',
  operationId: 'createToken',
  summary: 'Create a token for yourself',
  description: TOKEN_RULES,
  tags: TAGS,
  access: 'authenticated',
  body: NewToken,
  responses: { 201: { description: 'The token, with its secret.', schema: CreatedToken } },
  async handler({ ctx, app, principal, body }) {
    const user = await userOr404(app, principal, ownUser(principal));
    const created = await mintToken(app, ctx, principal, user, body);
    ctx.status = 201;
    return created;
  },
});

const revokeOwn = defineRoute({
  method: 'DELETE',
  path: '/api/v1/tokens/{token_id}',
  operationId: 'revokeToken',
  summary: 'Revoke one of your tokens',
  description: 'Refused from the next request on.',
  tags: TAGS,
  access: 'authenticated',
  params: TokenParams,
  responses: { 200: { description: 'Revoked.', schema: Type.Object({ message: Type.String() }) } },
  async handler({ ctx, app, principal, params }) {
    await revokeWithAudit(app, ctx, principal, ownUser(principal), params.token_id);
    return { message: 'Token revoked' };
  },
});

const listForUser = defineRoute({
  method: 'GET',
  path: '/api/v1/users/{user_id}/tokens',
  operationId: 'listUserTokens',
  summary: "List a user's tokens",
  tags: TAGS,
  access: { resource: 'users', action: 'read' },
  params: UserParams,
  responses: { 200: { description: "The user's tokens.", schema: Type.Array(Token) } },
  async handler({ app, principal, params }) {
    const user = await userOr404(app, principal, params.user_id);
    const now = app.now();
    return (await listTokens(app.sql, user.id)).map((t) => presentToken(t, now));
  },
});

const createForUser = defineRoute({
  method: 'POST',
  path: '/api/v1/users/{user_id}/tokens',
  operationId: 'createUserToken',
  summary: 'Mint a token for a user that only holds tokens',
  description: `${TOKEN_RULES} Users who sign in through single sign-on mint their own (409 here).`,
  tags: TAGS,
  access: { resource: 'users', action: 'write' },
  params: UserParams,
  body: NewToken,
  responses: { 201: { description: 'The token, with its secret.', schema: CreatedToken } },
  async handler({ ctx, app, principal, params, body }) {
    const user = await userOr404(app, principal, params.user_id);
    if (user.issuer !== null) throw conflict('This user signs in through single sign-on and creates its own tokens', { user_id: user.id });
    const created = await mintToken(app, ctx, principal, user, body);
    ctx.status = 201;
    return created;
  },
});

const revokeForUser = defineRoute({
  method: 'DELETE',
  path: '/api/v1/users/{user_id}/tokens/{token_id}',
  operationId: 'revokeUserToken',
  summary: "Revoke a user's token",
  description: 'Any user\'s, including those who sign in through single sign-on. Refused from the next request on.',
  tags: TAGS,
  access: { resource: 'users', action: 'write' },
  params: UserTokenParams,
  responses: { 200: { description: 'Revoked.', schema: Type.Object({ message: Type.String() }) } },
  async handler({ ctx, app, principal, params }) {
    const user = await userOr404(app, principal, params.user_id);
    await revokeWithAudit(app, ctx, principal, user.id, params.token_id);
    return { message: 'Token revoked' };
  },
});

export const tokenRoutes: AnyRoute[] = [listOwn, createOwn, revokeOwn, listForUser, createForUser, revokeForUser];
