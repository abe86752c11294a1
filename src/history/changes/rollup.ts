import { CHANGE_KINDS, SEVERITIES, maxSeverity, type Severity } from '../records/kinds.js';
import type { OwnedRecord } from './rollup-store.js';

/** Records of one owner within this long of the first make one change set: what one collection wrote. */
export const SET_SPAN_MS = 60_000;

/** One line of a rolled-up timeline: change sets of one lead kind folded within the window. */
export interface TimelineEntry {
  /** The record the line is read by: the first set's most telling record. */
  lead: OwnedRecord;
  kind: string;
  severity: Severity;
  first_at: Date;
  last_at: Date;
  /** How many change sets the line folds (the collections that wrote it). */
  sets: number;
  /** Every record the line stands for, oldest first. */
  records: OwnedRecord[];
}

const rankOf = (severity: string | null) => SEVERITIES.indexOf((severity ?? 'info') as Severity);
const kindRank = (kind: string | null) => {
  const i = (CHANGE_KINDS as readonly string[]).indexOf(kind ?? 'other');
  // a kind a rule named ranks with the shipped kinds that matter most
  return i < 0 ? 0 : i;
};

/** The most telling record of a set: the most severe, then the weightier kind, then the owner's own, then the first. */
function leadOf(set: readonly OwnedRecord[]): OwnedRecord {
  return [...set].sort(
    (a, b) =>
      rankOf(b.severity) - rankOf(a.severity) ||
      kindRank(a.kind) - kindRank(b.kind) ||
      a.depth - b.depth ||
      a.changed_at.getTime() - b.changed_at.getTime(),
  )[0]!;
}

/** What makes two sets repeats of one another: the owner, the lead's kind and type, and the owner's own change exactly. */
const keyOf = (lead: OwnedRecord) =>
  `${lead.owner_id} ${lead.kind ?? ''} ${lead.ci_type} ${lead.depth === 0 ? (lead.fingerprint ?? lead.id) : ''}`;

/**
 * The rolled-up, folded timeline of records read on their owners (ownedRecords): per owner, the
 * records within SET_SPAN_MS of a set's first make a set, read by its lead; sets whose leads are
 * repeats within `windowMs` of the line's first set fold into one line. Newest line first.
 */
export function rollUp(records: readonly OwnedRecord[], windowMs: number): TimelineEntry[] {
  const ascending = [...records].sort(
    (a, b) => a.changed_at.getTime() - b.changed_at.getTime() || Number(a.id) - Number(b.id),
  );
  const sets: OwnedRecord[][] = [];
  const open = new Map<string, OwnedRecord[]>();
  for (const record of ascending) {
    const current = open.get(record.owner_id);
    if (current && record.changed_at.getTime() - current[0]!.changed_at.getTime() <= SET_SPAN_MS) current.push(record);
    else {
      const set = [record];
      sets.push(set);
      open.set(record.owner_id, set);
    }
  }
  const entries: TimelineEntry[] = [];
  const lines = new Map<string, TimelineEntry>();
  for (const set of sets) {
    const lead = leadOf(set);
    const key = keyOf(lead);
    const first = set[0]!.changed_at;
    const last = set[set.length - 1]!.changed_at;
    const line = lines.get(key);
    if (line && first.getTime() - line.first_at.getTime() <= windowMs) {
      line.sets += 1;
      line.records.push(...set);
      line.severity = maxSeverity(line.severity, (lead.severity ?? 'info') as Severity);
      if (last > line.last_at) line.last_at = last;
      continue;
    }
    const entry: TimelineEntry = {
      lead,
      kind: lead.kind ?? 'other',
      severity: (lead.severity ?? 'info') as Severity,
      first_at: first,
      last_at: last,
      sets: 1,
      records: [...set],
    };
    lines.set(key, entry);
    entries.push(entry);
  }
  return entries.reverse();
}
