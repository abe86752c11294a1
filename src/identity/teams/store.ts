import { uuidv7 } from 'uuidv7';
import type { Queryable } from '../../platform/db/database.js';

export interface TeamRow {
  id: string;
  name: string;
  description: string;
  created_at: Date;
  members: number;
}

const TEAM = (sql: Queryable) => sql`
  t.id, t.name, t.description, t.created_at, (select count(*)::int from team_members m where m.team_id = t.id) as members`;

export async function insertTeam(
  sql: Queryable,
  tenantId: string,
  team: { name: string; description: string },
): Promise<TeamRow> {
  const id = uuidv7();
  await sql`insert into teams (id, tenant_id, name, description) values (${id}, ${tenantId}, ${team.name}, ${team.description})`;
  return (await findTeam(sql, tenantId, id))!;
}

export async function findTeam(sql: Queryable, tenantId: string, id: string): Promise<TeamRow | undefined> {
  const [row] = await sql<TeamRow[]>`select ${TEAM(sql)} from teams t where t.tenant_id = ${tenantId} and t.id = ${id}`;
  return row;
}

export async function listTeams(
  sql: Queryable,
  tenantId: string,
  page: { limit: number; offset: number },
): Promise<{ rows: TeamRow[]; total: number }> {
  const [rows, [count]] = await Promise.all([
    sql<
      TeamRow[]
    >`select ${TEAM(sql)} from teams t where t.tenant_id = ${tenantId} order by t.name, t.id limit ${page.limit} offset ${page.offset}`,
    sql<{ total: number }[]>`select count(*)::int as total from teams where tenant_id = ${tenantId}`,
  ]);
  return { rows, total: count?.total ?? 0 };
}

export async function updateTeam(
  sql: Queryable,
  tenantId: string,
  id: string,
  change: { name?: string; description?: string },
): Promise<boolean> {
  const result = await sql`
    update teams set name = coalesce(${change.name ?? null}, name), description = coalesce(${change.description ?? null}, description)
    where tenant_id = ${tenantId} and id = ${id}`;
  return result.count > 0;
}

export async function deleteTeam(sql: Queryable, tenantId: string, id: string): Promise<boolean> {
  const result = await sql`delete from teams where tenant_id = ${tenantId} and id = ${id}`;
  return result.count > 0;
}

export async function teamMembers(
  sql: Queryable,
  teamId: string,
): Promise<{ id: string; name: string; email: string | null; added_at: Date }[]> {
  return sql<{ id: string; name: string; email: string | null; added_at: Date }[]>`
    select u.id, u.name, u.email, m.added_at from team_members m join users u on u.id = m.user_id where m.team_id = ${teamId} order by u.name, u.id`;
}

export async function addMember(sql: Queryable, teamId: string, userId: string): Promise<boolean> {
  const result =
    await sql`insert into team_members (team_id, user_id) values (${teamId}, ${userId}) on conflict do nothing`;
  return result.count > 0;
}

export async function removeMember(sql: Queryable, teamId: string, userId: string): Promise<boolean> {
  const result = await sql`delete from team_members where team_id = ${teamId} and user_id = ${userId}`;
  return result.count > 0;
}
