import type { Sql } from 'postgres';
export { foldWindowOf } from '../records/folds.js';

export async function writeFoldWindow(sql: Sql, tenantId: string, seconds: number, now: Date): Promise<void> {
  await sql`
    insert into change_settings (tenant_id, fold_window_seconds, updated_at) values (${tenantId}, ${seconds}, ${now})
    on conflict (tenant_id) do update set fold_window_seconds = excluded.fold_window_seconds, updated_at = excluded.updated_at`;
}
