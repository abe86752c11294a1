/** Index templates, indices and their mappings: the REST operations that create, describe, change and delete them. */
import { concreteIndices, type Cluster } from './cluster.js';
import { acknowledged, badRequest, errorReply, OpenSearchError, ok, validationFailed, type Reply } from './errors.js';
import { asArray, deepMerge, isObject, section, type Json } from './json.js';
import { mappingConflict, normalizeSettings } from './mappings.js';
import { isPattern, objectParams, patternRegExp } from './params.js';

export function putTemplate(cluster: Cluster, name: string, body: unknown): Reply {
  const template = objectParams(body, 'index template', ['index_patterns', 'priority', 'template', '_meta', 'version']);
  const patterns = asArray(template.index_patterns).map(String);
  if (patterns.length === 0) throw validationFailed('index patterns are missing');
  const inner = objectParams(template.template ?? {}, 'index template [template]', ['settings', 'mappings', 'aliases']);
  const settings = inner.settings === undefined ? {} : { settings: { index: normalizeSettings(inner.settings) } };
  const stored = { ...template, index_patterns: patterns, template: { ...inner, ...settings }, composed_of: [] };
  cluster.templates.set(name, structuredClone(stored));
  return acknowledged();
}

export function getTemplates(cluster: Cluster, expression: string): Reply {
  const patterns = expression.split(',').map(patternRegExp);
  const found = [...cluster.templates].filter(([name]) => patterns.some((pattern) => pattern.test(name)));
  if (found.length === 0 && !isPattern(expression)) {
    const reason = `index template matching [${expression}] not found`;
    return errorReply(new OpenSearchError(404, 'resource_not_found_exception', reason));
  }
  return ok({ index_templates: found.map(([name, template]) => ({ name, index_template: template })) });
}

export function createIndex(cluster: Cluster, name: string, body: unknown): Reply {
  cluster.addIndex(name, objectParams(body ?? {}, 'create index request', ['settings', 'mappings', 'aliases']));
  return ok({ acknowledged: true, shards_acknowledged: true, index: name });
}

export function indexExists(cluster: Cluster, expression: string): Reply {
  try {
    cluster.resolve(expression);
    return ok();
  } catch {
    return { status: 404 };
  }
}

export function getIndex(cluster: Cluster, expression: string): Reply {
  const described = cluster.resolve(expression).map((index) => {
    const aliases = Object.fromEntries([...index.aliases].map((alias) => [alias, {}]));
    return [index.name, { aliases, mappings: index.mappings, settings: { index: index.settings } }];
  });
  return ok(Object.fromEntries(described));
}

export function deleteIndex(cluster: Cluster, expression: string): Reply {
  for (const index of concreteIndices(cluster.indices, expression.split(','))) cluster.indices.delete(index.name);
  return acknowledged();
}

export function refresh(cluster: Cluster, expression?: string): Reply {
  const count = cluster.resolve(expression).length;
  return ok({ _shards: { total: count, successful: count, failed: 0 } });
}

/**
 * PUT /{index}/_mapping: adds properties to the mappings of existing indices, merged into object
 * fields at any depth. As in OpenSearch, a field mapped already keeps its type (an object field
 * is of type `object` whether or not it says so): a change is a 400 illegal_argument_exception,
 * and no index is changed.
 */
export function putMapping(cluster: Cluster, expression: string, body: unknown): Reply {
  const properties = isObject(body) && isObject(body.properties) ? body.properties : undefined;
  if (!properties) throw validationFailed('mapping source is empty');
  const indices = cluster.resolve(expression);
  for (const index of indices) {
    const conflict = mappingConflict(section(index.mappings, 'properties'), properties);
    if (conflict) throw badRequest('illegal_argument_exception', conflict);
  }
  for (const index of indices) {
    index.mappings.properties = deepMerge(section(index.mappings, 'properties'), structuredClone(properties));
  }
  return acknowledged();
}

/** GET /{index}/_mapping: each index's mappings under its name. */
export function getMapping(cluster: Cluster, expression: string): Reply {
  const mappings: Json = {};
  for (const index of cluster.resolve(expression)) mappings[index.name] = { mappings: index.mappings };
  return ok(mappings);
}
