/** The fields of a change record a burst looks at. */
export interface BurstRecord {
  id: string;
  ci_id: string;
  ci_type: string;
  ci_namespace: string | null;
  changed_at: string;
  change_type: 'CREATED' | 'UPDATED' | 'DELETED';
  changes: { field: string; new_value: unknown }[];
}

export interface Burst<R extends BurstRecord> {
  /** Newest first, as the records came. */
  records: R[];
  /** Distinct CIs among them. */
  cis: number;
  change_type: R['change_type'];
  ci_type: string;
  /** The fields changed, array positions folded (`spec.containers[].image`). */
  fields: string[];
  newest: string;
  oldest: string;
}

export type TimelineEntry<R extends BurstRecord> = { kind: 'one'; record: R } | { kind: 'burst'; burst: Burst<R> };

/** How far apart the members of one burst may lie: a rollout or a crash loop, not a week of restarts. */
export const BURST_SPAN_MS = 15 * 60_000;

/** The fields a record changed, array positions folded, sorted. */
const foldedFields = (record: BurstRecord): string[] =>
  [...new Set(record.changes.map((change) => change.field.replace(/\.\d+(?=\.|$)/g, '[]')))].sort();

/**
 * What makes two records "the same change": kind, CI type and namespace, the fields changed (array
 * positions aside) and, for a status move, where it went.
 */
function signature(record: BurstRecord): string {
  const fields = foldedFields(record);
  const status = record.changes.find((change) => change.field === 'status');
  return JSON.stringify([
    record.change_type,
    record.ci_type,
    record.ci_namespace,
    fields,
    status ? status.new_value : null,
  ]);
}

/**
 * A timeline (newest first) with repeats of the same change grouped: records of one signature
 * within `spanMs` of the group's newest member read as one burst ("4 k8s.pod archived"), placed
 * where its newest member was. A group of one stays a plain record.
 */
export function bursts<R extends BurstRecord>(records: readonly R[], spanMs = BURST_SPAN_MS): TimelineEntry<R>[] {
  const open = new Map<string, R[]>();
  const groupOf = new Map<string, R[]>();
  for (const record of records) {
    const key = signature(record);
    let group = open.get(key);
    if (!group || Date.parse(group[0]!.changed_at) - Date.parse(record.changed_at) > spanMs) {
      group = [];
      open.set(key, group);
    }
    group.push(record);
    groupOf.set(record.id, group);
  }
  const entries: TimelineEntry<R>[] = [];
  for (const record of records) {
    const group = groupOf.get(record.id)!;
    if (group.length === 1) entries.push({ kind: 'one', record });
    else if (group[0] === record) {
      entries.push({
        kind: 'burst',
        burst: {
          records: group,
          cis: new Set(group.map((member) => member.ci_id)).size,
          change_type: record.change_type,
          ci_type: record.ci_type,
          fields: foldedFields(record),
          newest: record.changed_at,
          oldest: group[group.length - 1]!.changed_at,
        },
      });
    }
  }
  return entries;
}

/** A burst in words: "4 k8s.pod archived", "spec.replicas changed on 3 k8s.deployment (7 changes)". */
export function describeBurst(burst: Burst<BurstRecord>): string {
  const what = `${burst.cis} ${burst.ci_type}`;
  const repeats = burst.records.length > burst.cis ? ` (${burst.records.length} changes)` : '';
  if (burst.change_type === 'CREATED') return `${what} created${repeats}`;
  if (burst.change_type === 'DELETED') return `${what} archived${repeats}`;
  const fields =
    burst.fields.length > 2
      ? `${burst.fields.slice(0, 2).join(', ')} +${burst.fields.length - 2} more`
      : burst.fields.join(', ');
  return `${fields} changed on ${what}${repeats}`;
}
