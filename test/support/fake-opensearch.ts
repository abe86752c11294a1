/**
 * A fake OpenSearch HTTP server for tests.
 *
 * No OpenSearch can run on the machines these tests run on, so the project's OpenSearch code is
 * tested against this double. It speaks the real REST wire protocol (paths, JSON envelopes, NDJSON
 * bulk bodies, status codes, error bodies) for the subset of the API the project uses, so that the
 * real `@opensearch-project/opensearch` client works against it unchanged. Anything outside that
 * subset is answered with a 400 `parsing_exception`, so that unsupported use fails loudly instead of
 * silently returning a wrong answer.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;
type Scalar = string | number | boolean;

export interface RecordedRequest {
  method: string;
  /** Decoded path, without the query string. */
  path: string;
  query: Record<string, string>;
  /** Parsed JSON, the parsed NDJSON lines of a _bulk body, the raw text if it did not parse, or undefined. */
  body: unknown;
}

export interface StoredDocument {
  source: Record<string, unknown>;
  routing?: string;
  version: number;
}

export type RequestFailure = { kind: 'reset' } | { kind: 'status'; status: number; type?: string };
export interface ItemFailure {
  status: number;
  type: string;
  reason?: string;
}

export interface FakeOpenSearch {
  url: string;
  requests: RecordedRequest[];
  indices(): string[];
  documents(index: string): Map<string, StoredDocument>;
  aliases(): Record<string, string[]>;
  /** Failure injection: the next `times` requests whose path matches `path` (RegExp, default any) fail as given. */
  failNext(failure: RequestFailure, options?: { times?: number; path?: RegExp }): void;
  /** Items of later _bulk requests whose _id is in `ids` fail with this status/type, `times` times each (default: always). */
  failItems(ids: Iterable<string>, failure: ItemFailure, options?: { times?: number }): void;
  clearFailures(): void;
  reset(): void;
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Errors and small helpers
// ---------------------------------------------------------------------------------------------

/** An error answered in OpenSearch's `{"error": {...}, "status": N}` envelope. */
class OpenSearchError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    readonly reason: string,
    readonly details: Json = {},
    /** For a search phase failure: the shard-level error it wraps, reported as root cause. */
    readonly inner?: OpenSearchError,
  ) {
    super(reason);
  }

  /** The `error` object alone, as in bulk item failures and `caused_by`. */
  describe(): Json {
    return { type: this.type, reason: this.reason, ...this.details };
  }

  toBody(): Json {
    const rootCause = this.inner ? this.inner.describe() : this.describe();
    const causedBy = this.inner ? { caused_by: rootCause } : {};
    return { error: { root_cause: [rootCause], ...this.describe(), ...causedBy }, status: this.status };
  }
}

const badRequest = (type: string, reason: string, details?: Json) => new OpenSearchError(400, type, reason, details);

/** Refuses anything outside the subset the fake implements, so tests never pass on a silently wrong answer. */
const unsupported = (what: string) =>
  badRequest('parsing_exception', `${what} is not supported by the fake OpenSearch server`);

const validationFailed = (problem: string) =>
  badRequest('action_request_validation_exception', `Validation Failed: 1: ${problem};`);

const indexNotFound = (name: string) =>
  new OpenSearchError(404, 'index_not_found_exception', `no such index [${name}]`, {
    index: name,
    'resource.id': name,
    'resource.type': 'index_or_alias',
    index_uuid: '_na_',
  });

/** Errors raised on a shard while searching reach the client wrapped in a search phase failure. */
function searchPhaseFailure(cause: OpenSearchError, index: string): OpenSearchError {
  const failedShards = [{ shard: 0, index, node: 'fake-node', reason: cause.describe() }];
  const details = { phase: 'query', grouped: true, failed_shards: failedShards };
  return new OpenSearchError(cause.status, 'search_phase_execution_exception', 'all shards failed', details, cause);
}

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isScalar = (value: unknown): value is Scalar => ['string', 'number', 'boolean'].includes(typeof value);

const asArray = (value: unknown): unknown[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

function expectObject(value: unknown, what: string): Json {
  if (!isObject(value)) throw badRequest('parsing_exception', `[${what}] must be an object`);
  return value;
}

function allowKeys(object: Json, allowed: readonly string[], what: string): void {
  const unknown = Object.keys(object).find((key) => !allowed.includes(key));
  if (unknown !== undefined) throw unsupported(`[${unknown}] in [${what}]`);
}

/** Query, aggregation and action clauses are objects with exactly one key naming the clause or field. */
function singleEntry(value: unknown, what: string): [string, unknown] {
  const entries = isObject(value) ? Object.entries(value) : [];
  const [entry] = entries;
  if (entries.length !== 1 || !entry) throw badRequest('parsing_exception', `[${what}] must hold exactly one entry`);
  return entry;
}

function intParam(value: unknown, fallback: number, what: string): number {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 0)
    throw badRequest('parsing_exception', `[${what}] must be a non-negative integer`);
  return number;
}

function boostParam(value: unknown): number {
  const boost = value === undefined ? 1 : Number(value);
  if (!Number.isFinite(boost)) throw badRequest('parsing_exception', '[boost] must be a number');
  return boost;
}

/** Wildcard patterns (`*`, `?`, `\` escapes) as used by wildcard queries, index patterns and `_source` filters. */
function wildcardRegExp(pattern: string, caseInsensitive = false): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern.charAt(i);
    if (char === '*') source += '.*';
    else if (char === '?') source += '.';
    else {
      const literal = char === '\\' && i + 1 < pattern.length ? pattern.charAt(++i) : char;
      source += literal.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    }
  }
  return new RegExp(`^${source}$`, caseInsensitive ? 'is' : 's');
}

const isPattern = (expression: string) => expression === '_all' || expression.includes('*');
const patternRegExp = (expression: string) => wildcardRegExp(expression === '_all' ? '*' : expression);

function deepMerge(base: Json, override: Json): Json {
  const merged: Json = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const current = merged[key];
    merged[key] = isObject(value) && isObject(current) ? deepMerge(current, value) : value;
  }
  return merged;
}

/** OpenSearch reports index settings as strings below `index`, whatever form they were given in. */
function normalizeSettings(settings: unknown): Json {
  const normalized: Json = {};
  const walk = (object: Json, prefix: string): void => {
    for (const [key, value] of Object.entries(object)) {
      const path = `${prefix}${key}`.replace(/^index\./, '');
      if (isObject(value)) walk(value, `${path}.`);
      else normalized[path] = String(value);
    }
  };
  walk(isObject(settings) ? settings : {}, '');
  const nested: Json = {};
  for (const [path, value] of Object.entries(normalized)) {
    const keys = path.split('.');
    const last = keys.pop() ?? path;
    let node = nested;
    for (const key of keys) node = isObject(node[key]) ? node[key] : (node[key] = {});
    node[last] = value;
  }
  return nested;
}

const generateId = () => randomBytes(15).toString('base64url');

// ---------------------------------------------------------------------------------------------
// Mappings: field types, document values and index-time validation
// ---------------------------------------------------------------------------------------------

type FieldKind = 'keyword' | 'number' | 'date' | 'boolean';

const NUMERIC_TYPES = new Set([
  'long',
  'integer',
  'short',
  'byte',
  'double',
  'float',
  'half_float',
  'scaled_float',
  'unsigned_long',
]);

/** The kinds of mapped types the fake can search; other types may be declared but not queried. */
function kindOfType(type: unknown): FieldKind | undefined {
  if (type === 'keyword' || type === 'constant_keyword') return 'keyword';
  if (type === 'date' || type === 'boolean') return type;
  return NUMERIC_TYPES.has(String(type)) ? 'number' : undefined;
}

/** How a dotted field path is indexed; `dynamic` fields are not in the mapping but would have been added to it. */
type FieldMapping = { kind: FieldKind | 'dynamic' | 'object' | 'unsearchable' };

const isObjectMapping = (definition: Json) =>
  definition.properties !== undefined || definition.type === undefined || definition.type === 'object';

/** The type of a field's mapping as OpenSearch names it: objects are `object` whether or not they say so. */
const mappedType = (definition: Json): string => String(definition.type ?? 'object');

/** Why `added` cannot be merged into the properties `held` (a field whose type would change), or undefined. */
function mappingConflict(held: Json, added: Json, prefix: string): string | undefined {
  for (const [name, mapping] of Object.entries(added)) {
    const before = held[name];
    if (!isObject(before) || !isObject(mapping)) continue;
    const field = `${prefix}${name}`;
    if (mappedType(before) !== mappedType(mapping))
      return `mapper [${field}] cannot be changed from type [${mappedType(before)}] to [${mappedType(mapping)}]`;
    if (isObject(before.properties) && isObject(mapping.properties)) {
      const inner = mappingConflict(before.properties, mapping.properties, `${field}.`);
      if (inner) return inner;
    }
  }
  return undefined;
}

function fieldMapping(mappings: Json, field: string): FieldMapping {
  let node = mappings;
  let dynamic = String(mappings.dynamic ?? true);
  const segments = field.split('.');
  for (const [position, segment] of segments.entries()) {
    const definition = isObject(node.properties) ? node.properties[segment] : undefined;
    if (!isObject(definition)) return { kind: dynamic === 'false' ? 'unsearchable' : 'dynamic' };
    // Objects mapped with `enabled: false` are kept in _source but not indexed at all.
    if (definition.enabled === false) return { kind: 'unsearchable' };
    const last = position === segments.length - 1;
    if (!isObjectMapping(definition)) {
      if (!last) throw unsupported(`field [${field}] below a [${String(definition.type)}] field (multi-fields)`);
      const kind = kindOfType(definition.type);
      if (!kind) throw unsupported(`searching field [${field}] of type [${String(definition.type)}]`);
      return { kind };
    }
    if (last) return { kind: 'object' };
    node = definition;
    dynamic = definition.dynamic === undefined ? dynamic : String(definition.dynamic);
  }
  return { kind: 'object' };
}

/** Values at a dotted path of `_source`, arrays flattened; dotted keys inside the source are honoured too. */
function sourceValues(value: unknown, segments: string[]): unknown[] {
  if (Array.isArray(value)) return value.flatMap((item) => sourceValues(item, segments));
  if (segments.length === 0) return value === null || value === undefined ? [] : [value];
  if (!isObject(value)) return [];
  const values: unknown[] = [];
  for (let take = 1; take <= segments.length; take++) {
    const key = segments.slice(0, take).join('.');
    if (key in value) values.push(...sourceValues(value[key], segments.slice(take)));
  }
  return values;
}

const ISO_DATE =
  /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2})(?::(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?)?)?$/;

/** Dates are ISO 8601 (no zone means UTC, as in OpenSearch) or epoch milliseconds, as in `strict_date_optional_time||epoch_millis`. */
function parseInstant(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? Math.trunc(value) : undefined;
  if (typeof value !== 'string') return undefined;
  const match = ISO_DATE.exec(value);
  if (!match) return /^-?\d+$/.test(value) ? Number(value) : undefined;
  const [, year, month = '1', day = '1', hour = '0', minute = '0', second = '0', fraction = '0', zone = 'Z'] = match;
  const millis = Number(fraction.padEnd(3, '0').slice(0, 3));
  const utc = Date.UTC(
    Number(year),
    Number(month) - 1,
    Number(day),
    Number(hour),
    Number(minute),
    Number(second),
    millis,
  );
  return utc - zoneOffsetMillis(zone);
}

function zoneOffsetMillis(zone: string): number {
  if (zone === 'Z') return 0;
  const digits = zone.slice(1).replace(':', '');
  const minutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || 0);
  return (zone.startsWith('-') ? -1 : 1) * minutes * 60_000;
}

/** The comparable form of a value for a field kind, or undefined when the field could not hold it. */
function toScalar(kind: FieldKind, value: unknown): Scalar | undefined {
  switch (kind) {
    case 'keyword':
      return isScalar(value) ? String(value) : undefined;
    case 'number': {
      const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
      return typeof number === 'number' && Number.isFinite(number) ? number : undefined;
    }
    case 'date':
      return parseInstant(value);
    case 'boolean':
      return value === true || value === 'true' ? true : value === false || value === 'false' ? false : undefined;
  }
}

function queryScalar(kind: FieldKind, value: unknown, field: string): Scalar {
  const scalar = toScalar(kind, value);
  if (scalar === undefined) {
    throw badRequest('parse_exception', `failed to parse [${JSON.stringify(value)}] for ${kind} field [${field}]`);
  }
  return scalar;
}

function compareScalars(a: Scalar, b: Scalar): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  const [left, right] = [String(a), String(b)];
  return left < right ? -1 : left > right ? 1 : 0;
}

/** A document as seen by queries and aggregations: its source plus the mapping of its index. */
interface SearchDoc {
  index: string;
  id: string;
  source: Json;
  routing?: string;
  mappings: Json;
}

interface IndexedValues {
  kind: FieldKind;
  values: Scalar[];
}

/** Unmapped fields are typed from their values, as dynamic mapping would have typed them. */
const dynamicKind = (sample: unknown): FieldKind =>
  typeof sample === 'number' ? 'number' : typeof sample === 'boolean' ? 'boolean' : 'keyword';

/** The indexed values of a field in one document, or undefined if the field is not searchable. */
function indexedValues(doc: SearchDoc, field: string): IndexedValues | undefined {
  const { kind } = fieldMapping(doc.mappings, field);
  if (kind === 'unsearchable' || kind === 'object') return undefined;
  const raw = sourceValues(doc.source, field.split('.')).filter((value) => !isObject(value));
  const resolved = kind === 'dynamic' ? dynamicKind(raw[0]) : kind;
  const values = raw.map((value) => toScalar(resolved, value)).filter((value) => value !== undefined);
  return { kind: resolved, values };
}

const hasValue = (value: unknown): boolean =>
  Array.isArray(value) ? value.some(hasValue) : isObject(value) ? Object.values(value).some(hasValue) : value != null;

const mapperParsing = (reason: string) => badRequest('mapper_parsing_exception', reason);

/**
 * Checks a document at index time as OpenSearch's document parser would: strict objects reject
 * undeclared fields, typed leaves reject values they cannot hold.
 */
function validateDocument(source: Json, mappings: Json): void {
  validateFields(source, mappings, String(mappings.dynamic ?? true), '');
}

function validateFields(object: Json, node: Json, dynamic: string, path: string): void {
  for (const [key, value] of Object.entries(object)) validateField(key.split('.'), value, node, dynamic, path);
}

function validateField(segments: string[], value: unknown, parent: Json, dynamic: string, parentPath: string): void {
  const [name = '', ...rest] = segments;
  const path = parentPath ? `${parentPath}.${name}` : name;
  const definition = isObject(parent.properties) ? parent.properties[name] : undefined;
  if (!isObject(definition)) {
    if (dynamic !== 'strict') return;
    throw badRequest(
      'strict_dynamic_mapping_exception',
      `mapping set to strict, dynamic introduction of [${name}] within [${parentPath || '_doc'}] is not allowed`,
    );
  }
  if (definition.enabled === false) return;
  const items = [value].flat(Infinity).filter((item) => item !== null);
  if (isObjectMapping(definition)) {
    const childDynamic = definition.dynamic === undefined ? dynamic : String(definition.dynamic);
    if (rest.length > 0) return validateField(rest, value, definition, childDynamic, path);
    for (const item of items) {
      if (!isObject(item))
        throw mapperParsing(
          `object mapping for [${path}] tried to parse field [${path}] as object, but found a concrete value`,
        );
      validateFields(item, definition, childDynamic, path);
    }
    return;
  }
  const type = String(definition.type);
  if (rest.length > 0) {
    throw mapperParsing(
      `Could not dynamically add mapping for field [${path}.${rest.join('.')}]. Existing mapping for [${path}] must be of type object but found [${type}].`,
    );
  }
  const kind = kindOfType(type);
  const rejected = items.find((item) => (kind ? toScalar(kind, item) === undefined : isObject(item)));
  if (rejected !== undefined) {
    throw mapperParsing(
      `failed to parse field [${path}] of type [${type}]. Preview of field's value: '${JSON.stringify(rejected)}'`,
    );
  }
}

const routingRequired = (mappings: Json) => isObject(mappings._routing) && mappings._routing.required === true;

// ---------------------------------------------------------------------------------------------
// Query DSL
// ---------------------------------------------------------------------------------------------

/** A compiled query: the score of a matching document, or undefined when it does not match. */
type Query = (doc: SearchDoc) => number | undefined;

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

function compileQuery(query: unknown): Query {
  const [type, body] = singleEntry(query, 'query');
  const compile = QUERIES.get(type);
  if (!compile) throw unsupported(`query [${type}]`);
  return compile(body);
}

function compileMatchAll(body: unknown): Query {
  const params = expectObject(body, 'match_all');
  allowKeys(params, ['boost'], 'match_all');
  const boost = boostParam(params.boost);
  return () => boost;
}

function compileIds(body: unknown): Query {
  const params = expectObject(body, 'ids');
  allowKeys(params, ['values', 'boost'], 'ids');
  const ids = new Set(asArray(params.values).map(String));
  const boost = boostParam(params.boost);
  return (doc) => (ids.has(doc.id) ? boost : undefined);
}

function compileExists(body: unknown): Query {
  const params = expectObject(body, 'exists');
  allowKeys(params, ['field', 'boost'], 'exists');
  const field = String(params.field);
  const boost = boostParam(params.boost);
  return (doc) => {
    if (fieldMapping(doc.mappings, field).kind === 'unsearchable') return undefined;
    return sourceValues(doc.source, field.split('.')).some(hasValue) ? boost : undefined;
  };
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
    if (caseInsensitive && typeof target === 'string') {
      const lower = target.toLowerCase();
      return (candidate) => String(candidate).toLowerCase() === lower;
    }
    return (candidate) => candidate === target;
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

function keywordOnly(clause: string, field: string, kind: FieldKind): void {
  if (kind === 'keyword') return;
  const reason = `Can only use ${clause} queries on keyword and text fields - not on [${field}] which is of type [${kind}]`;
  throw badRequest('query_shard_exception', reason);
}

function compilePrefix(body: unknown): Query {
  const { field, value, boost, caseInsensitive } = fieldParams(body, 'prefix');
  const fold = (text: string) => (caseInsensitive ? text.toLowerCase() : text);
  const prefix = fold(String(value));
  return leafQuery(field, boost, (kind) => {
    keywordOnly('prefix', field, kind);
    return (candidate) => fold(String(candidate)).startsWith(prefix);
  });
}

function compileWildcard(body: unknown): Query {
  const { field, value, boost, caseInsensitive } = fieldParams(body, 'wildcard', ['value', 'wildcard']);
  const pattern = wildcardRegExp(String(value), caseInsensitive);
  return leafQuery(field, boost, (kind) => {
    keywordOnly('wildcard', field, kind);
    return (candidate) => pattern.test(String(candidate));
  });
}

const RANGE_OPERATORS = {
  gt: (order: number) => order > 0,
  gte: (order: number) => order >= 0,
  lt: (order: number) => order < 0,
  lte: (order: number) => order <= 0,
} as const;

function compileRange(body: unknown): Query {
  const [field, spec] = singleEntry(body, 'range');
  const bounds = expectObject(spec, `range.${field}`);
  allowKeys(bounds, [...Object.keys(RANGE_OPERATORS), 'boost'], `range.${field}`);
  const operators = (Object.keys(RANGE_OPERATORS) as (keyof typeof RANGE_OPERATORS)[]).filter(
    (op) => bounds[op] != null,
  );
  return leafQuery(field, boostParam(bounds.boost), (kind) => {
    const checks = operators.map((op) => ({
      accepts: RANGE_OPERATORS[op],
      bound: queryScalar(kind, bounds[op], field),
    }));
    return (candidate) => checks.every(({ accepts, bound }) => accepts(compareScalars(candidate, bound)));
  });
}

/** OpenSearch's rule: integers or percentages of the optional clauses, negative meaning "all but", clamped to the clause count. */
function minimumShouldMatch(spec: unknown, optional: number, hasRequired: boolean): number {
  if (spec === undefined) return optional > 0 && !hasRequired ? 1 : 0;
  const match = /^(-?)(\d+)(%?)$/.exec(String(spec).trim());
  if (!match) throw unsupported(`minimum_should_match [${String(spec)}]`);
  const [, negative, digits, percent] = match;
  const count = percent ? Math.floor((optional * Number(digits)) / 100) : Number(digits);
  const required = negative ? optional - count : count;
  return Math.min(Math.max(required, 0), optional);
}

function compileBool(body: unknown): Query {
  const params = expectObject(body, 'bool');
  allowKeys(params, ['must', 'filter', 'should', 'must_not', 'minimum_should_match', 'boost'], 'bool');
  const clauses = (key: string) => asArray(params[key]).map(compileQuery);
  const [must, filter, should, mustNot] = [clauses('must'), clauses('filter'), clauses('should'), clauses('must_not')];
  const boost = boostParam(params.boost);
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

// ---------------------------------------------------------------------------------------------
// Sorting and _source filtering
// ---------------------------------------------------------------------------------------------

interface SortKey {
  field: string;
  descending: boolean;
  missingFirst: boolean;
}

function parseSort(spec: unknown): SortKey[] | undefined {
  if (spec === undefined) return undefined;
  return asArray(spec).map((entry) => {
    if (typeof entry === 'string') return sortKey(entry, {});
    const [field, options] = singleEntry(entry, 'sort');
    return sortKey(field, typeof options === 'string' ? { order: options } : expectObject(options, `sort.${field}`));
  });
}

function sortKey(field: string, options: Json): SortKey {
  allowKeys(options, ['order', 'missing', 'unmapped_type'], `sort.${field}`);
  if (field.startsWith('_') && field !== '_score') throw unsupported(`sorting on [${field}]`);
  const order = options.order ?? (field === '_score' ? 'desc' : 'asc');
  const missing = options.missing ?? '_last';
  if (order !== 'asc' && order !== 'desc')
    throw badRequest('parsing_exception', `unknown sort order [${String(order)}]`);
  if (missing !== '_last' && missing !== '_first') throw unsupported(`sort [missing] value [${String(missing)}]`);
  return { field, descending: order === 'desc', missingFirst: missing === '_first' };
}

interface Hit {
  doc: SearchDoc;
  score: number;
}

/** Multi-valued fields sort by their smallest value ascending and their largest descending, like OpenSearch's default sort mode. */
function sortValue(hit: Hit, key: SortKey): Scalar | undefined {
  if (key.field === '_score') return hit.score;
  const values = [...(indexedValues(hit.doc, key.field)?.values ?? [])].sort(compareScalars);
  return key.descending ? values.at(-1) : values[0];
}

function compareSortValues(a: (Scalar | undefined)[], b: (Scalar | undefined)[], keys: SortKey[]): number {
  for (const [position, key] of keys.entries()) {
    const [left, right] = [a[position], b[position]];
    if (left === undefined || right === undefined) {
      if (left === right) continue;
      // Missing values go last (or first) whatever the direction.
      return (left === undefined) === key.missingFirst ? -1 : 1;
    }
    const order = compareScalars(left, right) * (key.descending ? -1 : 1);
    if (order !== 0) return order;
  }
  return 0;
}

/** Applies `_source` filtering: true/false, include patterns, or `{ includes, excludes }`. */
function compileSourceFilter(spec: unknown): (source: Json) => Json | undefined {
  if (spec === undefined || spec === true) return (source) => source;
  if (spec === false) return () => undefined;
  const filter = typeof spec === 'string' || Array.isArray(spec) ? { includes: spec } : expectObject(spec, '_source');
  allowKeys(filter, ['includes', 'excludes'], '_source');
  const includes = asArray(filter.includes).map((pattern) => wildcardRegExp(String(pattern)));
  const excludes = asArray(filter.excludes).map((pattern) => wildcardRegExp(String(pattern)));
  return (source) => pickFields(source, '', includes, excludes);
}

function pickFields(object: Json, prefix: string, includes: RegExp[], excludes: RegExp[]): Json {
  const picked: Json = {};
  for (const [key, value] of Object.entries(object)) {
    const path = prefix + key;
    if (excludes.some((pattern) => pattern.test(path))) continue;
    const included = includes.length === 0 || includes.some((pattern) => pattern.test(path));
    if (isObject(value)) {
      // Below an included object everything is included; otherwise a deeper pattern may still match.
      const inner = pickFields(value, `${path}.`, included ? [] : includes, excludes);
      if (included || Object.keys(inner).length > 0) picked[key] = inner;
    } else if (included) picked[key] = value;
  }
  return picked;
}

// ---------------------------------------------------------------------------------------------
// Aggregations
// ---------------------------------------------------------------------------------------------

/** A parsed aggregation: computes its response section from the documents of its bucket. */
type Aggregation = (docs: SearchDoc[]) => Json;
type AggregationBuilder = (params: unknown, subAggregations: Map<string, Aggregation>) => Aggregation;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const WEEK = 7 * DAY;
/** 1970-01-01 was a Thursday; OpenSearch's calendar weeks start on Monday, three days earlier. */
const MONDAY_OFFSET = -3 * DAY;
const INTERVALS = new Map([
  ['hour', HOUR],
  ['1h', HOUR],
  ['day', DAY],
  ['1d', DAY],
  ['week', WEEK],
  ['1w', WEEK],
]);
const UTC_ZONES = ['UTC', 'Z', '+00:00', 'Etc/UTC', 'GMT'];

const AGGREGATIONS = new Map<string, { bucketing: boolean; build: AggregationBuilder }>([
  ['terms', { bucketing: true, build: termsAggregation }],
  ['date_histogram', { bucketing: true, build: dateHistogramAggregation }],
  ['composite', { bucketing: true, build: compositeAggregation }],
  ['filter', { bucketing: true, build: filterAggregation }],
  ['cardinality', { bucketing: false, build: cardinalityAggregation }],
  ['value_count', { bucketing: false, build: valueCountAggregation }],
]);

function parseAggregations(spec: unknown): Map<string, Aggregation> {
  const aggregations = new Map<string, Aggregation>();
  for (const [name, definition] of Object.entries(spec === undefined ? {} : expectObject(spec, 'aggregations'))) {
    aggregations.set(name, parseAggregation(name, definition));
  }
  return aggregations;
}

function parseAggregation(name: string, definition: unknown): Aggregation {
  const { aggs, aggregations, ...rest } = expectObject(definition, `aggregation [${name}]`);
  if (aggs !== undefined && aggregations !== undefined) {
    throw badRequest('parsing_exception', `Found two sub aggregation definitions under [${name}]`);
  }
  const subAggregations = parseAggregations(aggs ?? aggregations);
  const [type, params] = singleEntry(rest, `aggregation [${name}]`);
  const kind = AGGREGATIONS.get(type);
  if (!kind) throw unsupported(`aggregation type [${type}]`);
  if (!kind.bucketing && subAggregations.size > 0) {
    throw badRequest(
      'aggregation_initialization_exception',
      `Aggregator [${name}] of type [${type}] cannot accept sub-aggregations`,
    );
  }
  return kind.build(params, subAggregations);
}

function runAggregations(aggregations: Map<string, Aggregation>, docs: SearchDoc[]): Json {
  return Object.fromEntries([...aggregations].map(([name, aggregation]) => [name, aggregation(docs)]));
}

function bucket(keyFields: Json, docs: SearchDoc[], subAggregations: Map<string, Aggregation>): Json {
  return { ...keyFields, doc_count: docs.length, ...runAggregations(subAggregations, docs) };
}

function aggregationParams(params: unknown, type: string, allowed: readonly string[]): Json {
  const object = expectObject(params, type);
  allowKeys(object, allowed, type);
  return object;
}

function fieldParam(params: Json, aggregation: string): string {
  if (typeof params.field !== 'string') throw badRequest('parsing_exception', `[${aggregation}] requires a [field]`);
  return params.field;
}

function addToGroup<Key>(groups: Map<Key, SearchDoc[]>, key: Key, doc: SearchDoc): void {
  const members = groups.get(key);
  if (members) members.push(doc);
  else groups.set(key, [doc]);
}

/** Groups documents by each distinct value of a field; a document with several values joins several groups, once each. */
function groupByValue(docs: SearchDoc[], field: string): { kind?: FieldKind; groups: Map<Scalar, SearchDoc[]> } {
  const groups = new Map<Scalar, SearchDoc[]>();
  let kind: FieldKind | undefined;
  for (const doc of docs) {
    const indexed = indexedValues(doc, field);
    kind ??= indexed?.kind;
    for (const value of new Set(indexed?.values)) addToGroup(groups, value, doc);
  }
  return { kind, groups };
}

/** Bucket keys as OpenSearch prints them: dates as epoch millis plus ISO text, booleans as 1/0 plus text. */
function termsKey(kind: FieldKind | undefined, key: Scalar): Json {
  if (kind === 'date' && typeof key === 'number') return { key, key_as_string: new Date(key).toISOString() };
  if (typeof key === 'boolean') return { key: key ? 1 : 0, key_as_string: String(key) };
  return { key };
}

type Group = [Scalar, SearchDoc[]];

function termsOrder(spec: unknown): (a: Group, b: Group) => number {
  const criteria = [...asArray(spec ?? { _count: 'desc' }), { _key: 'asc' }];
  const comparators = criteria.map((criterion) => {
    const [by, direction] = singleEntry(criterion, 'terms.order');
    if (direction !== 'asc' && direction !== 'desc')
      throw badRequest('parsing_exception', `unknown terms order direction [${String(direction)}]`);
    const sign = direction === 'asc' ? 1 : -1;
    if (by === '_count') return (a: Group, b: Group) => sign * (a[1].length - b[1].length);
    if (by === '_key') return (a: Group, b: Group) => sign * compareScalars(a[0], b[0]);
    throw unsupported(`terms order by [${by}]`);
  });
  return (a, b) => comparators.reduce((order, compare) => order || compare(a, b), 0);
}

function termsAggregation(body: unknown, subAggregations: Map<string, Aggregation>): Aggregation {
  const params = aggregationParams(body, 'terms', ['field', 'size', 'order']);
  const field = fieldParam(params, 'terms');
  const size = intParam(params.size, 10, 'terms.size');
  const order = termsOrder(params.order);
  return (docs) => {
    const { kind, groups } = groupByValue(docs, field);
    const ordered = [...groups].sort(order);
    return {
      doc_count_error_upper_bound: 0,
      sum_other_doc_count: ordered.slice(size).reduce((total, [, members]) => total + members.length, 0),
      buckets: ordered.slice(0, size).map(([key, members]) => bucket(termsKey(kind, key), members, subAggregations)),
    };
  };
}

function cardinalityAggregation(body: unknown): Aggregation {
  const params = aggregationParams(body, 'cardinality', ['field', 'precision_threshold']);
  const field = fieldParam(params, 'cardinality');
  return (docs) => ({ value: groupByValue(docs, field).groups.size });
}

function valueCountAggregation(body: unknown): Aggregation {
  const params = aggregationParams(body, 'value_count', ['field']);
  const field = fieldParam(params, 'value_count');
  return (docs) => ({
    value: docs.reduce((count, doc) => {
      const indexed = indexedValues(doc, field);
      // Keyword doc values are a set per document; numeric ones keep duplicates.
      return count + (indexed?.kind === 'keyword' ? new Set(indexed.values).size : (indexed?.values.length ?? 0));
    }, 0),
  });
}

function dateHistogramAggregation(body: unknown, subAggregations: Map<string, Aggregation>): Aggregation {
  const params = aggregationParams(body, 'date_histogram', [
    'field',
    'calendar_interval',
    'min_doc_count',
    'time_zone',
  ]);
  const field = fieldParam(params, 'date_histogram');
  const step = INTERVALS.get(String(params.calendar_interval));
  if (!step) throw unsupported(`date_histogram calendar_interval [${String(params.calendar_interval)}]`);
  if (params.time_zone !== undefined && !UTC_ZONES.includes(String(params.time_zone))) {
    throw unsupported(`date_histogram time_zone [${String(params.time_zone)}]`);
  }
  const minDocCount = intParam(params.min_doc_count, 0, 'date_histogram.min_doc_count');
  const offset = step === WEEK ? MONDAY_OFFSET : 0;
  const floor = (instant: number) => Math.floor((instant - offset) / step) * step + offset;
  return (docs) => {
    const groups = new Map<number, SearchDoc[]>();
    for (const doc of docs) {
      const indexed = indexedValues(doc, field);
      if (indexed && indexed.kind !== 'date' && indexed.kind !== 'number') {
        const reason = `Field [${field}] of type [${indexed.kind}] is not supported for aggregation [date_histogram]`;
        throw badRequest('illegal_argument_exception', reason);
      }
      for (const key of new Set(indexed?.values.map((value) => floor(Number(value))))) addToGroup(groups, key, doc);
    }
    const keys = [...groups.keys()].sort((a, b) => a - b);
    const first = keys[0];
    const last = keys.at(-1);
    // With min_doc_count 0 OpenSearch fills the empty buckets between the first and last non-empty ones.
    if (minDocCount === 0 && first !== undefined && last !== undefined) {
      keys.length = 0;
      for (let key = first; key <= last; key += step) keys.push(key);
    }
    const buckets = keys
      .map((key): [number, SearchDoc[]] => [key, groups.get(key) ?? []])
      .filter(([, members]) => members.length >= minDocCount)
      .map(([key, members]) => bucket({ key_as_string: new Date(key).toISOString(), key }, members, subAggregations));
    return { buckets };
  };
}

interface CompositeSource {
  name: string;
  field: string;
  descending: boolean;
}

function compositeSources(spec: unknown): CompositeSource[] {
  if (!Array.isArray(spec) || spec.length === 0)
    throw badRequest('parsing_exception', '[composite] requires a non-empty [sources] array');
  return spec.map((source) => {
    const [name, definition] = singleEntry(source, 'composite.sources');
    const [type, params] = singleEntry(definition, `composite source [${name}]`);
    if (type !== 'terms') throw unsupported(`composite source type [${type}]`);
    const terms = aggregationParams(params, `composite source [${name}]`, ['field', 'order']);
    if (terms.order !== undefined && terms.order !== 'asc' && terms.order !== 'desc') {
      throw badRequest('parsing_exception', `unknown order [${String(terms.order)}]`);
    }
    return { name, field: fieldParam(terms, 'composite terms'), descending: terms.order === 'desc' };
  });
}

/** Every combination of one value per source: a document with multi-valued fields joins several buckets. */
function combinations(valueSets: Scalar[][]): Scalar[][] {
  return valueSets.reduce<Scalar[][]>(
    (partial, values) => partial.flatMap((prefix) => values.map((value) => [...prefix, value])),
    [[]],
  );
}

function compositeAggregation(body: unknown, subAggregations: Map<string, Aggregation>): Aggregation {
  const params = aggregationParams(body, 'composite', ['size', 'sources', 'after']);
  const size = intParam(params.size, 10, 'composite.size');
  const sources = compositeSources(params.sources);
  const after = params.after === undefined ? undefined : expectObject(params.after, 'composite.after');
  const afterKey =
    after &&
    sources.map(({ name }) => {
      const value = after[name];
      if (!isScalar(value)) throw badRequest('illegal_argument_exception', `[after] has no value for source [${name}]`);
      return value;
    });
  const compare = (a: Scalar[], b: Scalar[]) =>
    sources.reduce(
      (order, source, position) =>
        order || compareScalars(a[position] ?? '', b[position] ?? '') * (source.descending ? -1 : 1),
      0,
    );
  return (docs) => {
    const groups = new Map<string, { key: Scalar[]; docs: SearchDoc[] }>();
    for (const doc of docs) {
      const valueSets = sources.map(({ field }) => [...new Set(indexedValues(doc, field)?.values)]);
      for (const key of combinations(valueSets)) {
        const id = JSON.stringify(key);
        const group = groups.get(id) ?? { key, docs: [] };
        group.docs.push(doc);
        groups.set(id, group);
      }
    }
    const page = [...groups.values()]
      .sort((a, b) => compare(a.key, b.key))
      .filter((group) => !afterKey || compare(group.key, afterKey) > 0)
      .slice(0, size);
    const keyObject = (key: Scalar[]) => Object.fromEntries(sources.map(({ name }, position) => [name, key[position]]));
    const buckets = page.map((group) => bucket({ key: keyObject(group.key) }, group.docs, subAggregations));
    const lastGroup = page.at(-1);
    return lastGroup ? { after_key: keyObject(lastGroup.key), buckets } : { buckets };
  };
}

/** The body of a filter aggregation is a query. */
function filterAggregation(body: unknown, subAggregations: Map<string, Aggregation>): Aggregation {
  const query = compileQuery(body);
  return (docs) =>
    bucket(
      {},
      docs.filter((doc) => query(doc) !== undefined),
      subAggregations,
    );
}

// ---------------------------------------------------------------------------------------------
// Cluster state and the REST operations on it
// ---------------------------------------------------------------------------------------------

interface StoredDoc extends StoredDocument {
  seqNo: number;
}

interface IndexState {
  name: string;
  uuid: string;
  mappings: Json;
  /** Normalized settings, shown below `settings.index`. */
  settings: Json;
  aliases: Set<string>;
  docs: Map<string, StoredDoc>;
  nextSeqNo: number;
}

interface Reply {
  status: number;
  body?: unknown;
}

const ok = (body?: unknown): Reply => ({ status: 200, body });
const acknowledged = (): Reply => ok({ acknowledged: true });
const shards = (count: number) => ({ total: count, successful: count, skipped: 0, failed: 0 });
const errorReply = (error: OpenSearchError): Reply => ({ status: error.status, body: error.toBody() });

interface BulkOperation {
  action: 'index' | 'create' | 'delete';
  index: string;
  id?: string;
  routing?: string;
  source?: unknown;
}

const INVALID_INDEX_CHARACTERS = /[\\/*?"<>| ,#:]/;

function validateIndexName(name: string, exception = 'invalid_index_name_exception'): void {
  const invalid = (why: string) =>
    badRequest(exception, `Invalid index name [${name}], ${why}`, { index: name, index_uuid: '_na_' });
  if (name !== name.toLowerCase()) throw invalid('must be lowercase');
  if (/^[-_+]/.test(name)) throw invalid("must not start with '_', '-', or '+'");
  if (INVALID_INDEX_CHARACTERS.test(name))
    throw invalid('must not contain the following characters [ , ", *, \\, <, |, ,, >, /, ?, #, :]');
  if (name === '.' || name === '..') throw invalid("must not be '.' or '..'");
}

const aliasesBody = (aliases: Iterable<string>) => Object.fromEntries([...aliases].map((alias) => [alias, {}]));

const aliasTargets = (indices: Map<string, IndexState>, alias: string) =>
  [...indices.values()].filter((index) => index.aliases.has(alias));

/** Concrete indices named by exact names or wildcards; aliases are refused, as in destructive operations. */
function concreteIndices(indices: Map<string, IndexState>, expressions: string[]): IndexState[] {
  return expressions.flatMap((expression) => {
    if (isPattern(expression))
      return [...indices.values()].filter((index) => patternRegExp(expression).test(index.name));
    const index = indices.get(expression);
    if (index) return [index];
    if (aliasTargets(indices, expression).length > 0) {
      const reason = `The provided expression [${expression}] matches an alias, specify the corresponding concrete indices instead.`;
      throw badRequest('illegal_argument_exception', reason);
    }
    throw indexNotFound(expression);
  });
}

/** `index`/`indices` and `alias`/`aliases` parameters of alias actions: one name or a list. */
function nameList(params: Json, single: string, plural: string): string[] {
  const names = params[single] !== undefined ? [params[single]] : asArray(params[plural]);
  if (names.length === 0) throw validationFailed(`One of [${single}] or [${plural}] is required`);
  return names.map(String);
}

function parseBulk(lines: unknown, pathIndex: string | undefined): BulkOperation[] {
  if (!Array.isArray(lines) || lines.length === 0) throw validationFailed('no requests added');
  const operations: BulkOperation[] = [];
  for (let line = 0; line < lines.length; line++) {
    const [action, meta] = singleEntry(lines[line], `bulk action/metadata line ${line + 1}`);
    if (action === 'update') throw unsupported('bulk action [update]');
    if (action !== 'index' && action !== 'create' && action !== 'delete') {
      const reason = `Malformed action/metadata line [${line + 1}], expected one of [create, delete, index, update] but found [${action}]`;
      throw badRequest('illegal_argument_exception', reason);
    }
    const params = expectObject(meta, action);
    allowKeys(params, ['_index', '_id', 'routing'], `bulk ${action}`);
    const index = params._index ?? pathIndex;
    if (index === undefined) throw validationFailed('index is missing');
    if (action === 'delete' && params._id === undefined) throw validationFailed('id is missing');
    // Every action but delete is followed by its document line.
    const sourceLine = action === 'delete' ? undefined : ++line;
    if (sourceLine !== undefined && sourceLine >= lines.length) {
      throw badRequest(
        'illegal_argument_exception',
        `The bulk [${action}] action on the last line has no document line`,
      );
    }
    operations.push({
      action,
      index: String(index),
      ...(params._id !== undefined && { id: String(params._id) }),
      ...(params.routing !== undefined && { routing: String(params.routing) }),
      ...(sourceLine !== undefined && { source: lines[sourceLine] }),
    });
  }
  return operations;
}

function parseTrackTotalHits(value: unknown): boolean | number {
  if (value === undefined) return 10_000;
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  return intParam(value, 10_000, 'track_total_hits');
}

function totalHits(count: number, track: boolean | number): Json | undefined {
  if (track === false) return undefined;
  if (track !== true && count > track) return { value: track, relation: 'gte' };
  return { value: count, relation: 'eq' };
}

interface SearchRequest {
  query: Query;
  from: number;
  size: number;
  sort?: SortKey[];
  trackTotalHits: boolean | number;
  source: (source: Json) => Json | undefined;
  aggregations: Map<string, Aggregation>;
}

/** Validates the whole request before touching documents, so unsupported clauses fail even on empty indices. */
function parseSearchRequest(body: unknown, params: Record<string, string>): SearchRequest {
  const request = body === undefined ? {} : expectObject(body, 'search request');
  // `timeout` is accepted and never reached: the fake answers every search in full (timed_out: false)
  allowKeys(
    request,
    ['query', 'from', 'size', 'sort', 'track_total_hits', '_source', 'aggs', 'aggregations', 'timeout'],
    'search request',
  );
  if (params.q !== undefined) throw unsupported('the [q] URL parameter');
  if (request.aggs !== undefined && request.aggregations !== undefined)
    throw badRequest('parsing_exception', 'Found two aggregation definitions');
  return {
    query: compileQuery(request.query ?? { match_all: {} }),
    // URL parameters override the body, as in OpenSearch.
    from: intParam(params.from ?? request.from, 0, 'from'),
    size: intParam(params.size ?? request.size, 10, 'size'),
    sort: parseSort(request.sort),
    trackTotalHits: parseTrackTotalHits(params.track_total_hits ?? request.track_total_hits),
    source: compileSourceFilter(request._source),
    aggregations: parseAggregations(request.aggs ?? request.aggregations),
  };
}

class Cluster {
  indices = new Map<string, IndexState>();
  readonly templates = new Map<string, Json>();
  readonly itemFailures = new Map<string, { failure: ItemFailure; remaining: number }>();

  info(): Reply {
    return ok({
      name: 'fake-node',
      cluster_name: 'fake',
      cluster_uuid: 'fake-cluster-uuid',
      version: {
        distribution: 'opensearch',
        number: '2.19.0',
        build_type: 'fake',
        lucene_version: '9.12.1',
        minimum_wire_compatibility_version: '7.10.0',
        minimum_index_compatibility_version: '7.0.0',
      },
      tagline: 'The OpenSearch Project: https://opensearch.org/',
    });
  }

  health(): Reply {
    const shardCount = this.indices.size;
    return ok({
      cluster_name: 'fake',
      status: 'green',
      timed_out: false,
      number_of_nodes: 1,
      number_of_data_nodes: 1,
      discovered_master: true,
      discovered_cluster_manager: true,
      active_primary_shards: shardCount,
      active_shards: shardCount,
      relocating_shards: 0,
      initializing_shards: 0,
      unassigned_shards: 0,
      delayed_unassigned_shards: 0,
      number_of_pending_tasks: 0,
      number_of_in_flight_fetch: 0,
      task_max_waiting_in_queue_millis: 0,
      active_shards_percent_as_number: 100,
    });
  }

  putTemplate(name: string, body: unknown): Reply {
    const template = expectObject(body, 'index template');
    allowKeys(template, ['index_patterns', 'priority', 'template', '_meta', 'version'], 'index template');
    const patterns = asArray(template.index_patterns).map(String);
    if (patterns.length === 0) throw validationFailed('index patterns are missing');
    const inner = template.template === undefined ? {} : expectObject(template.template, 'index template [template]');
    allowKeys(inner, ['settings', 'mappings', 'aliases'], 'index template [template]');
    const settings = inner.settings === undefined ? {} : { settings: { index: normalizeSettings(inner.settings) } };
    this.templates.set(
      name,
      structuredClone({ ...template, index_patterns: patterns, template: { ...inner, ...settings }, composed_of: [] }),
    );
    return acknowledged();
  }

  getTemplates(expression: string): Reply {
    const patterns = expression.split(',').map(patternRegExp);
    const found = [...this.templates].filter(([name]) => patterns.some((pattern) => pattern.test(name)));
    if (found.length === 0 && !isPattern(expression)) {
      return errorReply(
        new OpenSearchError(404, 'resource_not_found_exception', `index template matching [${expression}] not found`),
      );
    }
    return ok({ index_templates: found.map(([name, indexTemplate]) => ({ name, index_template: indexTemplate })) });
  }

  /** Composable templates: only the highest-priority template matching the name applies. */
  private matchingTemplate(indexName: string): Json {
    let best: Json | undefined;
    for (const template of this.templates.values()) {
      const matches = asArray(template.index_patterns).some((pattern) =>
        wildcardRegExp(String(pattern)).test(indexName),
      );
      if (matches && (!best || Number(template.priority ?? 0) > Number(best.priority ?? 0))) best = template;
    }
    return isObject(best?.template) ? best.template : {};
  }

  createIndex(name: string, body: unknown): Reply {
    this.addIndex(name, body === undefined ? {} : expectObject(body, 'create index request'));
    return ok({ acknowledged: true, shards_acknowledged: true, index: name });
  }

  /** Creates an index from the request merged over the matching template, as explicit creation and auto-creation both do. */
  private addIndex(name: string, request: Json): IndexState {
    validateIndexName(name);
    const existing = this.indices.get(name);
    if (existing) {
      const details = { index: name, index_uuid: existing.uuid };
      throw badRequest('resource_already_exists_exception', `index [${name}/${existing.uuid}] already exists`, details);
    }
    if (aliasTargets(this.indices, name).length > 0) {
      throw badRequest('invalid_index_name_exception', `Invalid index name [${name}], already exists as alias`, {
        index: name,
      });
    }
    allowKeys(request, ['settings', 'mappings', 'aliases'], 'create index request');
    const template = this.matchingTemplate(name);
    const section = (source: Json, key: string): Json => (isObject(source[key]) ? source[key] : {});
    const aliases = [...Object.keys(section(template, 'aliases')), ...Object.keys(section(request, 'aliases'))];
    for (const alias of aliases) this.validateAliasName(this.indices, alias);
    const uuid = randomBytes(16).toString('base64url');
    const settings = deepMerge(normalizeSettings(template.settings), normalizeSettings(request.settings));
    const index: IndexState = {
      name,
      uuid,
      mappings: structuredClone(deepMerge(section(template, 'mappings'), section(request, 'mappings'))),
      settings: {
        number_of_shards: '1',
        number_of_replicas: '1',
        ...settings,
        uuid,
        provided_name: name,
        creation_date: String(Date.now()),
      },
      aliases: new Set(aliases),
      docs: new Map(),
      nextSeqNo: 0,
    };
    this.indices.set(name, index);
    return index;
  }

  private validateAliasName(indices: Map<string, IndexState>, alias: string): void {
    validateIndexName(alias, 'invalid_alias_name_exception');
    if (indices.has(alias)) {
      const reason = `Invalid alias name [${alias}]: an index or data stream exists with the same name as the alias`;
      throw badRequest('invalid_alias_name_exception', reason);
    }
  }

  /** Indices named by names, aliases or wildcards, for reads; a missing exact name is an error. */
  resolveIndices(expression = '_all'): IndexState[] {
    const resolved = new Set<IndexState>();
    for (const part of expression.split(',').filter(Boolean)) {
      if (isPattern(part)) {
        const pattern = patternRegExp(part);
        for (const index of this.indices.values()) {
          if (pattern.test(index.name) || [...index.aliases].some((alias) => pattern.test(alias))) resolved.add(index);
        }
        continue;
      }
      const index = this.indices.get(part);
      const targets = index ? [index] : aliasTargets(this.indices, part);
      if (targets.length === 0) throw indexNotFound(part);
      targets.forEach((target) => resolved.add(target));
    }
    return [...resolved];
  }

  indexExists(expression: string): Reply {
    try {
      this.resolveIndices(expression);
      return ok();
    } catch {
      return { status: 404 };
    }
  }

  getIndex(expression: string): Reply {
    const described = this.resolveIndices(expression).map((index) => [
      index.name,
      { aliases: aliasesBody(index.aliases), mappings: index.mappings, settings: { index: index.settings } },
    ]);
    return ok(Object.fromEntries(described));
  }

  /**
   * PUT /{index}/_mapping: adds properties to the mappings of existing indices, merged into object
   * fields at any depth. As in OpenSearch, a field mapped already keeps its type (an object field
   * is of type `object` whether or not it says so): a change is a 400 illegal_argument_exception,
   * and no index is changed.
   */
  putMapping(expression: string, body: unknown): Reply {
    const properties = isObject(body) && isObject(body.properties) ? body.properties : undefined;
    if (!properties) throw validationFailed('mapping source is empty');
    const indices = this.resolveIndices(expression);
    for (const index of indices) {
      const conflict = mappingConflict(
        isObject(index.mappings.properties) ? index.mappings.properties : {},
        properties,
        '',
      );
      if (conflict) throw badRequest('illegal_argument_exception', conflict);
    }
    for (const index of indices) {
      index.mappings.properties = deepMerge(
        isObject(index.mappings.properties) ? index.mappings.properties : {},
        structuredClone(properties),
      );
    }
    return acknowledged();
  }

  /** GET /{index}/_mapping: each index's mappings under its name. */
  getMapping(expression: string): Reply {
    return ok(
      Object.fromEntries(this.resolveIndices(expression).map((index) => [index.name, { mappings: index.mappings }])),
    );
  }

  deleteIndex(expression: string): Reply {
    for (const index of concreteIndices(this.indices, expression.split(','))) this.indices.delete(index.name);
    return acknowledged();
  }

  refresh(expression?: string): Reply {
    const count = this.resolveIndices(expression).length;
    return ok({ _shards: { total: count, successful: count, failed: 0 } });
  }

  /** Alias actions are applied to a draft of the index table, which replaces the real one only if every action succeeded. */
  updateAliases(body: unknown): Reply {
    const request = expectObject(body, 'aliases request');
    allowKeys(request, ['actions'], 'aliases request');
    if (!Array.isArray(request.actions) || request.actions.length === 0) throw validationFailed('no actions specified');
    const draft = new Map(
      [...this.indices].map(([name, index]) => [name, { ...index, aliases: new Set(index.aliases) }]),
    );
    for (const action of request.actions) this.applyAliasAction(draft, action);
    this.indices = draft;
    return acknowledged();
  }

  private applyAliasAction(draft: Map<string, IndexState>, action: unknown): void {
    const [type, body] = singleEntry(action, 'alias action');
    const params = expectObject(body, type);
    if (type === 'remove_index') {
      allowKeys(params, ['index', 'indices'], type);
      for (const index of concreteIndices(draft, nameList(params, 'index', 'indices'))) draft.delete(index.name);
      return;
    }
    if (type !== 'add' && type !== 'remove') throw unsupported(`alias action [${type}]`);
    allowKeys(params, ['index', 'indices', 'alias', 'aliases'], type);
    const targets = concreteIndices(draft, nameList(params, 'index', 'indices'));
    const aliases = nameList(params, 'alias', 'aliases');
    if (type === 'add') {
      for (const alias of aliases) this.validateAliasName(draft, alias);
      for (const index of targets) aliases.forEach((alias) => index.aliases.add(alias));
      return;
    }
    let removed = false;
    for (const index of targets) {
      for (const alias of [...index.aliases].filter((name) =>
        aliases.some((pattern) => patternRegExp(pattern).test(name)),
      )) {
        removed = index.aliases.delete(alias) || removed;
      }
    }
    if (!removed) {
      const names = aliases.join(',');
      throw new OpenSearchError(404, 'aliases_not_found_exception', `aliases [${names}] missing`, {
        'resource.type': 'aliases',
        'resource.id': names,
      });
    }
  }

  /** GET /_alias: the aliases of the selected indices; exact alias names that match nothing make it a 404. */
  getAliases(indexExpression?: string, nameExpression?: string): Reply {
    const names = nameExpression?.split(',');
    const found = new Set<string>();
    const result: Json = {};
    for (const index of this.resolveIndices(indexExpression)) {
      const aliases = [...index.aliases].filter(
        (alias) => !names || names.some((name) => patternRegExp(name).test(alias)),
      );
      aliases.forEach((alias) => found.add(alias));
      if (aliases.length > 0 || !names) result[index.name] = { aliases: aliasesBody(aliases) };
    }
    const missing = (names ?? []).filter((name) => !isPattern(name) && !found.has(name));
    if (missing.length === 0) return ok(result);
    const error = `alias${missing.length > 1 ? 'es' : ''} [${missing.join(',')}] missing`;
    return { status: 404, body: { error, status: 404, ...result } };
  }

  bulk(body: unknown, pathIndex?: string): Reply {
    const started = Date.now();
    const operations = parseBulk(body, pathIndex);
    const results = operations.map((operation) => this.bulkItem(operation));
    return ok({
      took: Date.now() - started,
      errors: results.some((result) => result.error !== undefined),
      items: operations.map((operation, position) => ({ [operation.action]: results[position] })),
    });
  }

  /** One bulk item: failures are reported in the item, never as a failure of the whole request. */
  private bulkItem(operation: BulkOperation): Json {
    const id = operation.id ?? generateId();
    let index: IndexState | undefined;
    try {
      index = this.writeIndex(operation);
      this.consumeItemFailure(id);
      if (routingRequired(index.mappings) && operation.routing === undefined) {
        throw badRequest('routing_missing_exception', `routing is required for [${index.name}]/[${id}]`, {
          index: index.name,
        });
      }
      return operation.action === 'delete' ? deleteDocument(index, id) : writeDocument(index, id, operation);
    } catch (error) {
      if (!(error instanceof OpenSearchError)) throw error;
      const indexDetails = index ? { index: index.name, shard: '0', index_uuid: index.uuid } : {};
      return {
        _index: index?.name ?? operation.index,
        _id: id,
        status: error.status,
        error: { ...error.describe(), ...indexDetails },
      };
    }
  }

  /** Writes go to an index, or to an alias with exactly one index; a missing index is auto-created from the templates. */
  private writeIndex(operation: BulkOperation): IndexState {
    const index = this.indices.get(operation.index);
    if (index) return index;
    const [target, ...others] = aliasTargets(this.indices, operation.index);
    if (target && others.length > 0) {
      const reason =
        `no write index is defined for alias [${operation.index}]. The write index may be explicitly disabled using is_write_index=false ` +
        'or the alias points to multiple indices without one being designated as a write index';
      throw badRequest('illegal_argument_exception', reason);
    }
    if (target) return target;
    // Like OpenSearch, a delete does not create the index it targets.
    if (operation.action === 'delete') throw indexNotFound(operation.index);
    return this.addIndex(operation.index, {});
  }

  private consumeItemFailure(id: string): void {
    const rule = this.itemFailures.get(id);
    if (!rule) return;
    if (--rule.remaining <= 0) this.itemFailures.delete(id);
    const { status, type, reason } = rule.failure;
    throw new OpenSearchError(
      status,
      type,
      reason ?? `failure injected for document [${id}] by the fake OpenSearch server`,
    );
  }

  search(expression: string | undefined, body: unknown, params: Record<string, string>): Reply {
    const started = Date.now();
    const request = parseSearchRequest(body, params);
    const targets = this.resolveIndices(expression);
    for (const index of targets) checkResultWindow(index, request.from + request.size);
    const hits = matchDocuments(targets, request.query);
    const sort = request.sort;
    const sortValues = new Map(hits.map((hit) => [hit, sort?.map((key) => sortValue(hit, key))]));
    // Array.prototype.sort is stable, so equal hits keep index and insertion order.
    if (sort) hits.sort((a, b) => compareSortValues(sortValues.get(a) ?? [], sortValues.get(b) ?? [], sort));
    else hits.sort((a, b) => b.score - a.score);
    // Sorting on fields skips scoring, as in OpenSearch, unless the sort includes _score.
    const tracksScores = !sort || sort.some((key) => key.field === '_score');
    const page = hits.slice(request.from, request.from + request.size);
    const total = totalHits(hits.length, request.trackTotalHits);
    const response: Json = {
      took: Date.now() - started,
      timed_out: false,
      _shards: shards(targets.length),
      hits: {
        ...(total && { total }),
        max_score:
          tracksScores && page.length > 0 ? hits.reduce((max, hit) => Math.max(max, hit.score), -Infinity) : null,
        hits: page.map((hit) => formatHit(hit, tracksScores, request.source, sortValues.get(hit))),
      },
    };
    if (request.aggregations.size > 0)
      response.aggregations = runAggregations(
        request.aggregations,
        hits.map((hit) => hit.doc),
      );
    return ok(response);
  }

  /** Deletes what the query matches, as OpenSearch's _delete_by_query does (synchronously, one batch). */
  deleteByQuery(expression: string | undefined, body: unknown, params: Record<string, string>): Reply {
    const started = Date.now();
    const request = expectObject(body, 'delete by query request');
    allowKeys(request, ['query'], 'delete by query request');
    for (const name of Object.keys(params)) {
      if (!['conflicts', 'refresh', 'wait_for_completion', 'slices'].includes(name))
        throw unsupported(`the [${name}] URL parameter`);
    }
    if (params.wait_for_completion === 'false') throw unsupported('wait_for_completion=false (tasks)');
    const query = compileQuery(request.query ?? { match_all: {} });
    const targets = this.resolveIndices(expression);
    const hits = matchDocuments(targets, query);
    for (const hit of hits) targets.find((index) => index.name === hit.doc.index)!.docs.delete(hit.doc.id);
    return ok({
      took: Date.now() - started,
      timed_out: false,
      total: hits.length,
      deleted: hits.length,
      batches: hits.length > 0 ? 1 : 0,
      version_conflicts: 0,
      noops: 0,
      retries: { bulk: 0, search: 0 },
      throttled_millis: 0,
      requests_per_second: -1,
      throttled_until_millis: 0,
      failures: [],
    });
  }

  count(expression: string | undefined, body: unknown, params: Record<string, string>): Reply {
    const request = body === undefined ? {} : expectObject(body, 'count request');
    allowKeys(request, ['query'], 'count request');
    if (params.q !== undefined) throw unsupported('the [q] URL parameter');
    const query = compileQuery(request.query ?? { match_all: {} });
    const targets = this.resolveIndices(expression);
    return ok({ count: matchDocuments(targets, query).length, _shards: shards(targets.length) });
  }
}

function writeDocument(index: IndexState, id: string, operation: BulkOperation): Json {
  if (!isObject(operation.source)) throw mapperParsing('failed to parse, document is empty or not an object');
  validateDocument(operation.source, index.mappings);
  const previous = index.docs.get(id);
  if (previous && operation.action === 'create') {
    const reason = `[${id}]: version conflict, document already exists (current version [${previous.version}])`;
    throw new OpenSearchError(409, 'version_conflict_engine_exception', reason);
  }
  const doc: StoredDoc = {
    source: structuredClone(operation.source),
    ...(operation.routing !== undefined && { routing: operation.routing }),
    version: (previous?.version ?? 0) + 1,
    seqNo: index.nextSeqNo++,
  };
  index.docs.set(id, doc);
  return writeResult(index, id, doc.version, doc.seqNo, previous ? 'updated' : 'created', previous ? 200 : 201);
}

function deleteDocument(index: IndexState, id: string): Json {
  const previous = index.docs.get(id);
  index.docs.delete(id);
  return writeResult(
    index,
    id,
    (previous?.version ?? 0) + 1,
    index.nextSeqNo++,
    previous ? 'deleted' : 'not_found',
    previous ? 200 : 404,
  );
}

function writeResult(
  index: IndexState,
  id: string,
  version: number,
  seqNo: number,
  result: string,
  status: number,
): Json {
  const shardsWritten = { total: 1, successful: 1, failed: 0 };
  return {
    _index: index.name,
    _id: id,
    _version: version,
    result,
    _shards: shardsWritten,
    _seq_no: seqNo,
    _primary_term: 1,
    status,
  };
}

function checkResultWindow(index: IndexState, window: number): void {
  const limit = Number(index.settings.max_result_window ?? 10_000);
  if (window <= limit) return;
  const cause = badRequest(
    'illegal_argument_exception',
    `Result window is too large, from + size must be less than or equal to: [${limit}] but was [${window}]. ` +
      'See the scroll api for a more efficient way to request large data sets. ' +
      'This limit can be set by changing the [index.max_result_window] index level setting.',
  );
  throw searchPhaseFailure(cause, index.name);
}

function matchDocuments(targets: IndexState[], query: Query): Hit[] {
  const hits: Hit[] = [];
  for (const index of targets) {
    for (const [id, stored] of index.docs) {
      const routing = stored.routing !== undefined ? { routing: stored.routing } : {};
      const doc: SearchDoc = { index: index.name, id, source: stored.source, mappings: index.mappings, ...routing };
      const score = query(doc);
      if (score !== undefined) hits.push({ doc, score });
    }
  }
  return hits;
}

function formatHit(
  hit: Hit,
  tracksScores: boolean,
  filterSource: (source: Json) => Json | undefined,
  sortValues?: (Scalar | undefined)[],
): Json {
  const source = filterSource(hit.doc.source);
  return {
    _index: hit.doc.index,
    _id: hit.doc.id,
    _score: tracksScores ? hit.score : null,
    ...(hit.doc.routing !== undefined && { _routing: hit.doc.routing }),
    ...(source !== undefined && { _source: source }),
    // OpenSearch prints boolean sort values as 1/0; the fake prints missing ones as null.
    ...(sortValues && {
      sort: sortValues.map((value) => (typeof value === 'boolean' ? Number(value) : (value ?? null))),
    }),
  };
}

// ---------------------------------------------------------------------------------------------
// HTTP: routing, body parsing, recording and failure injection
// ---------------------------------------------------------------------------------------------

interface RouteRequest {
  query: Record<string, string>;
  body: unknown;
}
/** Path parameters follow the request, in path order. */
type Handler = (cluster: Cluster, request: RouteRequest, ...params: string[]) => Reply;

const getTemplates: Handler = (cluster, _request, name) => cluster.getTemplates(name);
const putTemplate: Handler = (cluster, request, name) => cluster.putTemplate(name, request.body);
const getAliases: Handler = (cluster, _request, name) => cluster.getAliases(undefined, name);
const getIndexAliases: Handler = (cluster, _request, index, name) => cluster.getAliases(index, name);
const bulk: Handler = (cluster, request, index?: string) => cluster.bulk(request.body, index);
const refresh: Handler = (cluster, _request, index?: string) => cluster.refresh(index);
const count: Handler = (cluster, request, index?: string) => cluster.count(index, request.body, request.query);
const search: Handler = (cluster, request, index?: string) => cluster.search(index, request.body, request.query);
const deleteByQuery: Handler = (cluster, request, index?: string) =>
  cluster.deleteByQuery(index, request.body, request.query);

const route = (path: string, methods: Record<string, Handler>) => ({
  pattern: path.split('/').filter(Boolean),
  methods,
});

const ROUTES = [
  // The client pings with HEAD / when it resurrects a connection it marked dead.
  route('/', { GET: (cluster) => cluster.info(), HEAD: () => ok() }),
  route('/_cluster/health', { GET: (cluster) => cluster.health() }),
  route('/_index_template', { GET: (cluster) => cluster.getTemplates('*') }),
  route('/_index_template/{name}', { GET: getTemplates, HEAD: getTemplates, PUT: putTemplate, POST: putTemplate }),
  route('/_aliases', { POST: (cluster, request) => cluster.updateAliases(request.body) }),
  route('/_alias', { GET: (cluster) => cluster.getAliases() }),
  route('/_alias/{name}', { GET: getAliases, HEAD: getAliases }),
  route('/{index}/_alias', { GET: (cluster, _request, index) => cluster.getAliases(index) }),
  route('/{index}/_alias/{name}', { GET: getIndexAliases, HEAD: getIndexAliases }),
  route('/_bulk', { POST: bulk, PUT: bulk }),
  route('/{index}/_bulk', { POST: bulk, PUT: bulk }),
  route('/_refresh', { POST: refresh, GET: refresh }),
  route('/{index}/_refresh', { POST: refresh, GET: refresh }),
  route('/_count', { POST: count, GET: count }),
  route('/{index}/_count', { POST: count, GET: count }),
  route('/_search', { POST: search, GET: search }),
  route('/{index}/_search', { POST: search, GET: search }),
  route('/{index}/_delete_by_query', { POST: deleteByQuery }),
  route('/{index}/_mapping', {
    PUT: (cluster, request, index) => cluster.putMapping(index, request.body),
    POST: (cluster, request, index) => cluster.putMapping(index, request.body),
    GET: (cluster, _request, index) => cluster.getMapping(index),
  }),
  route('/{index}', {
    PUT: (cluster, request, index) => cluster.createIndex(index, request.body),
    HEAD: (cluster, _request, index) => cluster.indexExists(index),
    GET: (cluster, _request, index) => cluster.getIndex(index),
    DELETE: (cluster, _request, index) => cluster.deleteIndex(index),
  }),
];

/** Path parameters, or undefined if the path does not fit; `{index}` never takes an API name such as `_search`. */
function matchRoute(pattern: string[], segments: string[]): string[] | undefined {
  if (pattern.length !== segments.length) return undefined;
  const params: string[] = [];
  for (const [position, expected] of pattern.entries()) {
    const segment = segments[position] ?? '';
    if (expected === '{index}' && segment.startsWith('_') && segment !== '_all') return undefined;
    if (expected.startsWith('{')) params.push(segment);
    else if (expected !== segment) return undefined;
  }
  return params;
}

function dispatch(cluster: Cluster, method: string, rawPath: string, request: RouteRequest): Reply {
  const segments = rawPath.split('/').filter(Boolean).map(safeDecode);
  for (const { pattern, methods } of ROUTES) {
    const params = matchRoute(pattern, segments);
    if (!params) continue;
    const handler = methods[method];
    if (!handler) {
      const error = `Incorrect HTTP method for uri [${rawPath}] and method [${method}], allowed: [${Object.keys(methods).join(', ')}]`;
      return { status: 405, body: { error, status: 405 } };
    }
    return handler(cluster, request, ...params);
  }
  throw unsupported(`the endpoint [${method} ${rawPath}]`);
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** _bulk bodies are NDJSON (and must end with a newline, as OpenSearch insists); every other body is JSON. */
function parseBody(raw: string, ndjson: boolean): unknown {
  if (raw.trim() === '') return undefined;
  if (!ndjson) return parseJson(raw);
  if (!raw.endsWith('\n'))
    throw badRequest('illegal_argument_exception', 'The bulk request must be terminated by a newline [\\n]');
  return raw
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map(parseJson);
}

/** The body as recorded: parsed when possible, else the raw text together with the error to answer. */
function interpretBody(raw: string, ndjson: boolean): { body: unknown; error?: OpenSearchError } {
  try {
    return { body: parseBody(raw, ndjson) };
  } catch (error) {
    if (!(error instanceof OpenSearchError)) throw error;
    return { body: raw, error };
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw badRequest('parsing_exception', `failed to parse the request body: ${(error as Error).message}`);
  }
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function send(response: ServerResponse, method: string, reply: Reply): void {
  const payload = reply.body === undefined || method === 'HEAD' ? '' : JSON.stringify(reply.body);
  response.writeHead(reply.status, {
    'content-type': 'application/json; charset=UTF-8',
    'content-length': Buffer.byteLength(payload),
  });
  response.end(payload);
}

function injectedFailureReply(failure: { status: number; type?: string }): Reply {
  const type = failure.type ?? (failure.status === 429 ? 'es_rejected_execution_exception' : 'fake_injected_failure');
  return errorReply(
    new OpenSearchError(
      failure.status,
      type,
      `failure injected by the fake OpenSearch server (status ${failure.status})`,
    ),
  );
}

class FakeOpenSearchServer implements FakeOpenSearch {
  url = '';
  readonly requests: RecordedRequest[] = [];
  private cluster = new Cluster();
  private requestFailures: { failure: RequestFailure; remaining: number; path: RegExp }[] = [];
  private readonly server = createServer((request, response) => {
    this.handle(request, response).catch(() => response.destroy());
  });

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', resolve);
    });
    const { port } = this.server.address() as AddressInfo;
    this.url = `http://127.0.0.1:${port}`;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const raw = await readBody(request);
    const method = request.method ?? 'GET';
    const url = new URL(request.url ?? '/', 'http://fake');
    const path = safeDecode(url.pathname);
    const query = Object.fromEntries(url.searchParams);
    const parsed = interpretBody(raw, /\/_bulk\/?$/.test(url.pathname));
    this.requests.push({ method, path, query, body: parsed.body });
    const failure = this.takeRequestFailure(path);
    if (failure?.kind === 'reset') {
      request.socket.destroy();
      return;
    }
    let reply: Reply;
    if (failure) reply = injectedFailureReply(failure);
    else if (parsed.error) reply = errorReply(parsed.error);
    else reply = this.answer(method, url.pathname, { query, body: parsed.body });
    send(response, method, reply);
  }

  private answer(method: string, rawPath: string, request: RouteRequest): Reply {
    try {
      return dispatch(this.cluster, method, rawPath, request);
    } catch (error) {
      if (error instanceof OpenSearchError) return errorReply(error);
      // A bug in the fake: answer 500 with the message rather than hanging the client.
      return errorReply(
        new OpenSearchError(
          500,
          'fake_internal_error',
          error instanceof Error ? (error.stack ?? error.message) : String(error),
        ),
      );
    }
  }

  private takeRequestFailure(path: string): RequestFailure | undefined {
    const rule = this.requestFailures.find((candidate) => candidate.path.test(path));
    if (!rule) return undefined;
    if (--rule.remaining <= 0) this.requestFailures.splice(this.requestFailures.indexOf(rule), 1);
    return rule.failure;
  }

  indices(): string[] {
    return [...this.cluster.indices.keys()];
  }

  documents(index: string): Map<string, StoredDocument> {
    const docs = this.cluster.indices.get(index)?.docs ?? new Map<string, StoredDoc>();
    // Copies, so that a test cannot change the fake's state behind its back.
    return new Map([...docs].map(([id, { seqNo: _seqNo, ...document }]) => [id, structuredClone(document)]));
  }

  aliases(): Record<string, string[]> {
    const aliases: Record<string, string[]> = {};
    for (const index of this.cluster.indices.values()) {
      for (const alias of index.aliases) (aliases[alias] ??= []).push(index.name);
    }
    return aliases;
  }

  failNext(failure: RequestFailure, options: { times?: number; path?: RegExp } = {}): void {
    // A global or sticky RegExp would carry lastIndex between tests of different paths.
    const path = options.path ? new RegExp(options.path.source, options.path.flags.replace(/[gy]/g, '')) : /.*/;
    this.requestFailures.push({ failure, remaining: options.times ?? 1, path });
  }

  failItems(ids: Iterable<string>, failure: ItemFailure, options: { times?: number } = {}): void {
    for (const id of ids) this.cluster.itemFailures.set(id, { failure, remaining: options.times ?? Infinity });
  }

  clearFailures(): void {
    this.requestFailures = [];
    this.cluster.itemFailures.clear();
  }

  reset(): void {
    this.cluster = new Cluster();
    this.requestFailures = [];
    this.requests.length = 0;
  }

  async close(): Promise<void> {
    const closed = new Promise<void>((resolve, reject) =>
      this.server.close((error) => (error ? reject(error) : resolve())),
    );
    // The client keeps connections alive; without this, close() would wait for them to time out.
    this.server.closeAllConnections();
    await closed;
  }
}

/** Starts a fake OpenSearch server on 127.0.0.1 on a random port. */
export async function startFakeOpenSearch(): Promise<FakeOpenSearch> {
  const fake = new FakeOpenSearchServer();
  await fake.listen();
  return fake;
}
