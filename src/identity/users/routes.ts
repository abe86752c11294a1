import { Type } from '@sinclair/typebox';
import { setPermissions, setScopes } from '../grants/service.js';
import { PermissionsBody, Rights, ScopesBody } from '../grants/schema.js';
import { defineRoute, type AnyRoute } from '../../context.js';
import { conflictResponse } from '../../platform/http/schemas.js';
import { presentUser, presentUserDetail } from './presenter.js';
import { NewUser, User, UserDetail, UserList, UserListQuery, UserParams } from './schema.js';
import { createUser, listUserPage, rightsOfUser, setActive, setSuperadminFlag, userOr404 } from './service.js';

const ACTS_ON_USER =
  " The caller must hold everything the user holds (every permission and data scope, its teams' included; a superadmin " +
  'user, only a superadmin): 403 `exceeds_own_rights` otherwise, even to narrow it.';

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
    const { rows, total } = await listUserPage(app, principal, query);
    return {
      items: rows.map(presentUser),
      total,
      offset: query.offset,
      limit: query.limit,
      has_more: query.offset + rows.length < total,
    };
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
  responses: {
    201: { description: 'The user.', schema: User },
    ...conflictResponse('A user of the tenant has this email'),
  },
  async handler({ ctx, app, principal, body }) {
    const user = await createUser(app, ctx, principal, { name: body.name, email: body.email ?? null });
    ctx.status = 201;
    return presentUser(user);
  },
});

const get = defineRoute({
  method: 'GET',
  path: '/api/v1/users/{user_id}',
  operationId: 'getUser',
  summary: 'Get a user with its grants, effective rights and teams',
  description:
    '`direct` is what the user is granted itself; `effective` adds what its teams give it (all of it for a superadmin).',
  tags: ['Users'],
  access: { resource: 'users', action: 'read' },
  params: UserParams,
  responses: { 200: { description: 'The user.', schema: UserDetail } },
  async handler({ app, principal, params }) {
    const user = await userOr404(app, principal, params.user_id);
    const { direct, effective, teams } = await rightsOfUser(app, user);
    return presentUserDetail(user, direct, effective, teams);
  },
});

function activation(active: boolean) {
  return defineRoute({
    method: 'POST',
    path: `/api/v1/users/{user_id}/${active ? 'reactivate' : 'deactivate'}`,
    operationId: active ? 'reactivateUser' : 'deactivateUser',
    summary: active ? 'Reactivate a user' : 'Deactivate a user',
    description:
      (active
        ? 'The user may sign in again and its tokens that are neither revoked nor expired work again.'
        : 'From the next request on, the user can no longer sign in and its tokens and sessions are refused (401).') +
      ACTS_ON_USER,
    tags: ['Users'],
    access: { resource: 'users', action: 'write' },
    params: UserParams,
    responses: { 200: { description: 'The user.', schema: User } },
    async handler({ ctx, app, principal, params }) {
      return presentUser(await setActive(app, ctx, principal, params.user_id, active));
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
    return presentUser(await setSuperadminFlag(app, ctx, principal, params.user_id, body.superadmin));
  },
});

const permissions = defineRoute({
  method: 'PUT',
  path: '/api/v1/users/{user_id}/permissions',
  operationId: 'setUserPermissions',
  summary: "Replace a user's own permission grants",
  description:
    'The list replaces the direct grants; team grants are untouched. Takes effect on the next request.' + ACTS_ON_USER,
  tags: ['Users'],
  access: { resource: 'users', action: 'write' },
  params: UserParams,
  body: PermissionsBody,
  responses: { 200: { description: "The user's direct rights.", schema: Rights } },
  async handler({ ctx, app, principal, params, body }) {
    const user = await userOr404(app, principal, params.user_id);
    return setPermissions(
      app,
      ctx,
      principal,
      { holder: { userId: user.id }, type: 'user', id: user.id, name: user.name },
      body.permissions,
    );
  },
});

const scopes = defineRoute({
  method: 'PUT',
  path: '/api/v1/users/{user_id}/scopes',
  operationId: 'setUserScopes',
  summary: "Replace a user's own data scopes",
  description:
    'Each scope is `{source_id, scope_id}`: one instance of a source, every instance (`scope_id: null`), or all data ' +
    '(both null). The list replaces the direct scopes; team scopes are untouched. A user with no scopes at all sees no data.' +
    ACTS_ON_USER,
  tags: ['Users'],
  access: { resource: 'users', action: 'write' },
  params: UserParams,
  body: ScopesBody,
  responses: { 200: { description: "The user's direct rights.", schema: Rights } },
  async handler({ ctx, app, principal, params, body }) {
    const user = await userOr404(app, principal, params.user_id);
    return setScopes(
      app,
      ctx,
      principal,
      { holder: { userId: user.id }, type: 'user', id: user.id, name: user.name },
      body.scopes,
    );
  },
});

export const userRoutes: AnyRoute[] = [
  list,
  create,
  get,
  activation(false),
  activation(true),
  superadmin,
  permissions,
  scopes,
];
