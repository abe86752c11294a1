import type { Queryable } from '../db/database.js';

export interface SourceRef {
  id: string;
  name: string;
  collector_id: string;
}

export function findSourceByName(sql: Queryable, tenantId: string, name: string): Promise<SourceRef | undefined> {
  return sql<SourceRef[]>`
    select id::text, name, collector_id::text from sources
    where tenant_id = ${tenantId} and name = ${name} and deleted_at is null`.then((rows) => rows[0]);
}

/**
 * Returns the live source with this name, creating it (and the collector of its type, which is
 * provisioned with its first source) when it does not exist yet.
 */
export async function ensureSource(
  sql: Queryable,
  tenantId: string,
  name: string,
  collectorType: string,
  endpoint: string | null = null,
): Promise<SourceRef> {
  const existing = await findSourceByName(sql, tenantId, name);
  if (existing) return existing;
  const [collector] = await sql<{ id: string }[]>`
    insert into collectors (tenant_id, name, collector_type) values (${tenantId}, ${collectorType}, ${collectorType})
    on conflict (tenant_id, name, collector_type) do update set updated_at = collectors.updated_at
    returning id::text`;
  await sql`
    insert into sources (tenant_id, collector_id, name, endpoint)
    values (${tenantId}, ${collector!.id}, ${name}, ${endpoint})
    on conflict (tenant_id, name) where deleted_at is null do nothing`;
  return (await findSourceByName(sql, tenantId, name))!;
}

export function findSourceById(sql: Queryable, tenantId: string, sourceId: string): Promise<SourceRef | undefined> {
  return sql<SourceRef[]>`
    select id::text, name, collector_id::text from sources
    where tenant_id = ${tenantId} and id = ${sourceId} and deleted_at is null`.then((rows) => rows[0]);
}
