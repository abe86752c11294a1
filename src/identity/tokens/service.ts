import type { Context } from 'koa';
import { auditChange } from '../../platform/audit/log.js';
import { insertUserToken } from '../../platform/auth/api-keys.js';
import { assertWithinCeiling } from '../../platform/auth/grant-ceiling.js';
import {
  everyPermission,
  normalizeScopes,
  type DataScope,
  type Permission,
  type Principal,
} from '../../platform/auth/principal.js';
import type { AppContext } from '../../context.js';
import { assertActsOn, checkedScopes } from '../grants/service.js';
import { scopeView } from '../grants/schema.js';
import { effectiveRights } from '../grants/service.js';
import { conflict, forbidden, notFound, validationFailed } from '../../platform/errors.js';
import { findUser, type UserRow } from '../users/service.js';
import { MAX_LIFETIME_MS, MAX_LIVE_TOKENS, type NewToken } from './schema.js';
import { listTokens, lockAndCountLiveTokens, revokeToken, type TokenRow } from './store.js';

export function presentToken(row: TokenRow, now: Date) {
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
export async function mintToken(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  user: UserRow,
  body: typeof NewToken.static,
) {
  const now = app.now();
  const expiresAt = new Date(body.expires_at);
  if (!(expiresAt > now) || expiresAt.getTime() - now.getTime() > MAX_LIFETIME_MS) {
    throw validationFailed([
      { field: 'expires_at', location: 'body', message: 'must lie in the future and at most one year ahead' },
    ]);
  }
  if (user.deactivated_at) throw conflict('The user is deactivated', { user_id: user.id });
  const held = await effectiveRights(app.sql, user.id);
  const scopes: DataScope[] | null = body.scopes
    ? normalizeOrAll(await checkedScopes(app, principal, body.scopes))
    : null;
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
      throw validationFailed(
        missing.map((p) => ({
          field: 'permissions',
          location: 'body' as const,
          message: `the user does not hold ${p}`,
        })),
      );
    }
    permissions = [...body.permissions];
  }
  const { id, key } = await app.sql.begin(async (tx) => {
    if ((await lockAndCountLiveTokens(tx, user.id, now)) >= MAX_LIVE_TOKENS) {
      throw conflict(`A user may hold at most ${MAX_LIVE_TOKENS} live tokens; revoke one first`, {
        limit: MAX_LIVE_TOKENS,
      });
    }
    const token = await insertUserToken(tx, app.config.secret, {
      tenantId: principal.tenantId,
      userId: user.id,
      name: body.name,
      expiresAt,
      permissions,
      scopes,
    });
    await auditChange(
      tx,
      app.audit,
      ctx,
      principal,
      'token.created',
      { type: 'token', id: token.id, name: body.name },
      { user_id: user.id, expires_at: expiresAt.toISOString() },
    );
    return token;
  });
  const row = (await listTokens(app.sql, user.id)).find((t) => t.id === id)!;
  return { ...presentToken(row, now), token: key };
}

/** Revokes a token with its audit event in one transaction; false when there is no such live token. */
export async function revokeWithAudit(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  userId: string,
  tokenId: string,
): Promise<void> {
  await app.sql.begin(async (tx) => {
    if (!(await revokeToken(tx, userId, tokenId, app.now()))) throw notFound('Token not found', { token_id: tokenId });
    await auditChange(
      tx,
      app.audit,
      ctx,
      principal,
      'token.revoked',
      { type: 'token', id: tokenId },
      { user_id: userId },
    );
  });
}

/** Narrowing to "all data" narrows nothing: kept as the one row that says so. */
const normalizeOrAll = (scopes: DataScope[]): DataScope[] => {
  const normal = normalizeScopes(scopes);
  return normal === 'all' ? [{ sourceId: null, scopeId: null }] : normal;
};

export function ownUser(principal: Principal): string {
  if (principal.kind !== 'user' || !principal.user) {
    throw forbidden('Tokens belong to users: sign in, or use a user token, to manage your tokens');
  }
  return principal.user.id;
}

export async function userOr404(app: AppContext, principal: Principal, id: string): Promise<UserRow> {
  const user = await findUser(app.sql, principal.tenantId, id);
  if (!user) throw notFound('User not found', { user_id: id });
  return user;
}

/**
 * A user whose tokens the caller mints, lists or revokes: a token acts as its user (its saved
 * views, its own tokens), so the caller must hold everything the user holds (403 otherwise),
 * whatever the token would be narrowed to.
 */
export async function administeredUser(app: AppContext, principal: Principal, id: string): Promise<UserRow> {
  const user = await userOr404(app, principal, id);
  await assertActsOn(app.sql, principal, { holder: { userId: user.id }, type: 'user', id: user.id, name: user.name });
  return user;
}

/** A user's tokens that are not revoked, newest first. */
export function tokensOf(app: AppContext, userId: string): Promise<TokenRow[]> {
  return listTokens(app.sql, userId);
}
