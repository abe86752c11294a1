import type { Field } from '../../platform/query-language/ast.js';

/** How a field's values are compared: text as text, times as moments, JSON paths by the value's type. */
export type FieldKind = 'text' | 'timestamp' | 'uuid' | 'bigint' | 'json';

export interface FieldDef {
  kind: FieldKind;
  /** The column of a configuration_items row (or of ci_last_seen for `last_seen`). */
  column: string;
  /** The values an enumeration takes (`status`). */
  values?: readonly string[];
  /** Only the present is known of it: refused in a query read at a moment. */
  presentOnly?: boolean;
}

export const CI_STATUSES = ['active', 'inactive', 'archived'] as const;

/** Every field a query may name; `raw_data` and `type_data` take a path after them. */
export const QUERY_FIELDS: Readonly<Record<string, FieldDef>> = {
  ci_id: { kind: 'uuid', column: 'ci_id' },
  name: { kind: 'text', column: 'name' },
  namespace: { kind: 'text', column: 'namespace' },
  ci_type: { kind: 'text', column: 'ci_type' },
  status: { kind: 'text', column: 'status', values: CI_STATUSES },
  source_id: { kind: 'bigint', column: 'source_id' },
  scope_id: { kind: 'text', column: 'scope_id' },
  external_id: { kind: 'text', column: 'external_id' },
  created_at: { kind: 'timestamp', column: 'created_at' },
  updated_at: { kind: 'timestamp', column: 'updated_at' },
  status_updated_at: { kind: 'timestamp', column: 'status_updated_at' },
  last_seen: { kind: 'timestamp', column: 'last_seen', presentOnly: true },
  raw_data: { kind: 'json', column: 'raw_data' },
  type_data: { kind: 'json', column: 'type_data' },
  // the host identity the CI observes (docs/identities.md): every observation of one machine
  identity_id: { kind: 'uuid', column: 'identity_id' },
};

/** The columns an answer shows when the query picks none. */
export const DEFAULT_COLUMNS = [
  'ci_id',
  'name',
  'ci_type',
  'namespace',
  'status',
  'source_id',
  'scope_id',
  'updated_at',
];

/** The field as the query wrote it: `raw_data.spec.replicas`. */
export const fieldText = (field: Field): string =>
  [
    field.name,
    ...field.path.map((s, i) =>
      field.wildcards?.includes(i) ? '*' : /^[A-Za-z0-9_\-$@]+$/.test(s) ? s : JSON.stringify(s),
    ),
  ].join('.');

/** Edit distance, for naming the nearest known names of an unknown one. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
      previous = current;
    }
  }
  return row[b.length]!;
}

/** Up to three known names nearest to `name`, nearest first; a name the unknown one begins counts as near. */
export function nearest(name: string, known: readonly string[]): string[] {
  return known
    .map((k) => ({ k, d: k.startsWith(name) ? 0.5 : distance(name, k) }))
    .filter(({ d }) => d <= Math.max(2, Math.floor(name.length / 3)))
    .sort((a, b) => a.d - b.d || a.k.localeCompare(b.k))
    .slice(0, 3)
    .map(({ k }) => k);
}
