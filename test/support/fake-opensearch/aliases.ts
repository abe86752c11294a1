/** Aliases: atomic alias actions, and looking aliases up. */
import { concreteIndices, validateAliasName, type Cluster, type IndexTable } from './cluster.js';
import { acknowledged, OpenSearchError, ok, unsupported, validationFailed, type Reply } from './errors.js';
import { asArray, type Json } from './json.js';
import { isPattern, objectParams, patternRegExp, singleEntry } from './params.js';

/** `index`/`indices` and `alias`/`aliases` parameters of alias actions: one name or a list. */
function nameList(params: Json, single: string, plural: string): string[] {
  const names = params[single] !== undefined ? [params[single]] : asArray(params[plural]);
  if (names.length === 0) throw validationFailed(`One of [${single}] or [${plural}] is required`);
  return names.map(String);
}

/** Alias actions are applied to a draft of the index table, which replaces the real one only if every action succeeded. */
export function updateAliases(cluster: Cluster, body: unknown): Reply {
  const { actions } = objectParams(body, 'aliases request', ['actions']);
  if (!Array.isArray(actions) || actions.length === 0) throw validationFailed('no actions specified');
  const draft = new Map(
    [...cluster.indices].map(([name, index]) => [name, { ...index, aliases: new Set(index.aliases) }]),
  );
  for (const action of actions) applyAliasAction(draft, action);
  cluster.indices = draft;
  return acknowledged();
}

function applyAliasAction(draft: IndexTable, action: unknown): void {
  const [type, body] = singleEntry(action, 'alias action');
  if (type !== 'add' && type !== 'remove') throw unsupported(`alias action [${type}]`);
  const params = objectParams(body, type, ['index', 'indices', 'alias', 'aliases']);
  const targets = concreteIndices(draft, nameList(params, 'index', 'indices'));
  const aliases = nameList(params, 'alias', 'aliases');
  if (type === 'add') {
    for (const alias of aliases) validateAliasName(draft, alias);
    for (const index of targets) aliases.forEach((alias) => index.aliases.add(alias));
    return;
  }
  const patterns = aliases.map(patternRegExp);
  let removed = false;
  for (const index of targets) {
    for (const alias of index.aliases) {
      if (patterns.some((pattern) => pattern.test(alias))) removed = index.aliases.delete(alias) || removed;
    }
  }
  if (removed) return;
  const names = aliases.join(',');
  const details = { 'resource.type': 'aliases', 'resource.id': names };
  throw new OpenSearchError(404, 'aliases_not_found_exception', `aliases [${names}] missing`, details);
}

/** GET /_alias/{name}: the indices behind the named aliases; exact names that match nothing make it a 404. */
export function getAliases(cluster: Cluster, nameExpression: string): Reply {
  const names = nameExpression.split(',');
  const patterns = names.map(patternRegExp);
  const found = new Set<string>();
  const result: Json = {};
  for (const index of cluster.resolve()) {
    const aliases = [...index.aliases].filter((alias) => patterns.some((pattern) => pattern.test(alias)));
    aliases.forEach((alias) => found.add(alias));
    if (aliases.length > 0) result[index.name] = { aliases: Object.fromEntries(aliases.map((alias) => [alias, {}])) };
  }
  const missing = names.filter((name) => !isPattern(name) && !found.has(name));
  if (missing.length === 0) return ok(result);
  const error = `alias${missing.length > 1 ? 'es' : ''} [${missing.join(',')}] missing`;
  return { status: 404, body: { error, status: 404, ...result } };
}
