import type { ChangeStats, StatsBucket } from '../records/stats-model.js';
import type { ChangeRow } from '../records/store.js';
import { jsonWith, type JsonText } from '../../platform/http/route.js';
import { isoTime } from '../../platform/http/schemas.js';

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
    kind: row.kind,
    severity: row.severity,
    ...(row.ignored ? { ignored: true } : {}),
    ...(row.fold ? { fold: { records: row.fold.records, last_at: isoTime(row.fold.last_at) } } : {}),
    changes: row.changes.map((change) => ({
      field: change.field,
      old_value: change.old_value ?? null,
      new_value: change.new_value ?? null,
    })),
  };
}

/**
 * The series' JSON by the array it was written from. The default window's series comes from the
 * snapshot cache, shared between answers and never changed, and in the hourly grouping it is most
 * of a 190 KB answer: serialising it once per snapshot rather than per request takes a quarter of
 * the server's work for each answer.
 */
const seriesText = new WeakMap<readonly StatsBucket[], string>();

/** Statistics as JSON text, the series serialised once per array. */
export function presentStats(stats: ChangeStats): JsonText {
  const { series, ...rest } = stats;
  let text = seriesText.get(series);
  if (text === undefined) seriesText.set(series, (text = JSON.stringify(series)));
  return jsonWith({ series: text }, rest);
}
