import type { Context } from 'koa';
import { auditChange } from '../../platform/audit/log.js';
import { assertWithinCeiling } from '../../platform/auth/grant-ceiling.js';
import type { Principal } from '../../platform/auth/principal.js';
import { endSessionsOf } from '../../platform/auth/sessions.js';
import type { AppContext } from '../../context.js';
import { changeRights } from '../grants/service.js';
import { directRights, effectiveRights } from '../grants/service.js';
import { conflict, forbidden, notFound } from '../../platform/errors.js';
import type { UserListQuery } from './schema.js';
import {
  findUser,
  findUserByEmail,
  insertUser,
  listUsers,
  setDeactivated,
  setSuperadmin,
  teamsOf,
  type UserRow,
} from './store.js';

export async function userOr404(app: AppContext, principal: Principal, id: string): Promise<UserRow> {
  const user = await findUser(app.sql, principal.tenantId, id);
  if (!user) throw notFound('User not found', { user_id: id });
  return user;
}

/** A user's own grants, what it holds through its teams too, and the teams. */
export async function rightsOfUser(app: AppContext, user: UserRow) {
  const [direct, effective, teams] = await Promise.all([
    directRights(app.sql, { userId: user.id }),
    effectiveRights(app.sql, user.id),
    teamsOf(app.sql, user.id),
  ]);
  return { direct, effective, teams };
}

const conflictEmail = (email: string) => conflict('A user with this email exists already', { email });

/** A token-only user, recorded with its audit event; a taken email is a 409 however the race goes. */
export async function createUser(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  input: { name: string; email: string | null },
): Promise<UserRow> {
  if (input.email !== null && (await findUserByEmail(app.sql, principal.tenantId, input.email)))
    throw conflictEmail(input.email);
  return app.sql
    .begin(async (tx) => {
      const user = await insertUser(tx, principal.tenantId, input);
      await auditChange(tx, app.audit, ctx, principal, 'user.created', { type: 'user', id: user.id, name: user.name });
      return user;
    })
    .catch((error: unknown) => {
      // two creations racing for one email: the unique index decides
      if ((error as { code?: string }).code === '23505' && input.email !== null) throw conflictEmail(input.email);
      throw error;
    });
}

/**
 * Deactivates (sessions ended, tokens refused) or reactivates a user. Reactivating hands the
 * user's rights and its live tokens back, so the grant ceiling applies to it.
 */
export async function setActive(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  id: string,
  active: boolean,
): Promise<UserRow> {
  const current = await userOr404(app, principal, id);
  if (!active && current.id === principal.user?.id)
    throw forbidden('You cannot deactivate yourself', { user_id: current.id });
  await changeRights(app, ctx, principal, {
    target: { holder: { userId: current.id }, type: 'user', id: current.id, name: current.name },
    event: active ? 'user.reactivated' : 'user.deactivated',
    details: {},
    apply: async (tx) => {
      await setDeactivated(tx, principal.tenantId, current.id, active ? null : (current.deactivated_at ?? app.now()));
      if (!active) await endSessionsOf(tx, current.id);
    },
  });
  return userOr404(app, principal, current.id);
}

/** Grants superadmin through the grant ceiling (so only a superadmin can); only a superadmin withdraws it. */
export async function setSuperadminFlag(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  id: string,
  superadmin: boolean,
): Promise<UserRow> {
  const user = await userOr404(app, principal, id);
  if (superadmin)
    assertWithinCeiling(principal, [
      { subject: `user ${user.name}`, after: { superadmin: true, permissions: [], scopes: [] } },
    ]);
  else if (!principal.superadmin)
    throw forbidden('Only a superadmin may withdraw superadmin', { reason: 'superadmin_only' });
  const updated = await app.sql.begin(async (tx) => {
    const updated = await setSuperadmin(tx, principal.tenantId, user.id, superadmin);
    await auditChange(
      tx,
      app.audit,
      ctx,
      principal,
      'user.promoted',
      { type: 'user', id: user.id, name: user.name },
      { superadmin },
    );
    return updated;
  });
  return updated!;
}

/** One offset page of the tenant's users, oldest first, with the total. */
export function listUserPage(
  app: AppContext,
  principal: Principal,
  query: typeof UserListQuery.static,
): Promise<{ rows: UserRow[]; total: number }> {
  return listUsers(app.sql, principal.tenantId, {
    email: query.email,
    active: query.active,
    teamId: query.team_id,
    limit: query.limit,
    offset: query.offset,
  });
}

/** What teams, tokens, sign-in and `cinv users promote` read and write of a user, inside the caller's transaction. */
export { findUser, findUserByEmail, setSuperadmin, signInSsoUser, syncGroupTeams, type UserRow } from './store.js';
