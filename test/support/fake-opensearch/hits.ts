/** The hits of a search: their sort order, their `_source` filtering and their form in the response. */
import { badRequest, unsupported } from './errors.js';
import { compareScalars, indexedValues, type SearchDoc } from './fields.js';
import { asArray, isObject, type Json, type Scalar } from './json.js';
import { intParam, objectParams, singleEntry, wildcardRegExp } from './params.js';

export interface Hit {
  doc: SearchDoc;
  score: number;
}

interface SortKey {
  field: string;
  descending: boolean;
}

function parseSort(spec: unknown): SortKey[] | undefined {
  if (spec === undefined) return undefined;
  return asArray(spec).map((entry) => {
    if (typeof entry === 'string') return sortKey(entry, {});
    const [field, options] = singleEntry(entry, 'sort');
    return sortKey(field, typeof options === 'string' ? { order: options } : options);
  });
}

function sortKey(field: string, options: unknown): SortKey {
  const { order = field === '_score' ? 'desc' : 'asc' } = objectParams(options, `sort.${field}`, ['order']);
  if (field.startsWith('_') && field !== '_score') throw unsupported(`sorting on [${field}]`);
  if (order !== 'asc' && order !== 'desc')
    throw badRequest('parsing_exception', `unknown sort order [${String(order)}]`);
  return { field, descending: order === 'desc' };
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
    if (left === right) continue;
    // Missing values go last whatever the direction.
    if (left === undefined || right === undefined) return left === undefined ? 1 : -1;
    const order = compareScalars(left, right) * (key.descending ? -1 : 1);
    if (order !== 0) return order;
  }
  return 0;
}

/** Sorts the hits in place, and gives the sort values each one reports. */
function sortHits(hits: Hit[], sort: SortKey[] | undefined): Map<Hit, (Scalar | undefined)[]> | undefined {
  // Array.prototype.sort is stable, so equal hits keep index and insertion order.
  if (!sort) {
    hits.sort((a, b) => b.score - a.score);
    return undefined;
  }
  const values = new Map(hits.map((hit) => [hit, sort.map((key) => sortValue(hit, key))]));
  hits.sort((a, b) => compareSortValues(values.get(a)!, values.get(b)!, sort));
  return values;
}

/** Applies `_source` filtering: true/false or include patterns. */
function compileSourceFilter(spec: unknown): (source: Json) => Json | undefined {
  if (spec === undefined || spec === true) return (source) => source;
  if (spec === false) return () => undefined;
  if (typeof spec !== 'string' && !Array.isArray(spec)) throw unsupported('[_source] other than a list of patterns');
  const includes = asArray(spec).map((pattern) => wildcardRegExp(String(pattern)));
  return (source) => pickFields(source, '', includes);
}

function pickFields(object: Json, prefix: string, includes: RegExp[]): Json {
  const picked: Json = {};
  for (const [key, value] of Object.entries(object)) {
    const path = prefix + key;
    const included = includes.length === 0 || includes.some((pattern) => pattern.test(path));
    if (isObject(value)) {
      // Below an included object everything is included; otherwise a deeper pattern may still match.
      const inner = pickFields(value, `${path}.`, included ? [] : includes);
      if (included || Object.keys(inner).length > 0) picked[key] = inner;
    } else if (included) picked[key] = value;
  }
  return picked;
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

function parseTrackTotalHits(value: unknown): boolean | number {
  if (value === true || value === 'true') return true;
  if (value === false || value === 'false') return false;
  return intParam(value, 10_000, 'track_total_hits');
}

function totalHits(count: number, track: boolean | number): Json | undefined {
  if (track === false) return undefined;
  if (track !== true && count > track) return { value: track, relation: 'gte' };
  return { value: count, relation: 'eq' };
}

/** How a search presents its hits: which page, in which order, with which part of the source. */
export interface HitsOptions {
  from: number;
  size: number;
  sort?: SortKey[];
  trackTotalHits: boolean | number;
  source: (source: Json) => Json | undefined;
}

export function parseHitsOptions(request: Json, params: Record<string, string>): HitsOptions {
  return {
    // URL parameters override the body, as in OpenSearch.
    from: intParam(params.from ?? request.from, 0, 'from'),
    size: intParam(params.size ?? request.size, 10, 'size'),
    sort: parseSort(request.sort),
    trackTotalHits: parseTrackTotalHits(params.track_total_hits ?? request.track_total_hits),
    source: compileSourceFilter(request._source),
  };
}

/** The `hits` section of a search response, the matching hits sorted in place. */
export function hitsSection(hits: Hit[], options: HitsOptions): Json {
  const sortValues = sortHits(hits, options.sort);
  // Sorting on fields skips scoring, as in OpenSearch, unless the sort includes _score.
  const tracksScores = !options.sort || options.sort.some((key) => key.field === '_score');
  const page = hits.slice(options.from, options.from + options.size);
  const total = totalHits(hits.length, options.trackTotalHits);
  const maxScore =
    tracksScores && page.length > 0 ? hits.reduce((max, hit) => Math.max(max, hit.score), -Infinity) : null;
  return {
    ...(total && { total }),
    max_score: maxScore,
    hits: page.map((hit) => formatHit(hit, tracksScores, options.source, sortValues?.get(hit))),
  };
}
