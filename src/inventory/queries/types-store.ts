import type { Queryable } from '../../platform/db/database.js';

/** Which of the named relationship types the tenant's relationships (now or ended) hold. */
export async function relationshipTypesPresent(
  sql: Queryable,
  tenantId: string,
  types: readonly string[],
): Promise<string[]> {
  const rows = await sql<{ relationship_type: string }[]>`
    select t.relationship_type from unnest(${types as string[]}::text[]) as t(relationship_type)
    where exists (select 1 from relationships r where r.tenant_id = ${tenantId} and r.relationship_type = t.relationship_type)
       or exists (select 1 from relationship_history h where h.tenant_id = ${tenantId} and h.relationship_type = t.relationship_type)`;
  return rows.map((r) => r.relationship_type);
}

/** The planner's row counts of the named tables (partitions included), as the statistics last saw them. */
export async function tableSizes(sql: Queryable, tables: readonly string[]): Promise<Map<string, number>> {
  const rows = await sql<{ relname: string; rows: number }[]>`
    select relname, greatest(reltuples, 0)::float8 as rows from pg_class where relname = any(${tables as string[]}::text[])`;
  return new Map(rows.map((r) => [r.relname, Number(r.rows)]));
}

/** Every partition of the partitioned tables the named partitions belong to, with its rows as the statistics last saw them. */
export async function siblingPartitions(
  sql: Queryable,
  tables: readonly string[],
): Promise<{ parent: string; partition: string; rows: number }[]> {
  const rows = await sql<{ parent: string; partition: string; rows: number }[]>`
    select distinct p.relname as parent, s.relname as partition, greatest(s.reltuples, 0)::float8 as rows
    from pg_class c
    join pg_inherits ci on ci.inhrelid = c.oid
    join pg_class p on p.oid = ci.inhparent
    join pg_inherits si on si.inhparent = p.oid
    join pg_class s on s.oid = si.inhrelid
    where c.relname = any(${tables as string[]}::text[]) and c.relnamespace = current_schema()::regnamespace`;
  return rows.map((r) => ({ ...r, rows: Number(r.rows) }));
}
