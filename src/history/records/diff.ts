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

// own keys only: a key named `__proto__` present on one side must not read Object's prototype on the other
const own = (object: Record<string, unknown>, key: string): unknown =>
  Object.hasOwn(object, key) ? object[key] : undefined;

/**
 * Appends the changes between two JSON values under dotted paths. Objects are descended into;
 * arrays and scalars are compared as whole values, so a changed list of conditions is one change
 * holding both lists.
 */
export function diffValues(path: string, before: unknown, after: unknown, out: FieldChange[] = []): FieldChange[] {
  return differences(path, before, after, out, false);
}

/**
 * The same walk over two stored states, where a key holding null and a missing key differ (as
 * they do in the database, see cinv_jsonb_undo): the rule of the diffs between two moments, which
 * compare what was stored exactly. Absent values are reported as null.
 */
export function diffStates(path: string, before: unknown, after: unknown, out: FieldChange[] = []): FieldChange[] {
  return differences(path, before, after, out, true);
}

function differences(
  path: string,
  before: unknown,
  after: unknown,
  out: FieldChange[],
  absentDiffers: boolean,
): FieldChange[] {
  const a = normal(before);
  const b = normal(after);
  if (isObject(a) && isObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const key of [...keys].sort()) {
      const child = path === '' ? key : `${path}.${key}`;
      if (absentDiffers && Object.hasOwn(a, key) !== Object.hasOwn(b, key)) {
        out.push({ field: child, old_value: normal(own(a, key)), new_value: normal(own(b, key)) });
      } else {
        differences(child, own(a, key), own(b, key), out, absentDiffers);
      }
    }
    return out;
  }
  if (!isDeepStrictEqual(a, b)) out.push({ field: path, old_value: a, new_value: b });
  return out;
}
