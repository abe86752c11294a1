import { seesAllData, type Principal } from '../../platform/auth/principal.js';
import { sourcesVisibleTo } from '../../platform/auth/scope.js';
import type { Sql } from '../../platform/db/database.js';

export interface CollectorRow {
  id: string;
  name: string;
  collector_type: string;
  status: string;
  created_at: Date;
  sources_total: number;
  last_collection: Date | null;
}

export interface CollectorCriteria {
  name?: string;
  collectorType?: string;
  status?: string;
  id?: string;
  limit: number;
  offset: number;
}

/**
 * The collectors the principal may see: all of the tenant's with access to all data, otherwise
 * those with a live source it may see.
 */
export async function listCollectors(
  sql: Sql,
  principal: Principal,
  criteria: CollectorCriteria,
): Promise<{ rows: CollectorRow[]; total: number }> {
  const everything = seesAllData(principal);
  const where = sql`c.tenant_id = ${principal.tenantId}
    ${criteria.id === undefined ? sql`` : sql`and c.id = ${criteria.id}`}
    ${criteria.name === undefined ? sql`` : sql`and c.name = ${criteria.name}`}
    ${criteria.collectorType === undefined ? sql`` : sql`and c.collector_type = ${criteria.collectorType}`}
    ${criteria.status === undefined ? sql`` : sql`and c.status = ${criteria.status}`}
    ${
      everything
        ? sql``
        : sql`and exists (select 1 from sources v where v.collector_id = c.id and v.deleted_at is null
                                            and ${sourcesVisibleTo(sql, principal, { tenant: 'v.tenant_id', source: 'v.id' })})`
    }`;
  // counts and times describe only the sources the caller may see
  const own = sql`s.collector_id = c.id and s.deleted_at is null and ${sourcesVisibleTo(sql, principal, { tenant: 's.tenant_id', source: 's.id' })}`;
  const [rows, [count]] = await Promise.all([
    sql<CollectorRow[]>`
      select c.id::text, c.name, c.collector_type, c.status, c.created_at,
             (select count(*)::int from sources s where ${own}) as sources_total,
             (select max(s.last_collection) from sources s where ${own}) as last_collection
      from collectors c where ${where} order by c.id limit ${criteria.limit} offset ${criteria.offset}`,
    sql<{ total: number }[]>`select count(*)::int as total from collectors c where ${where}`,
  ]);
  return { rows, total: count?.total ?? 0 };
}
