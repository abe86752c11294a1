import fc from 'fast-check';
import { deflateSync, gzipSync } from 'node:zlib';

type Json = Record<string, any>;

/** What the generators may refer to: ids that exist, and keys of several tiers. */
export interface FuzzWorld {
  ciIds: string[];
  sourceIds: string[];
  keys: string[];
}

export interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** What was generated, for the failure report. */
  describe: string;
}

/** Values that have broken parsers, casts and SQL elsewhere: extremes, encodings, separators. */
const NASTY = [
  '',
  ' ',
  '0',
  '-0',
  '-1',
  '1.5',
  '1e3',
  '1e400',
  '-1e400',
  'Infinity',
  '-Infinity',
  'NaN',
  '2147483648',
  '9223372036854775807',
  '9223372036854775808',
  '99999999999999999999999',
  'true',
  'null',
  '[]',
  '{}',
  '\u0000',
  'a\u0000b',
  '%',
  '%00',
  '\\',
  "'",
  '"',
  ',',
  ',,,',
  ':',
  '::',
  'a:b:c:d',
  '..',
  '../../etc/passwd',
  '*',
  '_%',
  '\u202e',
  '\ud800',
  '💥',
  'ǅ',
  'ß',
  '2026-02-30T00:00:00Z',
  '2026-13-01',
  '0000-00-00',
  '9999-12-31T23:59:59.999999Z',
  '-infinity',
  '00000000-0000-0000-0000-000000000000',
  'x'.repeat(3000),
  '9'.repeat(400),
];

const nastyString = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...NASTY) },
  { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.integer().map(String) },
  { weight: 1, arbitrary: fc.double().map(String) },
);

/** Resolves the document's `$ref`s (only local component references exist). */
function resolve(doc: Json, schema: Json): Json {
  if (schema?.$ref)
    return resolve(
      doc,
      schema.$ref
        .replace(/^#\//, '')
        .split('/')
        .reduce((node: Json, key: string) => node[key], doc),
    );
  return schema ?? {};
}

/** A value that satisfies the schema, most of the time; bounded in size. */
export function fromSchema(doc: Json, raw: Json, depth = 0): fc.Arbitrary<unknown> {
  const schema = resolve(doc, raw);
  const choices = schema.anyOf ?? schema.oneOf;
  if (choices) return fc.oneof(...choices.map((choice: Json) => fromSchema(doc, choice, depth)));
  if ('const' in schema) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (depth > 5) return fc.constant(null);
  switch (schema.type) {
    case 'string':
      if (schema.format === 'uuid') return fc.uuid();
      if (schema.format === 'date-time')
        return fc
          .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
          .map((d) => d.toISOString());
      if (schema.format === 'date')
        return fc
          .date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true })
          .map((d) => d.toISOString().slice(0, 10));
      if (schema.pattern)
        return fc.stringMatching(new RegExp(schema.pattern), { maxLength: Math.min(schema.maxLength ?? 40, 40) });
      return fc.string({ minLength: schema.minLength ?? 0, maxLength: Math.min(schema.maxLength ?? 30, 30) });
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1000, max: Math.min(schema.maximum ?? 1000, 2_000_000_000) });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(fromSchema(doc, schema.items ?? {}, depth + 1), { maxLength: Math.min(schema.maxItems ?? 3, 3) });
    case 'object': {
      const properties: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [name, property] of Object.entries(schema.properties ?? {}))
        properties[name] = fromSchema(doc, property as Json, depth + 1);
      const record = fc.record(properties, {
        requiredKeys: (schema.required ?? []).filter((name: string) => name in properties),
      });
      const open = schema.patternProperties ? Object.values(schema.patternProperties)[0] : schema.additionalProperties;
      if (!open) return record;
      const extra = fc.dictionary(
        fc.string({ maxLength: 12 }),
        open === true ? fc.jsonValue({ maxDepth: 2 }) : fromSchema(doc, open as Json, depth + 1),
        { maxKeys: 4 },
      );
      return fc.tuple(record, extra).map(([known, more]) => ({ ...more, ...known }));
    }
    default:
      return fc.jsonValue({ maxDepth: 3 });
  }
}

/** `{"a":{"a":…}}` nested `depth` levels. */
const nested = (depth: number): string => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

/** Percent-encodes for a URL; text that encodeURIComponent refuses (lone surrogates) goes raw-ish. */
function encode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return [...text].map((c) => (/[\ud800-\udfff]/.test(c) ? '%ED%A0%80' : encodeURIComponent(c))).join('');
  }
}

interface Parameter {
  name: string;
  in: 'path' | 'query';
  required?: boolean;
  schema: Json;
}

function parameterValue(doc: Json, parameter: Parameter, world: FuzzWorld): fc.Arbitrary<string[]> {
  const schema = resolve(doc, parameter.schema);
  const known =
    parameter.name === 'ci_id' && world.ciIds.length > 0
      ? fc.constantFrom(...world.ciIds)
      : parameter.name.endsWith('source_id') && world.sourceIds.length > 0
        ? fc.constantFrom(...world.sourceIds)
        : undefined;
  const valid = fromSchema(doc, schema.type === 'array' ? (schema.items ?? {}) : schema).map((v) => String(v));
  const single = fc.oneof(
    { weight: 4, arbitrary: valid },
    { weight: known ? 4 : 0, arbitrary: known ?? valid },
    { weight: 3, arbitrary: nastyString },
    { weight: parameter.name === 'filter' ? 6 : 0, arbitrary: filterString },
    { weight: parameter.name === 'cursor' ? 3 : 0, arbitrary: cursorString },
  );
  return schema.type === 'array'
    ? fc.array(single, { minLength: 1, maxLength: 4 })
    : fc.oneof(
        { weight: 9, arbitrary: single.map((v) => [v]) },
        { weight: 1, arbitrary: fc.array(single, { minLength: 2, maxLength: 3 }) },
      );
}

const FILTER_FIELDS = [
  'name',
  'namespace',
  'status',
  'ci_type',
  'created_at',
  'updated_at',
  'last_seen',
  'change_type',
  'ci_name',
  'changed_at',
  'ci_id',
  'changed_field',
  'raw_data.spec.replicas',
  'raw_data.metadata.labels.app',
  'type_data.phase',
  'raw_data.0',
  'raw_data',
  'raw_data..x',
  'unknown',
];
const FILTER_OPS = [
  'eq',
  'ne',
  'gt',
  'gte',
  'lt',
  'lte',
  'like',
  'ilike',
  'startswith',
  'in',
  'nin',
  'null',
  'notnull',
  'regex',
  '',
];

const filterString = fc
  .tuple(
    fc.oneof(fc.constantFrom(...FILTER_FIELDS), nastyString),
    fc.oneof(fc.constantFrom(...FILTER_OPS), nastyString),
    fc.option(nastyString, { nil: undefined }),
  )
  .map(([field, op, value]) => (value === undefined ? `${field}:${op}` : `${field}:${op}:${value}`));

const cursorString = fc.oneof(
  fc.base64String({ maxLength: 60 }),
  fc.tuple(fc.base64String({ maxLength: 60 }), fc.base64String({ maxLength: 44 })).map(([a, b]) => `${a}.${b}`),
  nastyString,
);

function bodyArbitrary(doc: Json, schema: Json): fc.Arbitrary<{ bytes: Buffer; kind: string }> {
  const json = (value: unknown, kind: string) => ({ bytes: Buffer.from(JSON.stringify(value) ?? 'null'), kind });
  return fc.oneof(
    { weight: 8, arbitrary: fromSchema(doc, schema).map((v) => json(v, 'schema')) },
    { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => json(v, 'json')) },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 40, max: 300 })
        .map((d) => ({ bytes: Buffer.from(`{"items":[${nested(d)}]}`), kind: `nested ${d}` })),
    },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((b) => ({ bytes: Buffer.from(b), kind: 'bytes' })) },
    {
      weight: 1,
      arbitrary: fc
        .string({ unit: 'binary', maxLength: 100 })
        .map((s) => ({ bytes: Buffer.from(`{"items":"${s}"`), kind: 'truncated' })),
    },
    {
      weight: 1,
      arbitrary: fromSchema(doc, schema).map((v) => ({
        bytes: Buffer.from(JSON.stringify(v).replace(/"[^"]*"/, '"\\ud800\\u0000"')),
        kind: 'escapes',
      })),
    },
  );
}

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/json;;',
  '',
];
const ENCODINGS = ['', '', '', 'gzip', 'gzip!', 'deflate', 'br', 'identity', 'compress', 'gzip, gzip'];

function encodeBody(bytes: Buffer, encoding: string): { bytes: Buffer; header?: string } {
  switch (encoding) {
    case '':
      return { bytes };
    case 'gzip':
      return { bytes: gzipSync(bytes), header: 'gzip' };
    case 'gzip!':
      return { bytes, header: 'gzip' };
    case 'deflate':
      return { bytes: deflateSync(bytes), header: 'deflate' };
    default:
      return { bytes, header: encoding };
  }
}

/** Requests for one operation of the OpenAPI document: parameters, headers and bodies, valid and not. */
export function requestsFor(doc: Json, path: string, method: string, world: FuzzWorld): fc.Arbitrary<FuzzRequest> {
  const op = doc.paths[path][method];
  const parameters: Parameter[] = op.parameters ?? [];
  const pathParams = parameters.filter((p) => p.in === 'path');
  const queryParams = parameters.filter((p) => p.in === 'query');
  const bodySchema = op.requestBody?.content?.['application/json']?.schema;

  // an empty, `.` or `..` segment is another URL (the list route, or a parent path), not this operation
  const pathArb = fc.tuple(
    ...pathParams.map((p) =>
      parameterValue(doc, p, world)
        .map((v) => v[0]!)
        .filter((v) => v !== '' && v !== '.' && v !== '..')
        .map((v) => [p.name, v] as const),
    ),
  );
  const queryArb = fc.tuple(
    ...queryParams.map((p) =>
      fc
        .oneof(
          { weight: p.required ? 1 : 3, arbitrary: fc.constant(undefined) },
          { weight: 4, arbitrary: parameterValue(doc, p, world) },
        )
        .map((values) => [p.name, values] as const),
    ),
  );
  const unknownParams = fc.array(
    fc.tuple(
      fc.oneof(fc.constantFrom('api_key', 'sort_by[]', 'x', 'limit[]', '__proto__', 'constructor'), nastyString),
      nastyString,
    ),
    { maxLength: 2 },
  );
  const keyArb = fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...world.keys) },
    { weight: 1, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.oneof(nastyString, fc.constant('cinv_adm_' + 'A'.repeat(36))) },
  );
  const bodyArb = bodySchema
    ? fc
        .tuple(bodyArbitrary(doc, bodySchema), fc.constantFrom(...CONTENT_TYPES), fc.constantFrom(...ENCODINGS))
        .map(([body, type, encoding]) => ({ ...body, type, encoding }))
    : fc.constant(undefined);

  return fc
    .tuple(
      pathArb,
      queryArb,
      unknownParams,
      keyArb,
      bodyArb,
      fc.constantFrom('application/json', '*/*', 'text/csv', 'text/html', ''),
    )
    .map(([pathValues, queryValues, unknown, key, body, accept]) => {
      let url = path;
      for (const [name, value] of pathValues) url = url.replace(`{${name}}`, encode(value));
      const query: string[] = [];
      for (const [name, values] of queryValues)
        for (const value of values ?? []) query.push(`${encode(name)}=${encode(value)}`);
      for (const [name, value] of unknown) query.push(`${encode(name)}=${encode(value)}`);
      if (query.length > 0) url += `?${query.join('&')}`;
      const headers: Record<string, string> = {};
      if (key !== undefined) headers['x-api-key'] = key.replace(/[^\x20-\x7e]/g, '?');
      if (accept) headers.accept = accept;
      let bytes: Buffer | undefined;
      if (body) {
        const encoded = encodeBody(body.bytes, body.encoding);
        bytes = encoded.bytes;
        if (body.type) headers['content-type'] = body.type;
        if (encoded.header) headers['content-encoding'] = encoded.header;
      }
      const describe = `${method.toUpperCase()} ${url.slice(0, 300)} ${JSON.stringify({ ...headers, 'x-api-key': key ? '<key>' : undefined })}${body ? ` body(${body.kind}, ${body.bytes.length} B): ${body.bytes.toString('utf8', 0, 200)}` : ''}`;
      return { method: method.toUpperCase(), path: url, headers, body: bytes, describe };
    });
}
