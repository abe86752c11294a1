import {
  changeVisible,
  codepoints,
  compareJsonb,
  containsAt,
  dumpAt,
  nodeAt,
  rowVisible,
  textAt,
  type ChangeRow,
  type CiRow,
  type Json,
  type Model,
  type Scopes,
} from './model.js';
import {
  fieldName,
  hopsOf,
  isHop,
  matchesOf,
  type GExpr,
  type GField,
  type GHop,
  type GQuery,
  type GValue,
} from './query.js';
import { at } from './estate.js';

/**
 * An in-memory evaluator of the query language, written from its description (docs/query-language.md)
 * and independent of the server's SQL: it reads the oracle's model of the inventory and answers what
 * the endpoint should.
 */

/** The relationship types the collector types write (docs/history.md): a hop may always name them. */
export const COLLECTOR_RELATIONSHIP_TYPES = [
  'runs_on',
  'mounts',
  'bound_to',
  'routes_to',
  'exposes',
  'member_of',
  'scraped_by',
  'describes',
  'hosted_on',
  'owned_by',
  'installed_in',
  'manages',
];

const TIME_COLUMNS = new Set(['created_at', 'updated_at', 'status_updated_at', 'last_seen']);
const CHANGES_PER_CI = 20;
const GROUPS_LIMIT = 1000;

export type Expected =
  | { kind: 'invalid'; why: string }
  | {
      kind: 'rows';
      ids: string[];
      columns: string[];
      fields: Record<string, unknown>[];
      changes: { id: string; change_type: string; changed_at: string }[][] | undefined;
      more: boolean;
      hidden: number;
    }
  | {
      kind: 'aggregate';
      groups: { key: Record<string, unknown>; count: number; value: number | null }[];
      truncated: boolean;
      hidden: number;
    };

/** The moment a query reads, and who reads it. */
interface Reading {
  model: Model;
  scopes: Scopes;
  /** Relative times count from it: as_of, or now. */
  moment: Date;
  asOf: Date | undefined;
  /** The CIs the reader sees at the moment, as they were then. */
  cis: Map<string, CiRow>;
  /** Relationships at the moment, by CI. */
  out: Map<string, { to: string; type: string }[]>;
  in: Map<string, { to: string; type: string }[]>;
  /** Whether a CI existed at the moment at all (seen or not). */
  existed: Set<string>;
}

function reading(model: Model, scopes: Scopes, now: Date, asOf: Date | undefined): Reading {
  const dump = dumpAt(model, asOf);
  const current = dumpAt(model, undefined);
  const cis = new Map<string, CiRow>();
  for (const [id, row] of dump.cis) {
    if (!rowVisible(scopes, row)) continue;
    if (asOf !== undefined) {
      // a read of the past shows a CI inside the scopes then and now (or when it was removed)
      const nowRow = current.cis.get(id) ?? model.tombstones.get(id);
      if (!nowRow || !rowVisible(scopes, nowRow)) continue;
    }
    cis.set(id, row);
  }
  const out = new Map<string, { to: string; type: string }[]>();
  const into = new Map<string, { to: string; type: string }[]>();
  const add = (m: typeof out, from: string, to: string, type: string) =>
    m.set(from, [...(m.get(from) ?? []), { to, type }]);
  for (const rel of dump.rels) {
    add(out, rel.from_ci_id, rel.to_ci_id, rel.relationship_type);
    add(into, rel.to_ci_id, rel.from_ci_id, rel.relationship_type);
  }
  return { model, scopes, moment: asOf ?? now, asOf, cis, out, in: into, existed: new Set(dump.cis.keys()) };
}

// ------------------------------------------------------------------------------------------ times

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

export function timeOf(text: string, moment: Date): Date {
  const relative = /^now(?:([+-])(\d+)([smhdw]))?$/i.exec(text);
  if (relative) {
    const offset = relative[1]
      ? (relative[1] === '-' ? -1 : 1) * Number(relative[2]) * UNIT_MS[relative[3]!.toLowerCase()]!
      : 0;
    return new Date(moment.getTime() + offset);
  }
  const parsed = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : text);
  if (Number.isNaN(parsed)) throw new Error(`the oracle reads no moment in ${text}`);
  return new Date(parsed);
}

const valueText = (v: GValue): string => {
  if (v.t === 'ci' || v.t === 'source') throw new Error('references are resolved before evaluation');
  return v.text;
};

// ----------------------------------------------------------------------------------- predicates

function jsonEquals(doc: Json, path: string[], v: GValue): boolean {
  const literal = valueText(v);
  // an array index in the path compares the text there
  if (path.some((s) => /^\d+$/.test(s))) return textAt(doc, path) === literal;
  const candidates: Json[] = [literal];
  if (v.t === 'number') candidates.push(Number(literal));
  if (v.t === 'word' && (literal === 'true' || literal === 'false')) candidates.push(literal === 'true');
  if (v.t === 'word' && literal === 'null') candidates.push(null);
  return candidates.some((c) => containsAt(doc, path, c));
}

const ordered = (c: number, op: string) =>
  op === '<'
    ? c < 0
    : op === '<='
      ? c <= 0
      : op === '>'
        ? c > 0
        : op === '>='
          ? c >= 0
          : op === '='
            ? c === 0
            : c !== 0;

function jsonPredicate(r: Reading, row: CiRow, e: GExpr & { field: GField }): boolean {
  const doc = (e.field.name === 'raw_data' ? row.raw_data : row.type_data) as Json;
  const path = e.field.path;
  switch (e.k) {
    case 'cmp': {
      if (e.op === '=') return jsonEquals(doc, path, e.value);
      if (e.op === '!=') return !jsonEquals(doc, path, e.value);
      const literal = valueText(e.value);
      if (e.value.t === 'number') {
        const node = nodeAt(doc, path);
        return typeof node === 'number' && ordered(node - Number(literal), e.op);
      }
      const text = textAt(doc, path);
      return text !== null && ordered(codepoints(text, literal), e.op);
    }
    case 'in': {
      const any = e.values.some((v) => jsonEquals(doc, path, v));
      return e.negated ? !any : any;
    }
    case 'exists': {
      const node = nodeAt(doc, path);
      const present = node !== undefined && node !== null;
      return e.negated ? !present : present;
    }
    case 'text': {
      const text = textAt(doc, path);
      return text !== null && textMatches(text, e.op, e.value);
    }
  }
  void r;
  return false;
}

function textMatches(text: string, op: string, value: string): boolean {
  switch (op) {
    case 'contains':
      return text.includes(value);
    case 'icontains':
      return text.toLowerCase().includes(value.toLowerCase());
    case 'starts':
      return text.startsWith(value);
    case 'istarts':
      return text.toLowerCase().startsWith(value.toLowerCase());
    default:
      return new RegExp(value).test(text);
  }
}

/** A column's value on a row; undefined never (a missing value is null). */
function columnOf(r: Reading, row: CiRow, name: string): string | Date | null {
  if (name === 'last_seen') return r.model.lastSeen.get(row.ci_id) ?? null;
  return (row as unknown as Record<string, string | Date | null>)[name] ?? null;
}

function compareColumn(r: Reading, name: string, a: string | Date, v: GValue): number {
  if (TIME_COLUMNS.has(name)) return (a as Date).getTime() - timeOf(valueText(v), r.moment).getTime();
  if (name === 'source_id') {
    const [x, y] = [BigInt(a as string), BigInt(valueText(v))];
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (name === 'ci_id') return codepoints(a as string, valueText(v).toLowerCase());
  return codepoints(a as string, valueText(v));
}

function columnPredicate(r: Reading, row: CiRow, e: GExpr & { field: GField }): boolean {
  const name = e.field.name;
  const value = columnOf(r, row, name);
  switch (e.k) {
    case 'cmp':
      if (e.op === '!=') return value === null || compareColumn(r, name, value, e.value) !== 0;
      return value !== null && ordered(compareColumn(r, name, value, e.value), e.op);
    case 'in': {
      const any = value !== null && e.values.some((v) => compareColumn(r, name, value, v) === 0);
      return e.negated ? !any : any;
    }
    case 'exists':
      return e.negated ? value === null : value !== null;
    case 'text':
      return value !== null && textMatches(String(value), e.op, e.value);
  }
  return false;
}

function inWindow(r: Reading, e: { since: GValue | null; until: GValue | null }, t: Date): boolean {
  if (e.since && t.getTime() < timeOf(valueText(e.since), r.moment).getTime()) return false;
  if (e.until && t.getTime() >= timeOf(valueText(e.until), r.moment).getTime()) return false;
  return r.asOf === undefined || t.getTime() <= r.asOf.getTime();
}

/** `changed FIELD`: the field, something under it, or a field above it. */
function namesField(fields: readonly string[], field: GField): boolean {
  const parts = [field.name, ...field.path];
  const above = parts.map((_, i) => parts.slice(0, i + 1).join('.'));
  const path = parts.join('.');
  return fields.some((f) => above.includes(f) || f.startsWith(`${path}.`));
}

/** Whether a change record is one a history predicate names. */
function recordMatches(r: Reading, e: GExpr, c: ChangeRow): boolean {
  if (e.k === 'archived') return c.change_type === 'DELETED' && inWindow(r, e, c.changed_at);
  if (e.k !== 'changed') return false;
  if (!inWindow(r, e, c.changed_at)) return false;
  if (e.types && !e.types.includes(c.change_type)) return false;
  return e.field === null || namesField(c.changed_fields, e.field);
}

function recordsOf(r: Reading, ciId: string): ChangeRow[] {
  return r.model.changes.filter((c) => c.ci_id === ciId && changeVisible(r.scopes, c));
}

function holds(r: Reading, row: CiRow, e: GExpr): boolean {
  switch (e.k) {
    case 'and':
      return e.items.every((item) => holds(r, row, item));
    case 'or':
      return e.items.some((item) => holds(r, row, item));
    case 'not':
      return !holds(r, row, e.e);
    case 'any':
      return true;
    case 'created':
      return inWindow(r, e, row.created_at);
    case 'archived':
      return recordsOf(r, row.ci_id).some((c) => recordMatches(r, e, c));
    case 'changed':
      return recordsOf(r, row.ci_id).some((c) => c.changes.length > 0 && recordMatches(r, e, c));
    default:
      return e.field.name === 'raw_data' || e.field.name === 'type_data'
        ? jsonPredicate(r, row, e)
        : columnPredicate(r, row, e);
  }
}

function namesStatus(e: GExpr): boolean {
  switch (e.k) {
    case 'and':
    case 'or':
      return e.items.some(namesStatus);
    case 'not':
      return namesStatus(e.e);
    case 'archived':
      return true;
    case 'cmp':
    case 'in':
    case 'exists':
    case 'text':
      return e.field.name === 'status';
    default:
      return false;
  }
}

/** A match: the active inventory unless it names the status itself. */
const matches = (r: Reading, row: CiRow, e: GExpr) => (namesStatus(e) || row.status === 'active') && holds(r, row, e);

// ------------------------------------------------------------------------------------------ paths

function neighbours(r: Reading, id: string, hop: GHop): string[] {
  const typed = (edges: { to: string; type: string }[] | undefined) =>
    (edges ?? []).filter((e) => hop.types === null || hop.types.includes(e.type)).map((e) => e.to);
  if (hop.direction === 'out') return typed(r.out.get(id));
  if (hop.direction === 'in') return typed(r.in.get(id));
  return [...typed(r.out.get(id)), ...typed(r.in.get(id))];
}

/** The path's (start, end) pairs, and the CIs its walks reached outside what the reader sees. */
function walkPath(r: Reading, q: GQuery): { pairs: [string, string][]; hidden: Set<string> } {
  const [first, ...rest] = matchesOf(q);
  let pairs: [string, string][] = [...r.cis.values()]
    .filter((row) => matches(r, row, first!))
    .map((row) => [row.ci_id, row.ci_id]);
  const hidden = new Set<string>();
  hopsOf(q).forEach((hop, i) => {
    const { min, max } = hop.depth ?? { min: 1, max: 1 };
    const key = (p: [string, string]) => `${p[0]} ${p[1]}`;
    let frontier = new Map(pairs.map((p) => [key(p), p]));
    const reached = new Map<string, [string, string]>();
    for (let depth = 0; depth <= max; depth++) {
      if (depth >= min) for (const [k, p] of frontier) reached.set(k, p);
      if (depth === max) break;
      const next = new Map<string, [string, string]>();
      for (const [origin, id] of frontier.values()) {
        for (const far of neighbours(r, id, hop)) {
          if (r.cis.has(far)) next.set(`${origin} ${far}`, [origin, far]);
          else if (r.existed.has(far)) hidden.add(far);
        }
      }
      frontier = next;
    }
    const match = rest[i]!;
    pairs = [...reached.values()].filter(([, id]) => matches(r, r.cis.get(id)!, match));
  });
  return { pairs, hidden };
}

function answerIds(r: Reading, q: GQuery): { ids: Set<string>; hidden: number } {
  const { pairs, hidden } = walkPath(r, q);
  const first = q.pipes.some((p) => p.k === 'return' && p.which === 'first');
  return { ids: new Set(pairs.map(([origin, id]) => (first ? origin : id))), hidden: hidden.size };
}

// ---------------------------------------------------------------------------------------- answers

/** A field's value in an answer row, as the JSON answer shows it. */
function shownValue(r: Reading, row: CiRow, f: GField): unknown {
  if (f.name === 'raw_data' || f.name === 'type_data') {
    const doc = (f.name === 'raw_data' ? row.raw_data : row.type_data) as Json;
    return f.path.length === 0 ? doc : (nodeAt(doc, f.path) ?? null);
  }
  const value = columnOf(r, row, f.name);
  return value instanceof Date ? value.toISOString() : value;
}

type SortValue =
  { kind: 'json'; v: Json } | { kind: 'time'; v: number } | { kind: 'big'; v: bigint } | { kind: 'text'; v: string };

function sortValue(r: Reading, row: CiRow, f: GField): SortValue {
  if (f.name === 'raw_data' || f.name === 'type_data') {
    const doc = (f.name === 'raw_data' ? row.raw_data : row.type_data) as Json;
    return { kind: 'json', v: nodeAt(doc, f.path) ?? null };
  }
  const value = columnOf(r, row, f.name);
  if (TIME_COLUMNS.has(f.name)) return { kind: 'time', v: value === null ? -Infinity : (value as Date).getTime() };
  if (f.name === 'source_id') return { kind: 'big', v: value === null ? -1n : BigInt(value as string) };
  return { kind: 'text', v: (value as string | null) ?? '' };
}

function compareSort(a: SortValue, b: SortValue): number {
  if (a.kind === 'json') return compareJsonb(a.v, (b as typeof a).v);
  // -Infinity (no value) minus itself is NaN: compare, do not subtract
  if (a.kind === 'time') return a.v < (b as typeof a).v ? -1 : a.v > (b as typeof a).v ? 1 : 0;
  if (a.kind === 'big') return a.v < (b as typeof a).v ? -1 : a.v > (b as typeof a).v ? 1 : 0;
  return codepoints(a.v, (b as typeof a).v);
}

const DEFAULT_COLUMNS = ['ci_id', 'name', 'ci_type', 'namespace', 'status', 'source_id', 'scope_id', 'updated_at'];

/** The CIs of the answer as rows, sorted (ties by ci_id), with what a page shows. */
function rowsAnswer(r: Reading, q: GQuery, ids: Set<string>, hidden: number): Expected {
  const sort = (q.pipes.find((p) => p.k === 'sort') as Extract<(typeof q.pipes)[number], { k: 'sort' }> | undefined)
    ?.keys ?? [{ field: { name: 'name', path: [] }, desc: false }];
  const rows = [...ids].map((id) => r.cis.get(id)).filter((row): row is CiRow => row !== undefined);
  const keyed = rows.map((row) => ({ row, keys: sort.map((k) => sortValue(r, row, k.field)) }));
  keyed.sort((a, b) => {
    for (const [i, k] of sort.entries()) {
      const c = compareSort(a.keys[i]!, b.keys[i]!);
      if (c !== 0) return k.desc ? -c : c;
    }
    return codepoints(a.row.ci_id, b.row.ci_id);
  });
  const limit = (q.pipes.find((p) => p.k === 'limit') as { n: number } | undefined)?.n ?? 100;
  const page = keyed.slice(0, limit).map((k) => k.row);
  const columns =
    (q.pipes.find((p) => p.k === 'fields') as { fields: GField[] } | undefined)?.fields ??
    DEFAULT_COLUMNS.map((name) => ({ name, path: [] }));
  const withChanges = q.pipes.some((p) => p.k === 'with_changes');
  const last = matchesOf(q).at(-1)!;
  return {
    kind: 'rows',
    ids: page.map((row) => row.ci_id),
    columns: columns.map(fieldName),
    fields: page.map((row) => Object.fromEntries(columns.map((f) => [fieldName(f), shownValue(r, row, f)]))),
    changes: withChanges ? page.map((row) => changesBeside(r, row.ci_id, historyOf(last))) : undefined,
    more: keyed.length > limit,
    hidden,
  };
}

/** The history predicates of a match that hold positively: what `with changes` shows. */
function historyOf(e: GExpr): GExpr[] {
  if (e.k === 'and' || e.k === 'or') return e.items.flatMap(historyOf);
  return e.k === 'changed' || e.k === 'archived' ? [e] : [];
}

function changesBeside(r: Reading, ciId: string, history: GExpr[]) {
  return recordsOf(r, ciId)
    .filter((c) => c.changes.length > 0)
    .filter((c) => r.asOf === undefined || c.changed_at.getTime() <= r.asOf.getTime())
    .filter((c) => history.length === 0 || history.some((h) => recordMatches(r, h, c)))
    .sort((a, b) => b.changed_at.getTime() - a.changed_at.getTime() || (b.id > a.id ? 1 : b.id < a.id ? -1 : 0))
    .slice(0, CHANGES_PER_CI)
    .map((c) => ({ id: String(c.id), change_type: c.change_type, changed_at: c.changed_at.toISOString() }));
}

type GroupKey = string | Date | null;

function groupValue(r: Reading, row: CiRow, f: GField): GroupKey {
  if (f.name === 'raw_data' || f.name === 'type_data')
    return textAt((f.name === 'raw_data' ? row.raw_data : row.type_data) as Json, f.path);
  return columnOf(r, row, f.name);
}

function compareGroupKey(f: GField, a: GroupKey, b: GroupKey): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? -1 : 1;
  if (a instanceof Date) return a.getTime() - (b as Date).getTime();
  if (f.name === 'source_id') return Number(BigInt(a) - BigInt(b as string));
  return codepoints(a, b as string);
}

function numberOf(row: CiRow, f: GField): number | null {
  if (f.name === 'source_id') return Number(row.source_id);
  const node = nodeAt((f.name === 'raw_data' ? row.raw_data : row.type_data) as Json, f.path);
  return typeof node === 'number' ? node : null;
}

function measure(fn: string, values: number[]): number | null {
  if (values.length === 0) return null;
  if (fn === 'min') return Math.min(...values);
  if (fn === 'max') return Math.max(...values);
  const sum = values.reduce((a, b) => a + b, 0);
  return fn === 'sum' ? sum : sum / values.length;
}

function aggregateAnswer(r: Reading, q: GQuery, ids: Set<string>, hidden: number): Expected {
  const pipe = q.pipes.find((p) => p.k === 'count' || p.k === 'agg') as Extract<
    (typeof q.pipes)[number],
    { k: 'count' | 'agg' }
  >;
  const rows = [...ids].map((id) => r.cis.get(id)).filter((row): row is CiRow => row !== undefined);
  const groups = new Map<string, { keys: GroupKey[]; rows: CiRow[] }>();
  for (const row of rows) {
    const keys = pipe.by.map((f) => groupValue(r, row, f));
    const name = JSON.stringify(keys);
    groups.set(name, { keys, rows: [...(groups.get(name)?.rows ?? []), row] });
  }
  if (pipe.by.length === 0 && groups.size === 0) groups.set('[]', { keys: [], rows: [] });
  const field = pipe.k === 'agg' ? pipe.field : null;
  const out = [...groups.values()].map((g) => ({
    keys: g.keys,
    count: g.rows.length,
    value:
      pipe.k === 'agg'
        ? measure(
            pipe.fn,
            g.rows.map((row) => numberOf(row, field!)).filter((v): v is number => v !== null),
          )
        : null,
  }));
  out.sort((a, b) => {
    if (field) {
      if (a.value !== b.value) {
        if (a.value === null) return 1;
        if (b.value === null) return -1;
        if (Math.abs(a.value - b.value) > 1e-9 * Math.max(1, Math.abs(a.value))) return b.value - a.value;
      }
    }
    if (a.count !== b.count) return b.count - a.count;
    for (const [i, f] of pipe.by.entries()) {
      const c = compareGroupKey(f, a.keys[i]!, b.keys[i]!);
      if (c !== 0) return c;
    }
    return 0;
  });
  return {
    kind: 'aggregate',
    groups: out.slice(0, GROUPS_LIMIT).map((g) => ({
      key: Object.fromEntries(
        pipe.by.map((f, i) => [
          fieldName(f),
          g.keys[i] instanceof Date ? (g.keys[i] as Date).toISOString() : g.keys[i],
        ]),
      ),
      count: g.count,
      value: g.value,
    })),
    truncated: out.length > GROUPS_LIMIT,
    hidden,
  };
}

// ------------------------------------------------------------------------------------ the checks

/** What the server refuses as INVALID_QUERY that the generator may draw; undefined when valid. */
function invalidity(q: GQuery, model: Model, now: Date): string | undefined {
  const known = new Set([...COLLECTOR_RELATIONSHIP_TYPES, ...model.relationshipTypes]);
  for (const hop of hopsOf(q))
    for (const type of hop.types ?? []) if (!known.has(type)) return `unknown relationship type ${type}`;
  const atMoment = q.asOf !== null || q.compareTo !== null;
  let problem: string | undefined;
  const moment = q.asOf !== null ? at(q.asOf) : now;
  const visitField = (f: GField | null) => {
    if (f?.name === 'last_seen' && atMoment) problem ??= 'last_seen at a moment';
  };
  const visit = (e: GExpr): void => {
    if (e.k === 'and' || e.k === 'or') e.items.forEach(visit);
    else if (e.k === 'not') visit(e.e);
    else if (e.k === 'changed' || e.k === 'created' || e.k === 'archived') {
      if (e.k === 'changed') visitField(e.field);
      if (e.since && e.until && timeOf(valueText(e.since), moment) > timeOf(valueText(e.until), moment))
        problem ??= 'a window that ends before it starts';
    } else if (e.k !== 'any') visitField((e as { field: GField }).field);
  };
  matchesOf(q).forEach(visit);
  for (const p of q.pipes) {
    if (p.k === 'sort') p.keys.forEach((k) => visitField(k.field));
    if (p.k === 'fields') p.fields.forEach(visitField);
    if (p.k === 'count' || p.k === 'agg') p.by.forEach(visitField);
  }
  return problem;
}

/** The answer the endpoint owes a reader with these scopes (null: all data), the clock at `now`. */
export function evaluate(model: Model, q: GQuery, scopes: Scopes, now: Date): Expected {
  const why = invalidity(q, model, now);
  if (why) return { kind: 'invalid', why };
  const asOf = q.asOf === null ? undefined : at(q.asOf);
  const r = reading(model, scopes, now, asOf);
  const { ids, hidden } = answerIds(r, q);
  if (q.compareTo !== null) {
    const then = reading(model, scopes, now, at(q.compareTo));
    for (const id of answerIds(then, q).ids) ids.delete(id);
  }
  const aggregate = q.pipes.some((p) => p.k === 'count' || p.k === 'agg');
  return aggregate ? aggregateAnswer(r, q, ids, hidden) : rowsAnswer(r, q, ids, hidden);
}

export { isHop };
