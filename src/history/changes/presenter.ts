import type { ChangeStats, StatsBucket } from '../records/stats-model.js';
import type { ChangeRow } from '../records/store.js';
import { jsonWith, type JsonText } from '../../platform/http/route.js';
import { isoTime } from '../../platform/http/schemas.js';
import type { TimelineEntry } from './rollup.js';
import type { OwnedRecord } from './rollup-store.js';

/** The most record ids a line lists. */
const LINE_IDS = 500;

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

/** An exact record of a rolled-up read: the owner it is read on beside it. */
export function presentOwned(row: OwnedRecord) {
  return { ...presentChange(row), rollup: { owner_id: row.owner_id } };
}

/** A line of a rolled-up, folded timeline: its lead record, and what the line stands for. */
export function presentLine(line: TimelineEntry) {
  const byType = new Map<string, Set<string>>();
  for (const record of line.records) {
    const cis = byType.get(record.ci_type) ?? new Set<string>();
    byType.set(record.ci_type, cis.add(record.ci_id));
  }
  return {
    ...presentChange(line.lead),
    kind: line.kind,
    severity: line.severity,
    fold: { records: line.records.length, last_at: isoTime(line.last_at) },
    rollup: {
      owner_id: line.lead.owner_id,
      first_at: isoTime(line.first_at),
      sets: line.sets,
      cis: [...byType].map(([ci_type, cis]) => ({ ci_type, cis: cis.size })).sort((a, b) => b.cis - a.cis),
      record_ids: line.records.slice(0, LINE_IDS).map((r) => r.id),
    },
  };
}
