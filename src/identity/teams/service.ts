import type { Context } from 'koa';
import { auditChange } from '../../platform/audit/log.js';
import type { Principal } from '../../platform/auth/principal.js';
import type { AppContext } from '../../context.js';
import { assertActsOn, changeRights } from '../grants/service.js';
import { scopeView } from '../grants/schema.js';
import { directRights } from '../grants/service.js';
import { conflict, notFound } from '../../platform/errors.js';
import { findUser } from '../users/service.js';
import {
  addMember,
  deleteTeam,
  findTeam,
  insertTeam,
  listTeams,
  removeMember,
  teamMembers,
  updateTeam,
  type TeamRow,
} from './store.js';

export const presentTeam = (row: TeamRow) => ({ ...row, created_at: row.created_at.toISOString() });

export async function teamOr404(app: AppContext, principal: Principal, id: string): Promise<TeamRow> {
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

export async function teamDetail(app: AppContext, team: TeamRow) {
  const [members, rights] = await Promise.all([
    teamMembers(app.sql, team.id),
    directRights(app.sql, { teamId: team.id }),
  ]);
  return {
    ...presentTeam(team),
    member_list: members.map((m) => ({ ...m, added_at: m.added_at.toISOString() })),
    rights: { permissions: rights.permissions, scopes: rights.scopes.map(scopeView) },
  };
}

export async function createTeam(
  app: AppContext,
  principal: Principal,
  input: { name: string; description: string },
): Promise<TeamRow> {
  return insertTeam(app.sql, principal.tenantId, input).catch(orNameTaken(input.name));
}

export async function renameTeam(
  app: AppContext,
  principal: Principal,
  id: string,
  change: { name?: string; description?: string },
): Promise<TeamRow> {
  await teamOr404(app, principal, id);
  await updateTeam(app.sql, principal.tenantId, id, change).catch(orNameTaken(change.name));
  return teamOr404(app, principal, id);
}

/** Deletes a team with its audit event; its members lose what it gave them, so the caller must cover the team and each member. */
export async function removeTeam(app: AppContext, ctx: Context, principal: Principal, id: string): Promise<void> {
  const team = await teamOr404(app, principal, id);
  await app.sql.begin(async (tx) => {
    await assertActsOn(tx, principal, { holder: { teamId: team.id }, type: 'team', id: team.id, name: team.name });
    if (!(await deleteTeam(tx, principal.tenantId, id))) throw notFound('Team not found', { team_id: id });
    await auditChange(tx, app.audit, ctx, principal, 'membership.changed', { type: 'team', id }, { deleted: true });
  });
}

/** Adds a member within the grant ceiling: the team's rights, and all the member then holds, must fit the caller. */
export async function addTeamMember(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  teamId: string,
  userId: string,
) {
  const team = await teamOr404(app, principal, teamId);
  const user = await findUser(app.sql, principal.tenantId, userId);
  if (!user) throw notFound('User not found', { user_id: userId });
  await changeRights(app, ctx, principal, {
    target: { holder: { teamId: team.id }, type: 'team', id: team.id, name: team.name },
    alsoUsers: [user.id],
    handsOutTeam: true,
    event: 'membership.changed',
    details: { added: user.id },
    apply: (tx) => addMember(tx, team.id, user.id),
  });
  return teamDetail(app, await teamOr404(app, principal, team.id));
}

/** Removes a member: the member loses what the team gave it, so the caller must cover what the member holds. */
export async function removeTeamMember(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  teamId: string,
  userId: string,
) {
  const team = await teamOr404(app, principal, teamId);
  const user = await findUser(app.sql, principal.tenantId, userId);
  await app.sql.begin(async (tx) => {
    if (user)
      await assertActsOn(tx, principal, { holder: { userId: user.id }, type: 'user', id: user.id, name: user.name });
    if (!(await removeMember(tx, team.id, userId))) throw notFound('Not a member of this team', { user_id: userId });
    await auditChange(
      tx,
      app.audit,
      ctx,
      principal,
      'membership.changed',
      { type: 'team', id: team.id, name: team.name },
      { removed: userId },
    );
  });
  return teamDetail(app, await teamOr404(app, principal, team.id));
}

/** One offset page of the tenant's teams by name, with the total. */
export function listTeamPage(
  app: AppContext,
  principal: Principal,
  page: { limit: number; offset: number },
): Promise<{ rows: TeamRow[]; total: number }> {
  return listTeams(app.sql, principal.tenantId, page);
}
