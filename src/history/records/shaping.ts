import type { Queryable } from '../../platform/db/database.js';

/**
 * What applies a tenant's change rules to records just written, in the writing transaction
 * (src/history/change-rules/ supplies it; the writer cannot know the query language's compiler,
 * which lies above it). `ids` may hold other tenants' records: the shaper keeps to its tenant.
 */
export type ChangeShaper = (sql: Queryable, tenantId: string, ids: readonly string[]) => Promise<void>;

let shaper: ChangeShaper | undefined;

/** Sets the process's shaper; the application and every command that writes history install it. */
export function useChangeShaper(next: ChangeShaper): void {
  shaper = next;
}

export async function shapeWritten(sql: Queryable, tenantId: string, ids: readonly string[]): Promise<void> {
  if (shaper && ids.length > 0) await shaper(sql, tenantId, ids);
}
