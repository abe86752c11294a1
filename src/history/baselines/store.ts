import type { Sql } from 'postgres';
import type { Queryable } from '../../platform/db/database.js';

export interface BaselineRow {
  id: string;
  name: string;
  at: Date;
  at_exact: string;
  created_at: Date;
  created_by: string;
  /** Its owner (see sql/0040); null for baselines named before owners were recorded. */
  user_id: string | null;
  api_key_id: string | null;
}

const COLUMNS = (sql: Sql) =>
  sql`id, name, at, to_char(at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at_exact, created_at, created_by,
       user_id::text, api_key_id::text`;

/** The tenant's baselines, newest moment first. */
export function listBaselines(sql: Sql, tenantId: string): Promise<BaselineRow[]> {
  return sql<
    BaselineRow[]
  >`select ${COLUMNS(sql)} from baselines where tenant_id = ${tenantId} order by at desc, id desc`;
}

export async function findBaseline(sql: Sql, tenantId: string, id: string): Promise<BaselineRow | undefined> {
  const [row] = await sql<
    BaselineRow[]
  >`select ${COLUMNS(sql)} from baselines where tenant_id = ${tenantId} and id = ${id}`;
  return row;
}

export async function findBaselineByName(sql: Sql, tenantId: string, name: string): Promise<BaselineRow | undefined> {
  const [row] = await sql<
    BaselineRow[]
  >`select ${COLUMNS(sql)} from baselines where tenant_id = ${tenantId} and name = ${name}`;
  return row;
}

/** Counts the tenant's baselines under a lock held to the end of the transaction, so that two inserts cannot both pass the limit. */
export async function lockAndCountBaselines(sql: Queryable, tenantId: string): Promise<number> {
  const db = sql as Sql;
  await db`select pg_advisory_xact_lock(hashtextextended(${`baselines:${tenantId}`}, 0))`;
  const [row] = await db<{ n: number }[]>`select count(*)::int as n from baselines where tenant_id = ${tenantId}`;
  return row?.n ?? 0;
}

/** Inserts a baseline; undefined when the tenant has one of that name already. */
export async function insertBaseline(
  sql: Queryable,
  tenantId: string,
  baseline: {
    id: string;
    name: string;
    at: string;
    createdAt: Date;
    createdBy: string;
    owner: { userId: string | null; apiKeyId: string | null };
  },
): Promise<BaselineRow | undefined> {
  const db = sql as Sql;
  const [row] = await db<BaselineRow[]>`
    insert into baselines (id, tenant_id, name, at, created_at, created_by, user_id, api_key_id)
    values (${baseline.id}, ${tenantId}, ${baseline.name}, ${baseline.at}::text::timestamptz, ${baseline.createdAt}, ${baseline.createdBy},
            ${baseline.owner.userId}, ${baseline.owner.apiKeyId})
    on conflict (tenant_id, name) do nothing
    returning ${COLUMNS(db)}`;
  return row;
}

/** Deletes a baseline; false when the tenant has none with that id. */
export async function deleteBaseline(sql: Sql, tenantId: string, id: string): Promise<boolean> {
  const rows = await sql`delete from baselines where tenant_id = ${tenantId} and id = ${id} returning id`;
  return rows.length > 0;
}
