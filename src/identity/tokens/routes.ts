import { Type } from '@sinclair/typebox';
import { defineRoute, type AnyRoute } from '../../context.js';
import { conflict } from '../../platform/errors.js';
import { conflictResponse } from '../../platform/http/schemas.js';
import { UserParams } from '../users/schema.js';
import { CreatedToken, MAX_LIVE_TOKENS, NewToken, Token, TokenParams, UserTokenParams } from './schema.js';
import { administeredUser, mintToken, ownUser, presentToken, revokeWithAudit, userOr404, tokensOf } from './service.js';

const TAGS = ['Tokens'];
const ACTS_ON_USER =
  'A token acts as its user, so the caller must hold everything the user holds (every permission and data scope; a ' +
  'superadmin user, only a superadmin): 403 `exceeds_own_rights` otherwise.';
const TOKEN_RULES =
  `At most ${MAX_LIVE_TOKENS} live tokens per user (the next is a 409); \`expires_at\` is required, at most one year ahead. ` +
  "The secret is in the creation response only. A token acts as its user with the user's rights at each request; with " +
  '`permissions` and/or `scopes` it is narrowed to those (each must be held by the user; the token holds what both name ' +
  "and the user still has). What the token will act with must be within the caller's own rights (403 otherwise): a " +
  'narrowed token cannot create a wider one. It stops working when it expires, is revoked, or its user is deactivated.';

const listOwn = defineRoute({
  method: 'GET',
  path: '/api/v1/tokens',
  operationId: 'listTokens',
  summary: 'List your tokens',
  description:
    'Tokens that are not revoked, newest first; never their secrets. API keys calling this get 403: tokens belong to users.',
  tags: TAGS,
  access: 'authenticated',
  responses: { 200: { description: 'Your tokens.', schema: Type.Array(Token) } },
  async handler({ app, principal }) {
    const now = app.now();
    return (await tokensOf(app, ownUser(principal))).map((t) => presentToken(t, now));
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
  responses: {
    201: { description: 'The token, with its secret.', schema: CreatedToken },
    ...conflictResponse(`You hold ${MAX_LIVE_TOKENS} live tokens already, or your user is deactivated`),
  },
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
  description: ACTS_ON_USER,
  tags: TAGS,
  access: { resource: 'users', action: 'read' },
  params: UserParams,
  responses: { 200: { description: "The user's tokens.", schema: Type.Array(Token) } },
  async handler({ app, principal, params }) {
    const user = await administeredUser(app, principal, params.user_id);
    const now = app.now();
    return (await tokensOf(app, user.id)).map((t) => presentToken(t, now));
  },
});

const createForUser = defineRoute({
  method: 'POST',
  path: '/api/v1/users/{user_id}/tokens',
  operationId: 'createUserToken',
  summary: 'Mint a token for a user that only holds tokens',
  description: `${TOKEN_RULES} ${ACTS_ON_USER} Users who sign in through single sign-on mint their own (409 here).`,
  tags: TAGS,
  access: { resource: 'users', action: 'write' },
  params: UserParams,
  body: NewToken,
  responses: {
    201: { description: 'The token, with its secret.', schema: CreatedToken },
    ...conflictResponse(
      `The user signs in through single sign-on, is deactivated, or holds ${MAX_LIVE_TOKENS} live tokens already`,
    ),
  },
  async handler({ ctx, app, principal, params, body }) {
    const user = await administeredUser(app, principal, params.user_id);
    if (user.issuer !== null)
      throw conflict('This user signs in through single sign-on and creates its own tokens', { user_id: user.id });
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
  description: `Of any user, including those who sign in through single sign-on. ${ACTS_ON_USER} Refused from the next request on.`,
  tags: TAGS,
  access: { resource: 'users', action: 'write' },
  params: UserTokenParams,
  responses: { 200: { description: 'Revoked.', schema: Type.Object({ message: Type.String() }) } },
  async handler({ ctx, app, principal, params }) {
    const user = await administeredUser(app, principal, params.user_id);
    await revokeWithAudit(app, ctx, principal, user.id, params.token_id);
    return { message: 'Token revoked' };
  },
});

export const tokenRoutes: AnyRoute[] = [listOwn, createOwn, revokeOwn, listForUser, createForUser, revokeForUser];
