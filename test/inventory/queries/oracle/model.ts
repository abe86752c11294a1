/**
 * The inventory as the query-language oracle sees it: the rows the write path stored, dumped after
 * each write at the moment it was written, so that the inventory of any moment is the last dump at
 * or before it (no time machine involved). JSON helpers follow PostgreSQL's jsonb rules for the
 * shapes the estates hold (scalars, nested objects, arrays of scalars).
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface CiRow {
  ci_id: string;
  source_id: string;
  scope_id: string | null;
  external_id: string;
  ci_type: string;
  name: string;
  namespace: string | null;
  status: 'active' | 'inactive' | 'archived';
  status_updated_at: Date | null;
  raw_data: Record<string, Json>;
  type_data: Record<string, Json>;
  created_at: Date;
  updated_at: Date;
}

export interface RelRow {
  from_ci_id: string;
  to_ci_id: string;
  relationship_type: string;
}

export interface ChangeRow {
  id: bigint;
  ci_id: string;
  source_id: string | null;
  scope_id: string | null;
  moved_from_scope_id: string | null;
  change_type: string;
  changed_at: Date;
  changes: unknown[];
  changed_fields: string[];
}

/** The inventory after one write, at the moment of that write. */
export interface Dump {
  at: Date;
  cis: Map<string, CiRow>;
  rels: RelRow[];
}

export interface Model {
  /** In write order; the last one is the inventory now. */
  dumps: Dump[];
  /** CIs removed for good, as their last row (for what a read of the past shows whom). */
  tombstones: Map<string, CiRow>;
  changes: ChangeRow[];
  lastSeen: Map<string, Date>;
  /** Relationship types the tenant holds, now or ended (a hop may name them). */
  relationshipTypes: Set<string>;
  sourceIds: string[];
  /** CI ids by external id, for the queries that name CIs. */
  ciIds: Map<string, string>;
}

export interface Scope {
  sourceId: string;
  scopeId: string | null;
}

/** Null: the principal sees all data. */
export type Scopes = Scope[] | null;

export const EMPTY: Dump = { at: new Date(0), cis: new Map(), rels: [] };

/** The inventory at a moment: the last write at or before it. */
export function dumpAt(model: Model, at: Date | undefined): Dump {
  if (at === undefined) return model.dumps[model.dumps.length - 1] ?? EMPTY;
  let found = EMPTY;
  for (const dump of model.dumps) if (dump.at.getTime() <= at.getTime()) found = dump;
  return found;
}

export function inScopes(scopes: Scopes, sourceId: string | null, scopeId: string | null): boolean {
  if (scopes === null) return true;
  return scopes.some((s) => s.sourceId === sourceId && (s.scopeId === null || s.scopeId === scopeId));
}

export const rowVisible = (scopes: Scopes, row: CiRow) => inScopes(scopes, row.source_id, row.scope_id);

/** A change record: its own instance, and the one a move left. */
export const changeVisible = (scopes: Scopes, c: ChangeRow) =>
  inScopes(scopes, c.source_id, c.scope_id) &&
  (c.moved_from_scope_id === null || inScopes(scopes, c.source_id, c.moved_from_scope_id));

// ------------------------------------------------------------------------------------------- JSON

const isObject = (v: Json | undefined): v is { [key: string]: Json } =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** `#>`: the node at a path (objects by key, arrays by index); undefined where there is none. */
export function nodeAt(doc: Json, path: readonly string[]): Json | undefined {
  let node: Json | undefined = doc;
  for (const segment of path) {
    if (isObject(node)) node = Object.hasOwn(node, segment) ? node[segment] : undefined;
    else if (Array.isArray(node) && /^-?\d+$/.test(segment)) {
      const i = Number(segment);
      node = node[i < 0 ? node.length + i : i];
    } else return undefined;
    if (node === undefined) return undefined;
  }
  return node;
}

/** Object keys in jsonb's storage order: shorter first, then bytewise. */
const jsonbKeys = (o: { [key: string]: Json }) =>
  Object.keys(o).sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));

/** jsonb's text output (`::text`): `", "` and `": "` separators, keys in storage order. */
export function jsonbText(v: Json): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return `[${v.map(jsonbText).join(', ')}]`;
  if (isObject(v))
    return `{${jsonbKeys(v)
      .map((k) => `${JSON.stringify(k)}: ${jsonbText(v[k]!)}`)
      .join(', ')}}`;
  return JSON.stringify(v);
}

/** `#>>`: the node as text; a string as itself; null for a JSON null or no node. */
export function textAt(doc: Json, path: readonly string[]): string | null {
  const node = nodeAt(doc, path);
  if (node === undefined || node === null) return null;
  return typeof node === 'string' ? node : jsonbText(node);
}

/** Whether `{path: candidate}` is contained in the document (`@>`), for a scalar candidate. */
export function containsAt(doc: Json, path: readonly string[], candidate: Json): boolean {
  let node: Json | undefined = doc;
  for (const segment of path) {
    if (!isObject(node) || !Object.hasOwn(node, segment)) return false;
    node = node[segment];
  }
  if (path.length === 0) return false;
  return node !== undefined && scalarEqual(node, candidate);
}

function scalarEqual(a: Json, b: Json): boolean {
  if (a === null || b === null) return a === b;
  if (typeof a !== typeof b || typeof a === 'object') return false;
  return a === b;
}

const rank = (v: Json): number =>
  v === null
    ? 0
    : typeof v === 'string'
      ? 1
      : typeof v === 'number'
        ? 2
        : typeof v === 'boolean'
          ? 3
          : Array.isArray(v)
            ? 4
            : 5;

export const codepoints = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** jsonb's ordering (null < strings < numbers < booleans < arrays < objects), for the shapes sorted here. */
export function compareJsonb(a: Json, b: Json): number {
  const byRank = rank(a) - rank(b);
  if (byRank !== 0) return byRank;
  if (typeof a === 'string') return codepoints(a, b as string);
  if (typeof a === 'number') return a - (b as number);
  if (typeof a === 'boolean') return Number(a) - Number(b);
  if (Array.isArray(a)) {
    const other = b as Json[];
    if (a.length !== other.length) return a.length - other.length;
    for (let i = 0; i < a.length; i++) {
      const c = compareJsonb(a[i]!, other[i]!);
      if (c !== 0) return c;
    }
    return 0;
  }
  if (isObject(a)) {
    const other = b as { [key: string]: Json };
    const [ka, kb] = [jsonbKeys(a), jsonbKeys(other)];
    if (ka.length !== kb.length) return ka.length - kb.length;
    for (let i = 0; i < ka.length; i++) {
      const k = codepoints(ka[i]!, kb[i]!);
      if (k !== 0) return k;
      const c = compareJsonb(a[ka[i]!]!, other[kb[i]!]!);
      if (c !== 0) return c;
    }
    return 0;
  }
  return 0;
}
