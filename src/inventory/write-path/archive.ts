import { recordChanges, statusRecord } from '../../history/records/writer.js';
import type { Queryable } from '../../platform/db/database.js';
import { archiveCis, type ArchivedCi } from './store.js';

/**
 * Archives CIs (soft delete) and records a `DELETED` change for each, in the caller's transaction.
 * CIs already archived are left alone and not returned.
 */
export async function archiveWithHistory(
  sql: Queryable,
  tenantId: string,
  ciIds: string[],
  now: Date,
): Promise<ArchivedCi[]> {
  const archived = await archiveCis(sql, tenantId, ciIds, now);
  await recordChanges(
    sql,
    archived.map((ci) => statusRecord({ ...ci, tenant_id: tenantId }, 'DELETED', ci.previous_status, 'archived', now)),
  );
  return archived;
}
