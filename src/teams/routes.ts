import { Type } from '@sinclair/typebox';
import { auditChange } from '../audit/log.js';
import type { AppContext } from '../context.js';
import type { Principal } from '../auth/principal.js';
import { conflict, notFound } from '../http/errors.js';
import { defineRoute, type AnyRoute } from '../http/route.js';
import { Limit, Nullable, Offset, Timestamp, Uuid } from '../http/schemas.js';
import { changeRights, setPermissions, setScopes } from '../users/rights.js';
import { PermissionsBody, Rights, ScopesBody, scopeView } from '../users/schema.js';
import { directRights, findUser } from '../users/store.js';
import { addMember, deleteTeam, findTeam, insertTeam, listTeams, removeMember, teamMembers, updateTeam, type TeamRow } from './store.js';

const Team = Type.Object({ id: Uuid(), name: Type.String(), description: Type.String(), created_at: Timestamp(), members: Type.Integer() });
const TeamDetail = Type.Composite([
  Team,
  Type.Object({
    member_list: Type.Array(Type.Object({ id: Uuid(), name: Type.String(), email: Nullable(Type.String()), added_at: Timestamp() })),
    rights: Rights,
  }),
]);
const TeamParams = Type.Object({ team_id: Uuid('The team identifier') });
const MemberParams = Type.Object({ team_id: Uuid('The team identifier'), user_id: Uuid('The user identifier') });
const TeamName = Type.String({ minLength: 1, maxLength: 200 });
const Description = Type.String({ maxLength: 2000 });

const presentTeam = (row: TeamRow) => ({ ...row, created_at: row.created_at.toISOString() });

async function teamOr404(app: AppContext, principal: Principal, id: string): Promise<TeamRow> {
  const team = await findTeam(app.sql, principal.tenantId, id);
  if (!team) throw notFound('Team not found', { team_id: id });
  return team;
}

/** A taken team name is a 409 whether found first or caught by the unique index in a race. */
const nameTaken = (name: string) => conflict('A team with this name exists already', { name });
const orNameTaken = (name: string | undefined) => (error: unknown) => {
  if ((error as { code?: string }).code === '23505' && name !== undefined) throw nameTaken(name);
  throw error;
};

async function teamDetail(app: AppContext, team: TeamRow) {
  const [members, rights] = await Promise.all([teamMembers(app.sql, team.id), directRights(app.sql, { teamId: team.id })]);
  return {
    ...presentTeam(team),
    member_list: members.map((m) => ({ ...m, added_at: m.added_at.toISOString() })),
    rights: { permissions: rights.permissions, scopes: rights.scopes.map(scopeView) },
  };
}

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
      schema: Type.Object({ items: Type.Array(Team), total: Type.Integer(), offset: Type.Integer(), limit: Type.Integer(), has_more: Type.Boolean() }),
    },
  },
  async handler({ app, principal, query }) {
    const { rows, total } = await listTeams(app.sql, principal.tenantId, query);
    return { items: rows.map(presentTeam), total, offset: query.offset, limit: query.limit, has_more: query.offset + rows.length < total };
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
  responses: { 201: { description: 'The team.', schema: Team } },
  async handler({ ctx, app, principal, body }) {
    const team = await insertTeam(app.sql, principal.tenantId, { name: body.name, description: body.description ?? '' }).catch(orNameTaken(body.name));
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
  body: Type.Object({ name: Type.Optional(TeamName), description: Type.Optional(Description) }, { additionalProperties: false }),
  responses: { 200: { description: 'The team.', schema: Team } },
  async handler({ app, principal, params, body }) {
    await teamOr404(app, principal, params.team_id);
    await updateTeam(app.sql, principal.tenantId, params.team_id, body).catch(orNameTaken(body.name));
    return presentTeam(await teamOr404(app, principal, params.team_id));
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
    await app.sql.begin(async (tx) => {
      if (!(await deleteTeam(tx, principal.tenantId, params.team_id))) throw notFound('Team not found', { team_id: params.team_id });
      await auditChange(tx, app.audit, ctx, principal, 'membership.changed', { type: 'team', id: params.team_id }, { deleted: true });
    });
    return { message: 'Team deleted' };
  },
});

const addMemberRoute = defineRoute({
  method: 'PUT',
  path: '/api/v1/teams/{team_id}/members/{user_id}',
  operationId: 'addTeamMember',
  summary: 'Add a user to a team',
  description:
    'Idempotent. The user holds the team\'s rights from the next request on. The grant ceiling applies: the team\'s ' +
    'rights, and everything the user then holds if the membership gives it anything new, must be within the caller\'s (403).',
  tags: TAGS,
  access: write,
  params: MemberParams,
  responses: { 200: { description: 'The team.', schema: TeamDetail } },
  async handler({ ctx, app, principal, params }) {
    const team = await teamOr404(app, principal, params.team_id);
    const user = await findUser(app.sql, principal.tenantId, params.user_id);
    if (!user) throw notFound('User not found', { user_id: params.user_id });
    await changeRights(app, ctx, principal, {
      target: { holder: { teamId: team.id }, type: 'team', id: team.id, name: team.name },
      alsoUsers: [user.id],
      handsOutTeam: true,
      event: 'membership.changed',
      details: { added: user.id },
      apply: (tx) => addMember(tx, team.id, user.id),
    });
    return teamDetail(app, await teamOr404(app, principal, team.id));
  },
});

const removeMemberRoute = defineRoute({
  method: 'DELETE',
  path: '/api/v1/teams/{team_id}/members/{user_id}',
  operationId: 'removeTeamMember',
  summary: 'Remove a user from a team',
  description: 'The user loses the team\'s rights from the next request on. Removing a non-member is a 404.',
  tags: TAGS,
  access: write,
  params: MemberParams,
  responses: { 200: { description: 'The team.', schema: TeamDetail } },
  async handler({ ctx, app, principal, params }) {
    const team = await teamOr404(app, principal, params.team_id);
    await app.sql.begin(async (tx) => {
      if (!(await removeMember(tx, team.id, params.user_id))) throw notFound('Not a member of this team', { user_id: params.user_id });
      await auditChange(tx, app.audit, ctx, principal, 'membership.changed', { type: 'team', id: team.id, name: team.name }, { removed: params.user_id });
    });
    return teamDetail(app, await teamOr404(app, principal, team.id));
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
    return setPermissions(app, ctx, principal, { holder: { teamId: team.id }, type: 'team', id: team.id, name: team.name }, body.permissions);
  },
});

const scopes = defineRoute({
  method: 'PUT',
  path: '/api/v1/teams/{team_id}/scopes',
  operationId: 'setTeamScopes',
  summary: "Replace a team's data scopes",
  description: 'Same shape as a user\'s scopes.',
  tags: TAGS,
  access: write,
  params: TeamParams,
  body: ScopesBody,
  responses: { 200: { description: "The team's rights.", schema: Rights } },
  async handler({ ctx, app, principal, params, body }) {
    const team = await teamOr404(app, principal, params.team_id);
    return setScopes(app, ctx, principal, { holder: { teamId: team.id }, type: 'team', id: team.id, name: team.name }, body.scopes);
  },
});

export const teamRoutes: AnyRoute[] = [list, create, get, update, remove, addMemberRoute, removeMemberRoute, permissions, scopes];
