import { recordChanges } from './change-writer.js';
import type { Queryable } from '../db/database.js';
import { archiveCis, type ArchivedCi } from './store.js';

/**
 * Archives CIs (soft delete) and records a `DELETED` change for each, in the caller's transaction.
 * CIs already archived are left alone and not returned.
 */
export async function archiveWithHistory(sql: Queryable, tenantId: string, ciIds: string[], now: Date): Promise<ArchivedCi[]> {
  const archived = await archiveCis(sql, tenantId, ciIds, now);
  await recordChanges(
    sql,
    archived.map((ci) => ({
      tenant_id: tenantId,
      ci_id: ci.ci_id,
      source_id: ci.source_id,
      scope_id: ci.scope_id,
      ci_name: ci.name,
      ci_namespace: ci.namespace,
      ci_type: ci.ci_type,
      change_type: 'DELETED' as const,
      changed_at: now,
      changes: [{ field: 'status', old_value: ci.previous_status, new_value: 'archived' }],
    })),
  );
  return archived;
}
