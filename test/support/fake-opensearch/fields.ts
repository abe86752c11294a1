/**
 * Field values as queries, sorts and aggregations see them: a dotted path looked up in the index
 * mapping gives the field's kind, and the document's `_source` values are read in that kind.
 */
import { badRequest, unsupported } from './errors.js';
import { isObject, isScalar, type Json, type Scalar } from './json.js';

export type FieldKind = 'keyword' | 'number' | 'date' | 'boolean';

const NUMERIC_TYPES = new Set('long integer short byte double float half_float scaled_float unsigned_long'.split(' '));

/** The kinds of mapped types the fake can search; other types may be declared but not queried. */
export function kindOfType(type: unknown): FieldKind | undefined {
  if (type === 'keyword' || type === 'constant_keyword') return 'keyword';
  if (type === 'date' || type === 'boolean') return type;
  return NUMERIC_TYPES.has(String(type)) ? 'number' : undefined;
}

export const isObjectMapping = (definition: Json) =>
  definition.properties !== undefined || definition.type === undefined || definition.type === 'object';

/** A child's `dynamic` setting, inherited from its parent when it has none. */
export const dynamicOf = (definition: Json, inherited: string) =>
  definition.dynamic === undefined ? inherited : String(definition.dynamic);

/** How a dotted field path is indexed; `dynamic` fields are not in the mapping but would have been added to it. */
type FieldMapping = FieldKind | 'dynamic' | 'object' | 'unsearchable';

function fieldMapping(mappings: Json, field: string): FieldMapping {
  let node = mappings;
  let dynamic = dynamicOf(mappings, 'true');
  const segments = field.split('.');
  for (const [position, segment] of segments.entries()) {
    const definition = isObject(node.properties) ? node.properties[segment] : undefined;
    if (!isObject(definition)) return dynamic === 'false' ? 'unsearchable' : 'dynamic';
    // Objects mapped with `enabled: false` are kept in _source but not indexed at all.
    if (definition.enabled === false) return 'unsearchable';
    const last = position === segments.length - 1;
    if (!isObjectMapping(definition)) {
      if (!last) throw unsupported(`field [${field}] below a [${String(definition.type)}] field (multi-fields)`);
      const kind = kindOfType(definition.type);
      if (!kind) throw unsupported(`searching field [${field}] of type [${String(definition.type)}]`);
      return kind;
    }
    node = definition;
    dynamic = dynamicOf(definition, dynamic);
  }
  return 'object';
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

const hasValue = (value: unknown): boolean =>
  Array.isArray(value) ? value.some(hasValue) : isObject(value) ? Object.values(value).some(hasValue) : value != null;

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
  return Date.UTC(+year!, +month - 1, +day, +hour, +minute, +second, millis) - zoneOffsetMillis(zone);
}

function zoneOffsetMillis(zone: string): number {
  if (zone === 'Z') return 0;
  const digits = zone.slice(1).replace(':', '');
  const minutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || 0);
  return (zone.startsWith('-') ? -1 : 1) * minutes * 60_000;
}

/** The comparable form of a value for a field kind, or undefined when the field could not hold it. */
export function toScalar(kind: FieldKind, value: unknown): Scalar | undefined {
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

export function queryScalar(kind: FieldKind, value: unknown, field: string): Scalar {
  const scalar = toScalar(kind, value);
  if (scalar !== undefined) return scalar;
  throw badRequest('parse_exception', `failed to parse [${JSON.stringify(value)}] for ${kind} field [${field}]`);
}

export function compareScalars(a: Scalar, b: Scalar): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
  const [left, right] = [String(a), String(b)];
  return left < right ? -1 : left > right ? 1 : 0;
}

/** A document as seen by queries and aggregations: its source plus the mapping of its index. */
export interface SearchDoc {
  index: string;
  id: string;
  source: Json;
  routing?: string;
  mappings: Json;
}

export interface IndexedValues {
  kind: FieldKind;
  values: Scalar[];
}

/** Unmapped fields are typed from their values, as dynamic mapping would have typed them. */
const dynamicKind = (sample: unknown): FieldKind =>
  typeof sample === 'number' ? 'number' : typeof sample === 'boolean' ? 'boolean' : 'keyword';

/** The indexed values of a field in one document, or undefined if the field is not searchable. */
export function indexedValues(doc: SearchDoc, field: string): IndexedValues | undefined {
  const mapped = fieldMapping(doc.mappings, field);
  if (mapped === 'unsearchable' || mapped === 'object') return undefined;
  const raw = sourceValues(doc.source, field.split('.')).filter((value) => !isObject(value));
  const kind = mapped === 'dynamic' ? dynamicKind(raw[0]) : mapped;
  return { kind, values: raw.map((value) => toScalar(kind, value)).filter((value) => value !== undefined) };
}

/** What the exists query tests: a non-null value at the path of an indexed field (objects count by their leaves). */
export const fieldExists = (doc: SearchDoc, field: string) =>
  fieldMapping(doc.mappings, field) !== 'unsearchable' && sourceValues(doc.source, field.split('.')).some(hasValue);
