import type { TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FieldError } from './errors.js';

// ajv-formats is published as CommonJS with a default export
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** Coerces query and path strings into the declared types and fills declared defaults. */
const requestAjv = addFormats(new Ajv({ coerceTypes: 'array', useDefaults: true, allErrors: true, strict: false }));
/** Bodies are JSON already: types are checked as sent, never coerced. */
const bodyAjv = addFormats(new Ajv({ useDefaults: true, allErrors: true, strict: false }));
/** Response checks (tests) must not coerce: a mismatch is a bug. */
const responseAjv = addFormats(new Ajv({ allErrors: true, strict: false }));

export const compileRequest = (schema: TSchema): ValidateFunction => requestAjv.compile(schema);
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
export function toFieldErrors(errors: ErrorObject[] | null | undefined, location: FieldError['location']): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const error of errors ?? []) {
    const field = fieldOf(error);
    const key = `${field}:${error.keyword}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const message = error.keyword === 'additionalProperties' ? 'is not allowed' : (error.message ?? 'is invalid');
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
