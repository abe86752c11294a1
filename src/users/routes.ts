import { Type } from '@sinclair/typebox';
import { auditChange } from '../audit/log.js';
import { assertWithinCeiling } from '../auth/grant-ceiling.js';
import { changeRights, setPermissions, setScopes } from './rights.js';
import { endSessionsOf } from '../auth/sessions.js';
import { conflict, forbidden, notFound } from '../http/errors.js';
import { defineRoute, type AnyRoute } from '../http/route.js';
import type { AppContext } from '../context.js';
import type { Principal } from '../auth/principal.js';
import { normalizeScopes } from '../auth/principal.js';
import {
  NewUser,
  PermissionsBody,
  Rights,
  ScopesBody,
  scopeView,
  User,
  UserDetail,
  UserList,
  UserListQuery,
  UserParams,
} from './schema.js';
import {
  directRights,
  effectiveRights,
  findUser,
  findUserByEmail,
  insertUser,
  listUsers,
  setDeactivated,
  setSuperadmin,
  type UserRow,
} from './store.js';

export function presentUser(row: UserRow) {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    sso: row.issuer !== null,
    superadmin: row.superadmin,
    active: row.deactivated_at === null,
    created_at: row.created_at.toISOString(),
    deactivated_at: row.deactivated_at?.toISOString() ?? null,
    last_login_at: row.last_login_at?.toISOString() ?? null,
  };
}

async function userOr404(app: AppContext, principal: Principal, id: string): Promise<UserRow> {
  const user = await findUser(app.sql, principal.tenantId, id);
  if (!user) throw notFound('User not found', { user_id: id });
  return user;
}

async function userDetail(app: AppContext, user: UserRow) {
  const [direct, effective, teams] = await Promise.all([
    directRights(app.sql, { userId: user.id }),
    effectiveRights(app.sql, user.id),
    app.sql<{ id: string; name: string }[]>`
      select t.id, t.name from teams t join team_members m on m.team_id = t.id where m.user_id = ${user.id} order by t.name`,
  ]);
  const scopes = user.superadmin ? 'all' : normalizeScopes(effective.scopes);
  return {
    ...presentUser(user),
    direct: { permissions: direct.permissions, scopes: direct.scopes.map(scopeView) },
    effective: {
      permissions: effective.permissions,
      scopes: scopes === 'all' ? ('all' as const) : scopes.map(scopeView),
    },
    teams: [...teams],
  };
}

const list = defineRoute({
  method: 'GET',
  path: '/api/v1/users',
  operationId: 'listUsers',
  summary: 'List users',
  description: 'People who signed in through single sign-on, and users an admin created to hold tokens. Oldest first.',
  tags: ['Users'],
  access: { resource: 'users', action: 'read' },
  query: UserListQuery,
  responses: { 200: { description: 'A page of users.', schema: UserList } },
  async handler({ app, principal, query }) {
    const { rows, total } = await listUsers(app.sql, principal.tenantId, {
      email: query.email,
      active: query.active,
      teamId: query.team_id,
      limit: query.limit,
      offset: query.offset,
    });
    return { items: rows.map(presentUser), total, offset: query.offset, limit: query.limit, has_more: query.offset + rows.length < total };
  },
});

const create = defineRoute({
  method: 'POST',
  path: '/api/v1/users',
  operationId: 'createUser',
  summary: 'Create a user that holds tokens',
  description:
    'For automation run on behalf of a person or a team: the user signs in nowhere and holds the tokens an admin mints ' +
    'for it (`POST /api/v1/users/{user_id}/tokens`). It has no permissions until granted. An email already in use is a 409.',
  tags: ['Users'],
  access: { resource: 'users', action: 'write' },
  body: NewUser,
  responses: { 201: { description: 'The user.', schema: User } },
  async handler({ ctx, app, principal, body }) {
    const email = body.email ?? null;
    if (email !== null && (await findUserByEmail(app.sql, principal.tenantId, email))) {
      throw conflictEmail(email);
    }
    const user = await app.sql
      .begin(async (tx) => {
        const user = await insertUser(tx, principal.tenantId, { name: body.name, email });
        await auditChange(tx, app.audit, ctx, principal, 'user.created', { type: 'user', id: user.id, name: user.name });
        return user;
      })
      .catch((error: unknown) => {
        // two creations racing for one email: the unique index decides
        if ((error as { code?: string }).code === '23505' && email !== null) throw conflictEmail(email);
        throw error;
      });
    ctx.status = 201;
    return presentUser(user);
  },
});

const conflictEmail = (email: string) => conflict('A user with this email exists already', { email });

const get = defineRoute({
  method: 'GET',
  path: '/api/v1/users/{user_id}',
  operationId: 'getUser',
  summary: 'Get a user with its grants, effective rights and teams',
  description: '`direct` is what the user is granted itself; `effective` adds what its teams give it (all of it for a superadmin).',
  tags: ['Users'],
  access: { resource: 'users', action: 'read' },
  params: UserParams,
  responses: { 200: { description: 'The user.', schema: UserDetail } },
  async handler({ app, principal, params }) {
    return userDetail(app, await userOr404(app, principal, params.user_id));
  },
});

function activation(active: boolean) {
  return defineRoute({
    method: 'POST',
    path: `/api/v1/users/{user_id}/${active ? 'reactivate' : 'deactivate'}`,
    operationId: active ? 'reactivateUser' : 'deactivateUser',
    summary: active ? 'Reactivate a user' : 'Deactivate a user',
    description: active
      ? 'The user may sign in again and its tokens that are neither revoked nor expired work again.'
      : 'From the next request on, the user can no longer sign in and its tokens and sessions are refused (401).',
    tags: ['Users'],
    access: { resource: 'users', action: 'write' },
    params: UserParams,
    responses: { 200: { description: 'The user.', schema: User } },
    async handler({ ctx, app, principal, params }) {
      const current = await userOr404(app, principal, params.user_id);
      if (!active && current.id === principal.user?.id) throw forbidden('You cannot deactivate yourself', { user_id: current.id });
      // reactivating hands the user's rights (and its live tokens) back: the grant ceiling applies
      await changeRights(app, ctx, principal, {
        target: { holder: { userId: current.id }, type: 'user', id: current.id, name: current.name },
        event: active ? 'user.reactivated' : 'user.deactivated',
        details: {},
        apply: async (tx) => {
          await setDeactivated(tx, principal.tenantId, current.id, active ? null : (current.deactivated_at ?? app.now()));
          if (!active) await endSessionsOf(tx, current.id);
        },
      });
      return presentUser((await userOr404(app, principal, current.id)));
    },
  });
}

const superadmin = defineRoute({
  method: 'PUT',
  path: '/api/v1/users/{user_id}/superadmin',
  operationId: 'setSuperadmin',
  summary: 'Grant or withdraw superadmin',
  description:
    'Only a superadmin may call this (every other caller gets 403, admin keys included). A superadmin bypasses every ' +
    'permission and data-scope check. The first one is made on the command line: `cinv users promote EMAIL`.',
  tags: ['Users'],
  access: { resource: 'users', action: 'write' },
  params: UserParams,
  body: Type.Object({ superadmin: Type.Boolean() }, { additionalProperties: false }),
  responses: { 200: { description: 'The user.', schema: User } },
  async handler({ ctx, app, principal, params, body }) {
    const user = await userOr404(app, principal, params.user_id);
    if (body.superadmin) assertWithinCeiling(principal, [{ subject: `user ${user.name}`, after: { superadmin: true, permissions: [], scopes: [] } }]);
    else if (!principal.superadmin) throw forbidden('Only a superadmin may withdraw superadmin', { reason: 'superadmin_only' });
    const updated = await app.sql.begin(async (tx) => {
      const updated = await setSuperadmin(tx, principal.tenantId, user.id, body.superadmin);
      await auditChange(tx, app.audit, ctx, principal, 'user.promoted', { type: 'user', id: user.id, name: user.name }, { superadmin: body.superadmin });
      return updated;
    });
    return presentUser(updated!);
  },
});

const permissions = defineRoute({
  method: 'PUT',
  path: '/api/v1/users/{user_id}/permissions',
  operationId: 'setUserPermissions',
  summary: "Replace a user's own permission grants",
  description: 'The list replaces the direct grants; team grants are untouched. Takes effect on the next request.',
  tags: ['Users'],
  access: { resource: 'users', action: 'write' },
  params: UserParams,
  body: PermissionsBody,
  responses: { 200: { description: "The user's direct rights.", schema: Rights } },
  async handler({ ctx, app, principal, params, body }) {
    const user = await userOr404(app, principal, params.user_id);
    return setPermissions(app, ctx, principal, { holder: { userId: user.id }, type: 'user', id: user.id, name: user.name }, body.permissions);
  },
});

const scopes = defineRoute({
  method: 'PUT',
  path: '/api/v1/users/{user_id}/scopes',
  operationId: 'setUserScopes',
  summary: "Replace a user's own data scopes",
  description:
    'Each scope is `{source_id, scope_id}`: one instance of a source, every instance (`scope_id: null`), or all data ' +
    '(both null). The list replaces the direct scopes; team scopes are untouched. A user with no scopes at all sees no data.',
  tags: ['Users'],
  access: { resource: 'users', action: 'write' },
  params: UserParams,
  body: ScopesBody,
  responses: { 200: { description: "The user's direct rights.", schema: Rights } },
  async handler({ ctx, app, principal, params, body }) {
    const user = await userOr404(app, principal, params.user_id);
    return setScopes(app, ctx, principal, { holder: { userId: user.id }, type: 'user', id: user.id, name: user.name }, body.scopes);
  },
});

export const userRoutes: AnyRoute[] = [list, create, get, activation(false), activation(true), superadmin, permissions, scopes];
