/** Aggregations: each is parsed once into a function from the documents of its bucket to its response section. */
import { badRequest, unsupported } from './errors.js';
import { compareScalars, indexedValues, type FieldKind, type SearchDoc } from './fields.js';
import { asArray, isScalar, type Json, type Scalar } from './json.js';
import { expectObject, intParam, objectParams, singleEntry } from './params.js';
import { compileQuery } from './query.js';

export type Aggregation = (docs: SearchDoc[]) => Json;
type Aggregations = Map<string, Aggregation>;
type AggregationBuilder = (params: unknown, subAggregations: Aggregations) => Aggregation;

const AGGREGATIONS = new Map<string, { bucketing: boolean; build: AggregationBuilder }>([
  ['terms', { bucketing: true, build: termsAggregation }],
  ['date_histogram', { bucketing: true, build: dateHistogramAggregation }],
  ['composite', { bucketing: true, build: compositeAggregation }],
  ['filter', { bucketing: true, build: filterAggregation }],
  ['cardinality', { bucketing: false, build: cardinalityAggregation }],
  ['value_count', { bucketing: false, build: valueCountAggregation }],
]);

export function parseAggregations(spec: unknown): Aggregations {
  const entries = Object.entries(spec === undefined ? {} : expectObject(spec, 'aggregations'));
  return new Map(entries.map(([name, definition]) => [name, parseAggregation(name, definition)]));
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
    const reason = `Aggregator [${name}] of type [${type}] cannot accept sub-aggregations`;
    throw badRequest('aggregation_initialization_exception', reason);
  }
  return kind.build(params, subAggregations);
}

export function runAggregations(aggregations: Aggregations, docs: SearchDoc[]): Json {
  return Object.fromEntries([...aggregations].map(([name, aggregation]) => [name, aggregation(docs)]));
}

function bucket(keyFields: Json, docs: SearchDoc[], subAggregations: Aggregations): Json {
  return { ...keyFields, doc_count: docs.length, ...runAggregations(subAggregations, docs) };
}

/** The parameters of an aggregation, and the field it requires. */
function fieldParams(params: unknown, type: string, allowed: readonly string[]): [Json, string] {
  const object = objectParams(params, type, ['field', ...allowed]);
  if (typeof object.field !== 'string') throw badRequest('parsing_exception', `[${type}] requires a [field]`);
  return [object, object.field];
}

/** Groups documents by each distinct key of theirs; a document with several keys joins several groups, once each. */
function groupBy<Key>(docs: SearchDoc[], keysOf: (doc: SearchDoc) => Iterable<Key>): Map<Key, SearchDoc[]> {
  const groups = new Map<Key, SearchDoc[]>();
  for (const doc of docs) {
    for (const key of new Set(keysOf(doc))) {
      const members = groups.get(key);
      if (members) members.push(doc);
      else groups.set(key, [doc]);
    }
  }
  return groups;
}

const valuesOf = (field: string) => (doc: SearchDoc) => indexedValues(doc, field)?.values ?? [];

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

function termsAggregation(body: unknown, subAggregations: Aggregations): Aggregation {
  const [params, field] = fieldParams(body, 'terms', ['size', 'order', 'missing']);
  const size = intParam(params.size, 10, 'terms.size');
  const order = termsOrder(params.order);
  // `missing`: documents without a value count under that key, as OpenSearch treats them
  const missing = params.missing;
  if (
    missing !== undefined &&
    typeof missing !== 'string' &&
    typeof missing !== 'number' &&
    typeof missing !== 'boolean'
  )
    throw badRequest('parsing_exception', '[terms] missing must be a value');
  const keysOf = (doc: SearchDoc): Scalar[] => {
    const values = valuesOf(field)(doc);
    return values.length === 0 && missing !== undefined ? [missing] : values;
  };
  return (docs) => {
    const kind = docs.map((doc) => indexedValues(doc, field)?.kind).find((found) => found !== undefined);
    const ordered = [...groupBy(docs, keysOf)].sort(order);
    return {
      doc_count_error_upper_bound: 0,
      sum_other_doc_count: ordered.slice(size).reduce((total, [, members]) => total + members.length, 0),
      buckets: ordered.slice(0, size).map(([key, members]) => bucket(termsKey(kind, key), members, subAggregations)),
    };
  };
}

function cardinalityAggregation(body: unknown): Aggregation {
  const [, field] = fieldParams(body, 'cardinality', ['precision_threshold']);
  return (docs) => ({ value: groupBy(docs, valuesOf(field)).size });
}

function valueCountAggregation(body: unknown): Aggregation {
  const [, field] = fieldParams(body, 'value_count', []);
  return (docs) => ({
    value: docs.reduce((count, doc) => {
      const indexed = indexedValues(doc, field);
      // Keyword doc values are a set per document; numeric ones keep duplicates.
      return count + (indexed?.kind === 'keyword' ? new Set(indexed.values).size : (indexed?.values.length ?? 0));
    }, 0),
  });
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const WEEK = 7 * DAY;
const INTERVALS = new Map(Object.entries({ hour: HOUR, '1h': HOUR, day: DAY, '1d': DAY, week: WEEK, '1w': WEEK }));
const UTC_ZONES = ['UTC', 'Z', '+00:00', 'Etc/UTC', 'GMT'];

function dateHistogramAggregation(body: unknown, subAggregations: Aggregations): Aggregation {
  const [params, field] = fieldParams(body, 'date_histogram', ['calendar_interval', 'min_doc_count', 'time_zone']);
  const step = INTERVALS.get(String(params.calendar_interval));
  if (!step) throw unsupported(`date_histogram calendar_interval [${String(params.calendar_interval)}]`);
  if (params.time_zone !== undefined && !UTC_ZONES.includes(String(params.time_zone))) {
    throw unsupported(`date_histogram time_zone [${String(params.time_zone)}]`);
  }
  const minDocCount = intParam(params.min_doc_count, 0, 'date_histogram.min_doc_count');
  // 1970-01-01 was a Thursday; OpenSearch's calendar weeks start on Monday, three days earlier.
  const offset = step === WEEK ? -3 * DAY : 0;
  const floor = (instant: Scalar) => Math.floor((Number(instant) - offset) / step) * step + offset;
  return (docs) => {
    const groups = groupBy(docs, (doc) => {
      const indexed = indexedValues(doc, field);
      if (indexed && indexed.kind !== 'date' && indexed.kind !== 'number') {
        const reason = `Field [${field}] of type [${indexed.kind}] is not supported for aggregation [date_histogram]`;
        throw badRequest('illegal_argument_exception', reason);
      }
      return indexed?.values.map(floor) ?? [];
    });
    const keys = [...groups.keys()].sort((a, b) => a - b);
    const [first, last] = [keys[0], keys.at(-1)];
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
    const [terms, field] = fieldParams(params, `composite source [${name}]`, ['order']);
    if (terms.order !== undefined && terms.order !== 'asc' && terms.order !== 'desc') {
      throw badRequest('parsing_exception', `unknown order [${String(terms.order)}]`);
    }
    return { name, field, descending: terms.order === 'desc' };
  });
}

/** Every combination of one value per source: a document with multi-valued fields joins several buckets. */
function combinations(valueSets: Scalar[][]): Scalar[][] {
  return valueSets.reduce<Scalar[][]>(
    (partial, values) => partial.flatMap((prefix) => values.map((value) => [...prefix, value])),
    [[]],
  );
}

function compositeAggregation(body: unknown, subAggregations: Aggregations): Aggregation {
  const params = objectParams(body, 'composite', ['size', 'sources', 'after']);
  const size = intParam(params.size, 10, 'composite.size');
  const sources = compositeSources(params.sources);
  const after = params.after === undefined ? undefined : expectObject(params.after, 'composite.after');
  const afterKey = after && sources.map(({ name }) => afterValue(after, name));
  const compare = (a: Scalar[], b: Scalar[]) =>
    sources.reduce(
      (order, source, position) => order || compareScalars(a[position]!, b[position]!) * (source.descending ? -1 : 1),
      0,
    );
  const keyObject = (key: Scalar[]) => Object.fromEntries(sources.map(({ name }, position) => [name, key[position]]));
  const keysOf = (doc: SearchDoc) => combinations(sources.map(({ field }) => [...new Set(valuesOf(field)(doc))]));
  return (docs) => {
    // Keys of several values are grouped by their JSON text, so that equal keys make one group.
    const groups = groupBy(docs, (doc) => keysOf(doc).map((key) => JSON.stringify(key)));
    const page = [...groups]
      .map(([text, members]) => ({ key: JSON.parse(text) as Scalar[], members }))
      .sort((a, b) => compare(a.key, b.key))
      .filter(({ key }) => !afterKey || compare(key, afterKey) > 0)
      .slice(0, size);
    const buckets = page.map(({ key, members }) => bucket({ key: keyObject(key) }, members, subAggregations));
    const last = page.at(-1);
    return last ? { after_key: keyObject(last.key), buckets } : { buckets };
  };
}

function afterValue(after: Json, name: string): Scalar {
  const value = after[name];
  if (!isScalar(value)) throw badRequest('illegal_argument_exception', `[after] has no value for source [${name}]`);
  return value;
}

/** The body of a filter aggregation is a query. */
function filterAggregation(body: unknown, subAggregations: Aggregations): Aggregation {
  const query = compileQuery(body);
  return (docs) =>
    bucket(
      {},
      docs.filter((doc) => query(doc) !== undefined),
      subAggregations,
    );
}
