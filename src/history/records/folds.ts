import type { Queryable } from '../../platform/db/database.js';

/** The fold window when a tenant has set none (docs/readable-changes.md). */
export const DEFAULT_FOLD_WINDOW_SECONDS = 3600;

/** The tenant's fold window in seconds (change_settings, or the default). */
export async function foldWindowOf(sql: Queryable, tenantId: string): Promise<number> {
  const [row] = await sql<{ fold_window_seconds: number }[]>`
    select fold_window_seconds from change_settings where tenant_id = ${tenantId}`.execute();
  return row?.fold_window_seconds ?? DEFAULT_FOLD_WINDOW_SECONDS;
}

/** The longest fold window a tenant may set (change_settings): past it no head can be joined. */
export const MAX_FOLD_WINDOW_SECONDS = 604_800;

/** Forgets the open folds no record can join any more, in batches; returns how many. */
export async function forgetClosedFolds(sql: Queryable, now: Date, batchSize: number): Promise<number> {
  const before = new Date(now.getTime() - MAX_FOLD_WINDOW_SECONDS * 1000);
  let total = 0;
  for (;;) {
    const [row] = await sql<{ n: number }[]>`
      with gone as (
        delete from change_fold_heads h
        where (h.tenant_id, h.ci_id, h.fingerprint) in (
          select tenant_id, ci_id, fingerprint from change_fold_heads where fold_at < ${before} limit ${batchSize})
        returning 1)
      select count(*)::int as n from gone`.execute();
    total += row?.n ?? 0;
    if ((row?.n ?? 0) < batchSize) return total;
  }
}
