import { isoTime } from '../../platform/http/schemas.js';
import type { QueryAnswer } from './service.js';

function byCi<T extends { ci_id: string }>(rows: readonly T[]): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const row of rows) out.set(row.ci_id, [...(out.get(row.ci_id) ?? []), row]);
  return out;
}

const shown = (value: unknown): unknown => (value instanceof Date ? isoTime(value) : value);

/** The JSON answer: rows keyed by the column names the query wrote, groups keyed by their fields. */
export function presentAnswer(answer: QueryAnswer) {
  switch (answer.kind) {
    case 'explain':
      return { kind: answer.kind, plan: answer.plan, as_of: answer.asOf };
    case 'aggregate':
      return {
        kind: answer.kind,
        fn: answer.fn,
        field: answer.field,
        by: answer.by,
        groups: answer.groups.map((g) => ({
          key: Object.fromEntries(answer.by.map((name, i) => [name, g.groups[i] ?? null])),
          count: g.count,
          value: g.value === null ? null : Number(g.value),
        })),
        truncated: answer.truncated,
        hidden: answer.hidden,
        as_of: answer.asOf,
        took_ms: answer.tookMs,
      };
    case 'rows': {
      const changes = answer.changes && byCi(answer.changes);
      return {
        kind: answer.kind,
        columns: answer.columns,
        items: answer.rows.map((row) => ({
          ci_id: row.ci_id,
          fields: Object.fromEntries(answer.columns.map((name, i) => [name, shown(row.values[i]) ?? null])),
          ...(changes
            ? {
                changes: (changes.get(row.ci_id) ?? []).map((c) => ({
                  id: c.id,
                  change_type: c.change_type,
                  changed_at: isoTime(c.changed_at),
                  changes: c.changes as Record<string, unknown>[],
                })),
              }
            : {}),
        })),
        next_cursor: answer.nextCursor,
        hidden: answer.hidden,
        as_of: answer.asOf,
        took_ms: answer.tookMs,
      };
    }
  }
}

/** A CSV cell of a value: JSON for what is not text, a number or a time. */
const cell = (value: unknown): unknown =>
  value === null || value === undefined
    ? ''
    : value instanceof Date
      ? isoTime(value)
      : typeof value === 'object'
        ? JSON.stringify(value)
        : value;

/** The CSV header and rows of one answer page. */
export function csvOf(answer: Exclude<QueryAnswer, { kind: 'explain' }>, header: boolean): unknown[][] {
  if (answer.kind === 'aggregate') {
    const rows = answer.groups.map((g) => [...g.groups.map(cell), g.count, ...(answer.field ? [g.value ?? ''] : [])]);
    const head = [...answer.by, 'count', ...(answer.field ? [`${answer.fn}(${answer.field})`] : [])];
    return header ? [head, ...rows] : rows;
  }
  // every row names its CI first, once: a query that chose ci_id as a column already has it
  const lead = !answer.columns.includes('ci_id');
  const rows = answer.rows.map((row) => [...(lead ? [row.ci_id] : []), ...row.values.map(cell)]);
  return header ? [[...(lead ? ['ci_id'] : []), ...answer.columns], ...rows] : rows;
}
