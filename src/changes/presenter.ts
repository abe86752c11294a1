import type { ChangeRow } from '../history/store.js';
import { isoTime } from '../http/schemas.js';

/** A change record as spec §2.2 shows it; field changes keep their real JSON values. */
export function presentChange(row: ChangeRow) {
  return {
    id: row.id,
    ci_id: row.ci_id,
    ci_name: row.ci_name,
    ci_namespace: row.ci_namespace,
    ci_type: row.ci_type,
    changed_at: isoTime(row.changed_at),
    change_type: row.change_type,
    changes: row.changes.map((change) => ({ field: change.field, old_value: change.old_value ?? null, new_value: change.new_value ?? null })),
  };
}
