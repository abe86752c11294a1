import type { TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type FormatDefinition, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FieldError } from './errors.js';

// ajv-formats is published as CommonJS with a default export
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/**
 * `date-time` as RFC 3339 writes it (ajv-formats' check) and as a JavaScript Date reads it: a leap
 * second (`23:59:60`) is valid RFC 3339, but no Date holds it, and every time a request gives is
 * read as one (date windows, keyset bounds, expiry). Refused naming the field, like any other
 * malformed time, rather than failing where it is read.
 */
function readableDateTimes(ajv: Ajv): Ajv {
  const rfc3339 = ajv.formats['date-time'] as FormatDefinition<string>;
  const valid = rfc3339.validate as (text: string) => boolean;
  ajv.addFormat('date-time', {
    ...rfc3339,
    validate: (text: string) => valid(text) && !Number.isNaN(Date.parse(text)),
  });
  return ajv;
}

/** Coerces query and path strings into the declared types and fills declared defaults. */
const requestAjv = readableDateTimes(
  addFormats(new Ajv({ coerceTypes: 'array', useDefaults: true, allErrors: true, strict: false })),
);
/** Bodies are JSON already: types are checked as sent, never coerced. */
const bodyAjv = readableDateTimes(addFormats(new Ajv({ useDefaults: true, allErrors: true, strict: false })));
/** Response checks (tests) must not coerce: a mismatch is a bug. */
const responseAjv = addFormats(new Ajv({ allErrors: true, strict: false }));

/**
 * What a name people give (a source's, a key's, a user's, a team's …) and an instance id may not
 * hold: control characters, bidirectional controls (U+202E turns the text after it around wherever
 * the name is shown: the web interface, the audit log, a terminal) and invisible format characters
 * (U+200B, U+2060, U+FEFF …), with which two names that look alike differ. Zero-width joiners and
 * non-joiners (U+200C, U+200D) are allowed: scripts and emoji sequences need them. Written as a
 * character class of the Basic Multilingual Plane, so that any JSON Schema validator reads it.
 */
const UNSHOWN =
  '\\u0000-\\u001F\\u007F-\\u009F\\u00AD\\u061C\\u180E\\u200B\\u200E\\u200F\\u202A-\\u202E\\u2060-\\u2064\\u2066-\\u206F\\uFEFF\\uFFF9-\\uFFFB';
const UNSHOWN_MESSAGE = 'control, bidirectional or invisible format characters (such as U+202E or U+200B)';

/** How a name may hold spaces: anywhere, not only spaces, or none at its start and end. */
export type NameSpaces = 'any' | 'not_blank' | 'trimmed';

/** The failure message of each name pattern, in place of ajv's "must match pattern" and the pattern. */
const patternMessages = new Map<string, string>();

/** The `pattern` of a name (or an instance id) that refuses the characters of UNSHOWN. */
export function namePattern(spaces: NameSpaces): string {
  const pattern = {
    any: `^[^${UNSHOWN}]*$`,
    not_blank: `^[^${UNSHOWN}]*[^\\s${UNSHOWN}][^${UNSHOWN}]*$`,
    trimmed: `^[^\\s${UNSHOWN}]([^${UNSHOWN}]*[^\\s${UNSHOWN}])?$`,
  }[spaces];
  const message = {
    any: `must not contain ${UNSHOWN_MESSAGE}`,
    not_blank: `must not be blank, nor contain ${UNSHOWN_MESSAGE}`,
    trimmed: `must neither start nor end with spaces, nor contain ${UNSHOWN_MESSAGE}`,
  }[spaces];
  patternMessages.set(pattern, message);
  return pattern;
}

/** Checks query or path parameters, coercing them in place; returns the failures, field by field. */
export type RequestValidator = (value: Record<string, unknown>, location: FieldError['location']) => FieldError[];

/**
 * A validator for query or path parameters. ajv coerces a string to an integer whenever
 * JavaScript's Number() reads one (`1e3`, `0x10`, `+5`, ` 5`, `5.0`, `0b1`), so integer parameters
 * are checked as text first: plain decimal digits, with a leading minus only where the schema
 * allows negative values. Anything else is refused naming the field, as ajv's own failures are.
 */
export function compileRequest(schema: TSchema): RequestValidator {
  const validate = requestAjv.compile(schema);
  const integers = integerParameters(schema);
  return (value, location) => {
    const malformed: FieldError[] = [];
    for (const [field, negative] of integers) {
      const given = value[field];
      if (given === undefined) continue;
      const texts = Array.isArray(given) ? given : [given];
      const pattern = negative ? SIGNED_DECIMAL : UNSIGNED_DECIMAL;
      if (texts.some((text) => typeof text !== 'string' || !pattern.test(text))) {
        malformed.push({
          field,
          location,
          message: negative
            ? 'must be an integer written in decimal digits (such as 10 or -10)'
            : 'must be an integer written in decimal digits (such as 10)',
        });
      }
    }
    const refused = new Set(malformed.map((e) => e.field));
    if (validate(value)) return malformed;
    return [
      ...malformed,
      ...toFieldErrors(validate.errors, location).filter((e) => !refused.has(e.field.split('.')[0]!)),
    ];
  };
}

const SIGNED_DECIMAL = /^-?[0-9]+$/;
const UNSIGNED_DECIMAL = /^[0-9]+$/;

interface SchemaNode {
  type?: string | string[];
  items?: SchemaNode;
  anyOf?: SchemaNode[];
  oneOf?: SchemaNode[];
  minimum?: number;
  exclusiveMinimum?: number;
  properties?: Record<string, SchemaNode>;
}

/** Whether a parameter's every accepted form is an integer (a string alternative would be text to keep). */
function integerOnly(node: SchemaNode): boolean {
  const options = node.anyOf ?? node.oneOf;
  if (options) return options.length > 0 && options.every(integerOnly);
  if (node.type === 'array' && node.items) return integerOnly(node.items);
  return node.type === 'integer';
}

function allowsNegative(node: SchemaNode): boolean {
  const options = node.anyOf ?? node.oneOf;
  if (options) return options.some(allowsNegative);
  if (node.type === 'array' && node.items) return allowsNegative(node.items);
  if (node.minimum !== undefined && node.minimum >= 0) return false;
  return !(node.exclusiveMinimum !== undefined && node.exclusiveMinimum >= -1);
}

/** The integer parameters of an object schema, each with whether it may be negative. */
function integerParameters(schema: TSchema): [string, boolean][] {
  const properties = (schema as SchemaNode).properties ?? {};
  return Object.entries(properties)
    .filter(([, node]) => integerOnly(node))
    .map(([name, node]) => [name, allowsNegative(node)]);
}
export const compileBody = (schema: TSchema): ValidateFunction => bodyAjv.compile(schema);
export const compileResponse = (schema: TSchema): ValidateFunction => responseAjv.compile(schema);

function fieldOf(error: ErrorObject): string {
  const base = error.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty: string }).missingProperty;
    return base ? `${base}.${missing}` : missing;
  }
  if (error.keyword === 'additionalProperties') {
    const extra = (error.params as { additionalProperty: string }).additionalProperty;
    return base ? `${base}.${extra}` : extra;
  }
  return base || '(root)';
}

/** ajv's errors as the envelope's field errors, one per field and keyword. */
export function toFieldErrors(
  errors: ErrorObject[] | null | undefined,
  location: FieldError['location'],
): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const error of errors ?? []) {
    const field = fieldOf(error);
    const key = `${field}:${error.keyword}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const named =
      error.keyword === 'pattern' ? patternMessages.get((error.params as { pattern: string }).pattern) : undefined;
    const message =
      error.keyword === 'additionalProperties' ? 'is not allowed' : (named ?? error.message ?? 'is invalid');
    out.push({ field, location, message });
  }
  return out;
}

/** Deeper documents are refused before anything walks them recursively (validation, storage). */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether a parsed JSON value nests deeper than `limit`. The recursion stops at `limit`, so the
 * stack stays shallow whatever the document; a plain loop over keys is several times faster than
 * an explicit stack of entries on bulk documents (hundreds of megabytes at ingest).
 */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  return deeperThan(value, 1, limit);
}

function deeperThan(node: unknown, depth: number, limit: number): boolean {
  if (typeof node !== 'object' || node === null) return false;
  if (depth > limit) return true;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i++) {
      const child: unknown = node[i];
      if (typeof child === 'object' && child !== null && deeperThan(child, depth + 1, limit)) return true;
    }
    return false;
  }
  for (const key in node) {
    const child = (node as Record<string, unknown>)[key];
    if (typeof child === 'object' && child !== null && deeperThan(child, depth + 1, limit)) return true;
  }
  return false;
}
