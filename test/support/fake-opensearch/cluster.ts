/** The state of the fake cluster: its indices (with their aliases and documents), index templates and injected item failures. */
import { randomBytes } from 'node:crypto';
import { badRequest, indexNotFound } from './errors.js';
import { asArray, deepMerge, section, type Json } from './json.js';
import { normalizeSettings } from './mappings.js';
import { isPattern, patternRegExp, wildcardRegExp } from './params.js';
import type { ItemFailure, StoredDocument } from './types.js';

export interface StoredDoc extends StoredDocument {
  seqNo: number;
}

export interface IndexState {
  name: string;
  uuid: string;
  mappings: Json;
  /** Normalized settings, shown below `settings.index`. */
  settings: Json;
  aliases: Set<string>;
  docs: Map<string, StoredDoc>;
  nextSeqNo: number;
}

export type IndexTable = Map<string, IndexState>;

export const aliasTargets = (indices: IndexTable, alias: string) =>
  [...indices.values()].filter((index) => index.aliases.has(alias));

const INVALID_INDEX_CHARACTERS = /[\\/*?"<>| ,#:]/;

function validateIndexName(name: string, exception = 'invalid_index_name_exception'): void {
  const invalid = (why: string) =>
    badRequest(exception, `Invalid index name [${name}], ${why}`, { index: name, index_uuid: '_na_' });
  if (name !== name.toLowerCase()) throw invalid('must be lowercase');
  if (/^[-_+]/.test(name)) throw invalid("must not start with '_', '-', or '+'");
  if (INVALID_INDEX_CHARACTERS.test(name))
    throw invalid('must not contain the following characters [ , ", *, \\, <, |, ,, >, /, ?, #, :]');
  if (name === '.' || name === '..') throw invalid("must not be '.' or '..'");
}

export function validateAliasName(indices: IndexTable, alias: string): void {
  validateIndexName(alias, 'invalid_alias_name_exception');
  if (indices.has(alias)) {
    const reason = `Invalid alias name [${alias}]: an index or data stream exists with the same name as the alias`;
    throw badRequest('invalid_alias_name_exception', reason);
  }
}

/** Concrete indices named by exact names or wildcards; aliases are refused, as in destructive operations. */
export function concreteIndices(indices: IndexTable, expressions: string[]): IndexState[] {
  return expressions.flatMap((expression) => {
    if (isPattern(expression))
      return [...indices.values()].filter((index) => patternRegExp(expression).test(index.name));
    const index = indices.get(expression);
    if (index) return [index];
    if (aliasTargets(indices, expression).length > 0) {
      const reason = `The provided expression [${expression}] matches an alias, specify the corresponding concrete indices instead.`;
      throw badRequest('illegal_argument_exception', reason);
    }
    throw indexNotFound(expression);
  });
}

export class Cluster {
  indices: IndexTable = new Map();
  readonly templates = new Map<string, Json>();
  readonly itemFailures = new Map<string, { failure: ItemFailure; remaining: number }>();

  /** Indices named by names, aliases or wildcards, for reads; a missing exact name is an error. */
  resolve(expression = '_all'): IndexState[] {
    const resolved = new Set<IndexState>();
    for (const part of expression.split(',').filter(Boolean)) {
      if (isPattern(part)) {
        const pattern = patternRegExp(part);
        for (const index of this.indices.values()) {
          if (pattern.test(index.name) || [...index.aliases].some((alias) => pattern.test(alias))) resolved.add(index);
        }
        continue;
      }
      const index = this.indices.get(part);
      const targets = index ? [index] : aliasTargets(this.indices, part);
      if (targets.length === 0) throw indexNotFound(part);
      targets.forEach((target) => resolved.add(target));
    }
    return [...resolved];
  }

  /** Creates an index from the request merged over the matching template, as explicit creation and auto-creation both do. */
  addIndex(name: string, request: Json): IndexState {
    validateIndexName(name);
    const existing = this.indices.get(name);
    if (existing) {
      const details = { index: name, index_uuid: existing.uuid };
      throw badRequest('resource_already_exists_exception', `index [${name}/${existing.uuid}] already exists`, details);
    }
    if (aliasTargets(this.indices, name).length > 0) {
      const reason = `Invalid index name [${name}], already exists as alias`;
      throw badRequest('invalid_index_name_exception', reason, { index: name });
    }
    const template = this.templateFor(name);
    const aliases = [...Object.keys(section(template, 'aliases')), ...Object.keys(section(request, 'aliases'))];
    for (const alias of aliases) validateAliasName(this.indices, alias);
    const uuid = randomBytes(16).toString('base64url');
    const settings = { ...normalizeSettings(template.settings), ...normalizeSettings(request.settings) };
    const created = { uuid, provided_name: name, creation_date: String(Date.now()) };
    const index: IndexState = {
      name,
      uuid,
      mappings: structuredClone(deepMerge(section(template, 'mappings'), section(request, 'mappings'))),
      settings: { number_of_shards: '1', number_of_replicas: '1', ...settings, ...created },
      aliases: new Set(aliases),
      docs: new Map(),
      nextSeqNo: 0,
    };
    this.indices.set(name, index);
    return index;
  }

  /** Composable templates: only the highest-priority template matching the name applies. */
  private templateFor(indexName: string): Json {
    let best: Json | undefined;
    for (const template of this.templates.values()) {
      const patterns = asArray(template.index_patterns).map((pattern) => wildcardRegExp(String(pattern)));
      const matches = patterns.some((pattern) => pattern.test(indexName));
      if (matches && (!best || Number(template.priority ?? 0) > Number(best.priority ?? 0))) best = template;
    }
    return section(best, 'template');
  }
}
