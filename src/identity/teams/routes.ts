import { Type } from '@sinclair/typebox';
import { setPermissions, setScopes } from '../grants/service.js';
import { PermissionsBody, Rights, ScopesBody } from '../grants/schema.js';
import { defineRoute, type AnyRoute } from '../../context.js';
import { conflictResponse, HumanName, Limit, Nullable, Offset, Timestamp, Uuid } from '../../platform/http/schemas.js';
import {
  addTeamMember,
  createTeam,
  presentTeam,
  removeTeam,
  removeTeamMember,
  renameTeam,
  teamDetail,
  teamOr404,
  listTeamPage,
} from './service.js';

const Team = Type.Object({
  id: Uuid(),
  name: Type.String(),
  description: Type.String(),
  created_at: Timestamp(),
  members: Type.Integer(),
});
const TeamDetail = Type.Composite([
  Team,
  Type.Object({
    member_list: Type.Array(
      Type.Object({ id: Uuid(), name: Type.String(), email: Nullable(Type.String()), added_at: Timestamp() }),
    ),
    rights: Rights,
  }),
]);
const TeamParams = Type.Object({ team_id: Uuid('The team identifier') });
const MemberParams = Type.Object({ team_id: Uuid('The team identifier'), user_id: Uuid('The user identifier') });
const TeamName = HumanName();
const Description = Type.String({ maxLength: 2000 });

const TAGS = ['Teams'];
const read = { resource: 'users', action: 'read' } as const;
const write = { resource: 'users', action: 'write' } as const;

const list = defineRoute({
  method: 'GET',
  path: '/api/v1/teams',
  operationId: 'listTeams',
  summary: 'List teams',
  description: 'By name. Members of a team hold its permissions and data scopes besides their own.',
  tags: TAGS,
  access: read,
  query: Type.Object({ limit: Limit(50, 500), offset: Offset }),
  responses: {
    200: {
      description: 'A page of teams.',
      schema: Type.Object({
        items: Type.Array(Team),
        total: Type.Integer(),
        offset: Type.Integer(),
        limit: Type.Integer(),
        has_more: Type.Boolean(),
      }),
    },
  },
  async handler({ app, principal, query }) {
    const { rows, total } = await listTeamPage(app, principal, query);
    return {
      items: rows.map(presentTeam),
      total,
      offset: query.offset,
      limit: query.limit,
      has_more: query.offset + rows.length < total,
    };
  },
});

const create = defineRoute({
  method: 'POST',
  path: '/api/v1/teams',
  operationId: 'createTeam',
  summary: 'Create a team',
  description: 'Names are unique within the tenant (409 otherwise).',
  tags: TAGS,
  access: write,
  body: Type.Object({ name: TeamName, description: Type.Optional(Description) }, { additionalProperties: false }),
  responses: {
    201: { description: 'The team.', schema: Team },
    ...conflictResponse('The tenant has a team of this name'),
  },
  async handler({ ctx, app, principal, body }) {
    const team = await createTeam(app, principal, { name: body.name, description: body.description ?? '' });
    ctx.status = 201;
    return presentTeam(team);
  },
});

const get = defineRoute({
  method: 'GET',
  path: '/api/v1/teams/{team_id}',
  operationId: 'getTeam',
  summary: 'Get a team with its members, permissions and data scopes',
  tags: TAGS,
  access: read,
  params: TeamParams,
  responses: { 200: { description: 'The team.', schema: TeamDetail } },
  async handler({ app, principal, params }) {
    return teamDetail(app, await teamOr404(app, principal, params.team_id));
  },
});

const update = defineRoute({
  method: 'PUT',
  path: '/api/v1/teams/{team_id}',
  operationId: 'updateTeam',
  summary: 'Rename a team or change its description',
  description: 'Omitted fields keep their values.',
  tags: TAGS,
  access: write,
  params: TeamParams,
  body: Type.Object(
    { name: Type.Optional(TeamName), description: Type.Optional(Description) },
    { additionalProperties: false },
  ),
  responses: {
    200: { description: 'The team.', schema: Team },
    ...conflictResponse('The tenant has another team of this name'),
  },
  async handler({ app, principal, params, body }) {
    return presentTeam(await renameTeam(app, principal, params.team_id, body));
  },
});

const remove = defineRoute({
  method: 'DELETE',
  path: '/api/v1/teams/{team_id}',
  operationId: 'deleteTeam',
  summary: 'Delete a team',
  description: 'Its members lose what the team gave them from the next request on; users themselves stay.',
  tags: TAGS,
  access: { resource: 'users', action: 'delete' },
  params: TeamParams,
  responses: { 200: { description: 'Deleted.', schema: Type.Object({ message: Type.String() }) } },
  async handler({ ctx, app, principal, params }) {
    await removeTeam(app, ctx, principal, params.team_id);
    return { message: 'Team deleted' };
  },
});

const addMemberRoute = defineRoute({
  method: 'PUT',
  path: '/api/v1/teams/{team_id}/members/{user_id}',
  operationId: 'addTeamMember',
  summary: 'Add a user to a team',
  description:
    "Idempotent. The user holds the team's rights from the next request on. The grant ceiling applies: the team's " +
    "rights, and everything the user then holds if the membership gives it anything new, must be within the caller's (403).",
  tags: TAGS,
  access: write,
  params: MemberParams,
  responses: { 200: { description: 'The team.', schema: TeamDetail } },
  async handler({ ctx, app, principal, params }) {
    return addTeamMember(app, ctx, principal, params.team_id, params.user_id);
  },
});

const removeMemberRoute = defineRoute({
  method: 'DELETE',
  path: '/api/v1/teams/{team_id}/members/{user_id}',
  operationId: 'removeTeamMember',
  summary: 'Remove a user from a team',
  description: "The user loses the team's rights from the next request on. Removing a non-member is a 404.",
  tags: TAGS,
  access: write,
  params: MemberParams,
  responses: { 200: { description: 'The team.', schema: TeamDetail } },
  async handler({ ctx, app, principal, params }) {
    return removeTeamMember(app, ctx, principal, params.team_id, params.user_id);
  },
});

const permissions = defineRoute({
  method: 'PUT',
  path: '/api/v1/teams/{team_id}/permissions',
  operationId: 'setTeamPermissions',
  summary: "Replace a team's permission grants",
  tags: TAGS,
  access: write,
  params: TeamParams,
  body: PermissionsBody,
  responses: { 200: { description: "The team's rights.", schema: Rights } },
  async handler({ ctx, app, principal, params, body }) {
    const team = await teamOr404(app, principal, params.team_id);
    return setPermissions(
      app,
      ctx,
      principal,
      { holder: { teamId: team.id }, type: 'team', id: team.id, name: team.name },
      body.permissions,
    );
  },
});

const scopes = defineRoute({
  method: 'PUT',
  path: '/api/v1/teams/{team_id}/scopes',
  operationId: 'setTeamScopes',
  summary: "Replace a team's data scopes",
  description: "Same shape as a user's scopes.",
  tags: TAGS,
  access: write,
  params: TeamParams,
  body: ScopesBody,
  responses: { 200: { description: "The team's rights.", schema: Rights } },
  async handler({ ctx, app, principal, params, body }) {
    const team = await teamOr404(app, principal, params.team_id);
    return setScopes(
      app,
      ctx,
      principal,
      { holder: { teamId: team.id }, type: 'team', id: team.id, name: team.name },
      body.scopes,
    );
  },
});

export const teamRoutes: AnyRoute[] = [
  list,
  create,
  get,
  update,
  remove,
  addMemberRoute,
  removeMemberRoute,
  permissions,
  scopes,
];
