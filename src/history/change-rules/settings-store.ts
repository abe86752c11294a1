import type { Sql } from 'postgres';
import { DEFAULT_FOLD_WINDOW_SECONDS } from '../records/folds.js';

export async function foldWindowOf(sql: Sql, tenantId: string): Promise<number> {
  const [row] = await sql<{ fold_window_seconds: number }[]>`
    select fold_window_seconds from change_settings where tenant_id = ${tenantId}`;
  return row?.fold_window_seconds ?? DEFAULT_FOLD_WINDOW_SECONDS;
}

export async function writeFoldWindow(sql: Sql, tenantId: string, seconds: number, now: Date): Promise<void> {
  await sql`
    insert into change_settings (tenant_id, fold_window_seconds, updated_at) values (${tenantId}, ${seconds}, ${now})
    on conflict (tenant_id) do update set fold_window_seconds = excluded.fold_window_seconds, updated_at = excluded.updated_at`;
}
