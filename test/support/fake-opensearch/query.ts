/** The query DSL subset: each clause is compiled once into a function from a document to its score. */
import { badRequest, unsupported } from './errors.js';
import { compareScalars, fieldExists, indexedValues, queryScalar, type FieldKind, type SearchDoc } from './fields.js';
import { asArray, isObject, type Json, type Scalar } from './json.js';
import { allowKeys, boostParam, expectObject, objectParams, singleEntry, wildcardRegExp } from './params.js';

/** A compiled query: the score of a matching document, or undefined when it does not match. */
export type Query = (doc: SearchDoc) => number | undefined;

const QUERIES = new Map<string, (body: unknown) => Query>([
  ['match_all', compileMatchAll],
  ['ids', compileIds],
  ['exists', compileExists],
  ['term', compileTerm],
  ['terms', compileTerms],
  ['prefix', compilePrefix],
  ['wildcard', compileWildcard],
  ['range', compileRange],
  ['bool', compileBool],
]);

export function compileQuery(query: unknown): Query {
  const [type, body] = singleEntry(query, 'query');
  const compile = QUERIES.get(type);
  if (!compile) throw unsupported(`query [${type}]`);
  return compile(body);
}

/** The parameters of a clause that takes no field name, its boost apart. */
function clauseParams(body: unknown, clause: string, allowed: readonly string[]): [Json, number] {
  const params = objectParams(body, clause, [...allowed, 'boost']);
  return [params, boostParam(params.boost)];
}

function compileMatchAll(body: unknown): Query {
  const [, boost] = clauseParams(body, 'match_all', []);
  return () => boost;
}

function compileIds(body: unknown): Query {
  const [params, boost] = clauseParams(body, 'ids', ['values']);
  const ids = new Set(asArray(params.values).map(String));
  return (doc) => (ids.has(doc.id) ? boost : undefined);
}

function compileExists(body: unknown): Query {
  const [params, boost] = clauseParams(body, 'exists', ['field']);
  const field = String(params.field);
  return (doc) => (fieldExists(doc, field) ? boost : undefined);
}

/**
 * Leaf queries match when any of the field's values passes the test. The test is built per field
 * kind, because one search may span indices whose mappings type the same field differently.
 */
function leafQuery(field: string, boost: number, testFor: (kind: FieldKind) => (value: Scalar) => boolean): Query {
  const tests = new Map<FieldKind, (value: Scalar) => boolean>();
  return (doc) => {
    const indexed = indexedValues(doc, field);
    if (!indexed) return undefined;
    let test = tests.get(indexed.kind);
    if (!test) tests.set(indexed.kind, (test = testFor(indexed.kind)));
    return indexed.values.some(test) ? boost : undefined;
  };
}

interface FieldParams {
  field: string;
  value: unknown;
  boost: number;
  caseInsensitive: boolean;
}

/** `{ field: value }` or `{ field: { value, boost?, case_insensitive? } }`, the shape shared by term, prefix and wildcard. */
function fieldParams(body: unknown, clause: string, valueKeys: readonly string[] = ['value']): FieldParams {
  const [field, spec] = singleEntry(body, clause);
  if (!isObject(spec)) return { field, value: spec, boost: 1, caseInsensitive: false };
  allowKeys(spec, [...valueKeys, 'boost', 'case_insensitive'], `${clause}.${field}`);
  const value = valueKeys.map((key) => spec[key]).find((candidate) => candidate !== undefined);
  if (value === undefined) throw badRequest('parsing_exception', `[${clause}] query on [${field}] has no value`);
  return { field, value, boost: boostParam(spec.boost), caseInsensitive: spec.case_insensitive === true };
}

function compileTerm(body: unknown): Query {
  const { field, value, boost, caseInsensitive } = fieldParams(body, 'term');
  return leafQuery(field, boost, (kind) => {
    const target = queryScalar(kind, value, field);
    if (!caseInsensitive || typeof target !== 'string') return (candidate) => candidate === target;
    const lower = target.toLowerCase();
    return (candidate) => String(candidate).toLowerCase() === lower;
  });
}

function compileTerms(body: unknown): Query {
  const { boost, ...fields } = expectObject(body, 'terms');
  const [field, values] = singleEntry(fields, 'terms');
  if (!Array.isArray(values)) throw unsupported(`[terms] on [${field}] with a non-array value (terms lookup)`);
  return leafQuery(field, boostParam(boost), (kind) => {
    const targets = new Set(values.map((value) => queryScalar(kind, value, field)));
    return (candidate) => targets.has(candidate);
  });
}

/** Prefix and wildcard queries, which OpenSearch allows on keyword (and text) fields only. */
function patternQuery(body: unknown, clause: string, valueKeys: string[], build: (params: FieldParams) => RegExp) {
  const params = fieldParams(body, clause, valueKeys);
  const pattern = build(params);
  return leafQuery(params.field, params.boost, (kind) => {
    if (kind !== 'keyword') {
      const reason = `Can only use ${clause} queries on keyword and text fields - not on [${params.field}] which is of type [${kind}]`;
      throw badRequest('query_shard_exception', reason);
    }
    return (candidate) => pattern.test(String(candidate));
  });
}

function compilePrefix(body: unknown): Query {
  return patternQuery(body, 'prefix', ['value'], ({ value, caseInsensitive }) =>
    wildcardRegExp(`${String(value).replace(/[*?\\]/g, '\\$&')}*`, caseInsensitive),
  );
}

function compileWildcard(body: unknown): Query {
  return patternQuery(body, 'wildcard', ['value', 'wildcard'], ({ value, caseInsensitive }) =>
    wildcardRegExp(String(value), caseInsensitive),
  );
}

const RANGE_OPERATORS = {
  gt: (order: number) => order > 0,
  gte: (order: number) => order >= 0,
  lt: (order: number) => order < 0,
  lte: (order: number) => order <= 0,
} as const;
type RangeOperator = keyof typeof RANGE_OPERATORS;

function compileRange(body: unknown): Query {
  const [field, spec] = singleEntry(body, 'range');
  const bounds = objectParams(spec, `range.${field}`, [...Object.keys(RANGE_OPERATORS), 'boost']);
  const operators = (Object.keys(RANGE_OPERATORS) as RangeOperator[]).filter((op) => bounds[op] != null);
  return leafQuery(field, boostParam(bounds.boost), (kind) => {
    const checks = operators.map((op) => ({
      accepts: RANGE_OPERATORS[op],
      bound: queryScalar(kind, bounds[op], field),
    }));
    return (candidate) => checks.every(({ accepts, bound }) => accepts(compareScalars(candidate, bound)));
  });
}

/** Optional clauses: one must match when nothing else is required, unless minimum_should_match says how many. */
function minimumShouldMatch(spec: unknown, optional: number, hasRequired: boolean): number {
  if (spec === undefined) return optional > 0 && !hasRequired ? 1 : 0;
  if (!/^\d+$/.test(String(spec))) throw unsupported(`minimum_should_match [${String(spec)}] (percentages, negatives)`);
  return Math.min(Number(spec), optional);
}

function compileBool(body: unknown): Query {
  const [params, boost] = clauseParams(body, 'bool', ['must', 'filter', 'should', 'must_not', 'minimum_should_match']);
  const clauses = (key: string) => asArray(params[key]).map(compileQuery);
  const [must, filter, should, mustNot] = [clauses('must'), clauses('filter'), clauses('should'), clauses('must_not')];
  // An empty bool query is a match_all.
  if (must.length + filter.length + should.length + mustNot.length === 0) return () => boost;
  const required = minimumShouldMatch(params.minimum_should_match, should.length, must.length + filter.length > 0);
  return (doc) => {
    let score = 0;
    for (const query of must) {
      const clauseScore = query(doc);
      if (clauseScore === undefined) return undefined;
      score += clauseScore;
    }
    if (filter.some((query) => query(doc) === undefined)) return undefined;
    if (mustNot.some((query) => query(doc) !== undefined)) return undefined;
    let matched = 0;
    for (const query of should) {
      const clauseScore = query(doc);
      if (clauseScore === undefined) continue;
      matched++;
      score += clauseScore;
    }
    return matched >= required ? score * boost : undefined;
  };
}
