/** JSON values as the fake sees them in request bodies, mappings and documents. */
export type Json = Record<string, unknown>;
export type Scalar = string | number | boolean;

export const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export const isScalar = (value: unknown): value is Scalar => ['string', 'number', 'boolean'].includes(typeof value);

export const asArray = (value: unknown): unknown[] =>
  value === undefined ? [] : Array.isArray(value) ? value : [value];

/** The object under `key`, or an empty one: mappings, settings and aliases sections are all optional. */
export const section = (source: Json | undefined, key: string): Json =>
  isObject(source?.[key]) ? (source[key] as Json) : {};

export function deepMerge(base: Json, override: Json): Json {
  const merged: Json = { ...base };
  for (const [key, value] of Object.entries(override)) {
    const current = merged[key];
    merged[key] = isObject(value) && isObject(current) ? deepMerge(current, value) : value;
  }
  return merged;
}
