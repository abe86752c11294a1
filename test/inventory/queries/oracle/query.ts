/**
 * The oracle's own tree of a query, as the generator draws it and the evaluator reads it, and its
 * text. It is written apart from the server's grammar and tree on purpose: the text it renders is
 * what the server parses, so a grammar that read it differently shows as a wrong answer.
 */

export interface GField {
  name: string;
  path: string[];
}

export type GValue =
  | { t: 'word'; text: string }
  | { t: 'quoted'; text: string }
  | { t: 'number'; text: string }
  /** `now`, `now-2h`, an ISO date or moment; `quoted` writes it as a string. */
  | { t: 'time'; text: string; quoted?: boolean }
  /** The ci_id of the estate's n-th CI, or the id of its n-th source: resolved before use. */
  | { t: 'ci'; index: number; quoted: boolean }
  | { t: 'source'; index: number };

export type TextOp = 'contains' | 'icontains' | 'starts' | 'istarts' | 'matches';
export type CompareOp = '=' | '!=' | '<' | '<=' | '>' | '>=';

export type GExpr =
  | { k: 'and' | 'or'; items: GExpr[] }
  | { k: 'not'; e: GExpr }
  | { k: 'any' }
  | { k: 'cmp'; field: GField; op: CompareOp; value: GValue }
  | { k: 'in'; field: GField; values: GValue[]; negated: boolean }
  | { k: 'exists'; field: GField; negated: boolean; form: 'exists' | 'null' }
  | { k: 'text'; field: GField; op: TextOp; value: string; tilde: boolean }
  | { k: 'changed'; field: GField | null; since: GValue | null; until: GValue | null; types: string[] | null }
  | { k: 'created' | 'archived'; since: GValue | null; until: GValue | null };

export interface GHop {
  k: 'hop';
  direction: 'out' | 'in' | 'both';
  types: string[] | null;
  /** Null: one relationship; `exact` renders `n`, otherwise `min..max`. */
  depth: { min: number; max: number; exact: boolean } | null;
}

export type GPipe =
  | { k: 'sort'; keys: { field: GField; desc: boolean; written: boolean }[] }
  | { k: 'limit'; n: number }
  | { k: 'fields'; fields: GField[] }
  | { k: 'count'; by: GField[] }
  | { k: 'agg'; fn: 'min' | 'max' | 'sum' | 'avg'; field: GField; by: GField[] }
  | { k: 'return'; which: 'first' | 'last' }
  | { k: 'with_changes' };

export interface GQuery {
  /** The first match, then hop and match (null: the hop is followed by no match) in turn. */
  path: (GExpr | GHop | null)[];
  pipes: GPipe[];
  /** Hours after the estate's base moment. */
  asOf: number | null;
  compareTo: number | null;
  /** How keywords are written: lower, UPPER or Capitalised. */
  keywordCase: 'lower' | 'upper' | 'capital';
}

export const isHop = (step: GExpr | GHop | null): step is GHop => step !== null && step.k === 'hop';

/** The path's matches in order, a hop's missing match as `*`. */
export const matchesOf = (q: GQuery): GExpr[] =>
  q.path.filter((s, i) => i % 2 === 0).map((s) => (s as GExpr | null) ?? { k: 'any' });

export const hopsOf = (q: GQuery): GHop[] => q.path.filter(isHop);

// ------------------------------------------------------------------------------------------- text

const PLAIN_SEGMENT = /^[A-Za-z0-9_\-$@]+$/;

export const quote = (text: string) => `"${text.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/** As the server names a field in columns and group keys. */
export const fieldName = (f: GField) =>
  [f.name, ...f.path.map((s) => (PLAIN_SEGMENT.test(s) ? s : JSON.stringify(s)))].join('.');

const renderField = (f: GField) => [f.name, ...f.path.map((s) => (PLAIN_SEGMENT.test(s) ? s : quote(s)))].join('.');

/** Values after the references are resolved. */
export type Resolver = { ci(index: number): string; source(index: number): string };

export function renderValue(v: GValue, resolve: Resolver): string {
  switch (v.t) {
    case 'word':
    case 'number':
      return v.text;
    case 'quoted':
      return quote(v.text);
    case 'time':
      return v.quoted ? quote(v.text) : v.text;
    case 'ci':
      return v.quoted ? quote(resolve.ci(v.index)) : resolve.ci(v.index);
    case 'source':
      return resolve.source(v.index);
  }
}

class Writer {
  constructor(
    private readonly q: GQuery,
    private readonly resolve: Resolver,
  ) {}

  kw(word: string): string {
    if (this.q.keywordCase === 'upper') return word.toUpperCase();
    if (this.q.keywordCase === 'capital') return word[0]!.toUpperCase() + word.slice(1);
    return word;
  }

  value = (v: GValue) => renderValue(v, this.resolve);

  window(since: GValue | null, until: GValue | null): string {
    return [
      since ? ` ${this.kw('since')} ${this.value(since)}` : '',
      until ? ` ${this.kw('until')} ${this.value(until)}` : '',
    ].join('');
  }

  expr(e: GExpr, nested = false): string {
    switch (e.k) {
      case 'and':
      case 'or': {
        const text = e.items.map((item) => this.expr(item, true)).join(` ${this.kw(e.k)} `);
        return nested ? `(${text})` : text;
      }
      case 'not':
        return `${this.kw('not')} ${e.e.k === 'and' || e.e.k === 'or' ? this.expr(e.e, true) : this.expr(e.e)}`;
      case 'any':
        return '*';
      case 'cmp':
        return `${renderField(e.field)} ${e.op} ${this.value(e.value)}`;
      case 'in':
        return `${renderField(e.field)} ${e.negated ? `${this.kw('not')} ` : ''}${this.kw('in')} (${e.values.map(this.value).join(', ')})`;
      case 'exists':
        if (e.form === 'null')
          return `${renderField(e.field)} ${this.kw('is')} ${e.negated ? '' : `${this.kw('not')} `}${this.kw('null')}`;
        return `${renderField(e.field)} ${e.negated ? `${this.kw('not')} ` : ''}${this.kw('exists')}`;
      case 'text': {
        if (e.tilde) return `${renderField(e.field)} ~ ${quote(e.value)}`;
        const op = {
          contains: 'contains',
          icontains: 'icontains',
          starts: 'starts with',
          istarts: 'istarts with',
          matches: 'matches',
        }[e.op];
        const text =
          e.op !== 'matches' && /^[A-Za-z][A-Za-z0-9_.:]*$/.test(e.value) && !/^(and|or)$/i.test(e.value)
            ? e.value
            : quote(e.value);
        return `${renderField(e.field)} ${op
          .split(' ')
          .map((w) => this.kw(w))
          .join(' ')} ${text}`;
      }
      case 'changed': {
        const types = e.types
          ? ` ${this.kw('type')} ${e.types.length === 1 ? e.types[0] : `(${e.types.join(', ')})`}`
          : '';
        return `${this.kw('changed')}${e.field ? ` ${renderField(e.field)}` : ''}${this.window(e.since, e.until)}${types}`;
      }
      case 'created':
      case 'archived':
        return `${this.kw(e.k)}${this.window(e.since, e.until)}`;
    }
  }

  hop(h: GHop): string {
    const types = h.types ? h.types.join(', ') : '*';
    const depth = h.depth ? ` ${h.depth.exact ? h.depth.min : `${h.depth.min}..${h.depth.max}`}` : '';
    const inner = `[${types}${depth}]`;
    return h.direction === 'out' ? `-${inner}->` : h.direction === 'in' ? `<-${inner}-` : `<-${inner}->`;
  }

  pipe(p: GPipe): string {
    switch (p.k) {
      case 'sort':
        return `${this.kw('sort')} ${p.keys.map((k) => `${renderField(k.field)}${k.desc ? ` ${this.kw('desc')}` : k.written ? ` ${this.kw('asc')}` : ''}`).join(', ')}`;
      case 'limit':
        return `${this.kw('limit')} ${p.n}`;
      case 'fields':
        return `${this.kw('fields')} ${p.fields.map(renderField).join(', ')}`;
      case 'count':
        return `${this.kw('count')}${p.by.length > 0 ? ` ${this.kw('by')} ${p.by.map(renderField).join(', ')}` : ''}`;
      case 'agg':
        return `${this.kw(p.fn)}(${renderField(p.field)})${p.by.length > 0 ? ` ${this.kw('by')} ${p.by.map(renderField).join(', ')}` : ''}`;
      case 'return':
        return `${this.kw('return')} ${this.kw(p.which)}`;
      case 'with_changes':
        return `${this.kw('with')} ${this.kw('changes')}`;
    }
  }
}

/** The query's text, as a person would type it. */
export function renderQuery(q: GQuery, resolve: Resolver): string {
  const w = new Writer(q, resolve);
  const path = q.path
    .map((step) => (step === null ? null : isHop(step) ? w.hop(step) : w.expr(step)))
    .filter((s): s is string => s !== null)
    .join(' ');
  return [path, ...q.pipes.map((p) => w.pipe(p))].join(' | ');
}

/** The query with its references to the estate's CIs and sources replaced by their ids. */
export function resolveQuery(q: GQuery, resolve: Resolver): GQuery {
  const value = (v: GValue): GValue =>
    v.t === 'ci'
      ? v.quoted
        ? { t: 'quoted', text: resolve.ci(v.index) }
        : { t: 'word', text: resolve.ci(v.index) }
      : v.t === 'source'
        ? { t: 'number', text: resolve.source(v.index) }
        : v;
  const expr = (e: GExpr): GExpr => {
    switch (e.k) {
      case 'and':
      case 'or':
        return { ...e, items: e.items.map(expr) };
      case 'not':
        return { ...e, e: expr(e.e) };
      case 'cmp':
        return { ...e, value: value(e.value) };
      case 'in':
        return { ...e, values: e.values.map(value) };
      default:
        return e;
    }
  };
  return { ...q, path: q.path.map((step) => (step === null || isHop(step) ? step : expr(step))) };
}
