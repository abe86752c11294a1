/**
 * The tree grammar.peggy builds. Every node carries where it was written (`at`), so a check that
 * fails after parsing (an unknown field, a path on a column that has none) points at the text.
 */

export interface At {
  /** 0-based offset of the first character. */
  offset: number;
  /** 1-based line and column of the first character. */
  line: number;
  column: number;
  /** 0-based offset just past the last character. */
  end: number;
}

/** `name`, `ci_type`, `raw_data.spec.replicas`: a column, with a JSON path for raw_data and type_data. */
export interface Field {
  name: string;
  path: string[];
  /** The positions in `path` of `*` segments (every element of an array), when there are any. */
  wildcards?: number[];
  at: At;
}

export type Value =
  | { type: 'string'; text: string; quoted: boolean }
  /** `$namespace`: a named parameter, bound before the query is checked (saved queries). */
  | { type: 'param'; name: string; text: string; at: At }
  | { type: 'number'; value: number; text: string }
  | { type: 'time'; text: string; relative: string | null };

export type TimeValue = Extract<Value, { type: 'time' }>;

export type CompareOp = '=' | '!=' | '<' | '<=' | '>' | '>=';
export type TextOp = 'contains' | 'icontains' | 'starts' | 'istarts' | 'matches';

export type Expr =
  | { kind: 'and'; items: Expr[]; at: At }
  | { kind: 'or'; items: Expr[]; at: At }
  | { kind: 'not'; expr: Expr; at: At }
  | { kind: 'any'; at: At }
  | { kind: 'compare'; field: Field; op: CompareOp; value: Value; at: At }
  | { kind: 'in'; field: Field; values: Value[]; negated: boolean; at: At }
  /** `exists` / `is not null` (negated false) and `not exists` / `is null` (negated true). */
  | { kind: 'exists'; field: Field; negated: boolean; at: At }
  | { kind: 'text'; field: Field; op: TextOp; value: string; at: At }
  | HistoryExpr;

export type HistoryExpr =
  | {
      kind: 'changed';
      field: Field | null;
      since: TimeValue | null;
      until: TimeValue | null;
      changeTypes: string[] | null;
      at: At;
    }
  | { kind: 'created' | 'archived'; since: TimeValue | null; until: TimeValue | null; at: At };

export interface Hop {
  kind: 'hop';
  /** `out` follows relationships from their `from` end to their `to` end (`-[…]->`), `in` back (`<-[…]-`). */
  direction: 'out' | 'in' | 'both';
  /** Null for `*`, any type. */
  types: { name: string; at: At }[] | null;
  min: number;
  max: number;
  at: At;
}

export type Pipe =
  | { kind: 'sort'; keys: { field: Field; desc: boolean }[]; at: At }
  | { kind: 'limit'; n: number; at: At }
  | { kind: 'fields'; fields: Field[]; at: At }
  | { kind: 'aggregate'; fn: 'count' | 'min' | 'max' | 'sum' | 'avg'; field: Field | null; by: Field[]; at: At }
  | { kind: 'return'; which: 'first' | 'last'; at: At }
  | { kind: 'with_changes'; at: At };

/** A match, then hop and match in turn: `[Expr, Hop, Expr, Hop, Expr, …]`. */
export type PathStep = Expr | Hop;

export interface Query {
  kind: 'query';
  path: PathStep[];
  pipes: Pipe[];
  at: At;
}
