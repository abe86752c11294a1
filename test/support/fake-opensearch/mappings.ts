/** Index mappings at write time: documents checked against them, and mapping updates merged into them. */
import { badRequest, mapperParsing } from './errors.js';
import { dynamicOf, isObjectMapping, kindOfType, toScalar } from './fields.js';
import { isObject, type Json } from './json.js';

export const routingRequired = (mappings: Json) => isObject(mappings._routing) && mappings._routing.required === true;

/** The type of a field's mapping as OpenSearch names it: objects are `object` whether or not they say so. */
const mappedType = (definition: Json): string => String(definition.type ?? 'object');

/** Why `added` cannot be merged into the properties `held` (a field whose type would change), or undefined. */
export function mappingConflict(held: Json, added: Json, prefix = ''): string | undefined {
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

/**
 * Checks a document at index time as OpenSearch's document parser would: strict objects reject
 * undeclared fields, typed leaves reject values they cannot hold.
 */
export function validateDocument(source: unknown, mappings: Json): void {
  if (!isObject(source)) throw mapperParsing('failed to parse, document is empty or not an object');
  validateFields(source, mappings, dynamicOf(mappings, 'true'), '');
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
    const childDynamic = dynamicOf(definition, dynamic);
    if (rest.length > 0) return validateField(rest, value, definition, childDynamic, path);
    for (const item of items) {
      if (!isObject(item)) throw mapperParsing(`object mapping for [${path}] found a concrete value`);
      validateFields(item, definition, childDynamic, path);
    }
    return;
  }
  const type = String(definition.type);
  if (rest.length > 0) throw mapperParsing(`Existing mapping for [${path}] must be of type object but found [${type}]`);
  const kind = kindOfType(type);
  const rejected = items.find((item) => (kind ? toScalar(kind, item) === undefined : isObject(item)));
  if (rejected !== undefined) {
    throw mapperParsing(
      `failed to parse field [${path}] of type [${type}]. Preview of field's value: '${JSON.stringify(rejected)}'`,
    );
  }
}

/**
 * OpenSearch reports index settings as strings below `index`, whatever form they were given in;
 * the fake keeps deeper settings flat (`analysis.analyzer…`), as `flat_settings=true` shows them.
 */
export function normalizeSettings(settings: unknown): Json {
  const normalized: Json = {};
  const walk = (object: Json, prefix: string): void => {
    for (const [key, value] of Object.entries(object)) {
      const path = `${prefix}${key}`.replace(/^index\./, '');
      if (isObject(value)) walk(value, `${path}.`);
      else normalized[path] = String(value);
    }
  };
  walk(isObject(settings) ? settings : {}, '');
  return normalized;
}
