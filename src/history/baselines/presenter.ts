import type { BaselineRow } from './store.js';

export function presentBaseline(row: BaselineRow) {
  return { id: row.id, name: row.name, at: row.at_exact, created_at: row.created_at, created_by: row.created_by };
}
