import { isDeepStrictEqual } from 'node:util';

/** One field-level change; values are real JSON (arrays stay arrays, objects stay objects). */
export interface FieldChange {
  field: string;
  old_value: unknown;
  new_value: unknown;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const normal = (value: unknown): unknown => (value === undefined ? null : value);

/**
 * Appends the changes between two JSON values under dotted paths. Objects are descended into;
 * arrays and scalars are compared as whole values, so a changed list of conditions is one change
 * holding both lists.
 */
export function diffValues(path: string, before: unknown, after: unknown, out: FieldChange[] = []): FieldChange[] {
  const a = normal(before);
  const b = normal(after);
  if (isObject(a) && isObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const key of [...keys].sort()) diffValues(`${path}.${key}`, a[key], b[key], out);
    return out;
  }
  if (!isDeepStrictEqual(a, b)) out.push({ field: path, old_value: a, new_value: b });
  return out;
}
