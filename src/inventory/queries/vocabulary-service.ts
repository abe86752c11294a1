import type { Sql } from 'postgres';
import { can, type Principal } from '../../platform/auth/principal.js';
import type { AppContext } from '../../context.js';
import { DEPENDENT_END } from '../relationships/schema.js';
import { QUERY_FIELDS, fieldText } from './fields.js';
import { ciTypesVisible, pathsOfSample, relationshipTypesOfSample, type PathWalk } from './vocabulary-store.js';

export interface VocabularyInput {
  ci_type?: string;
  prefix?: string;
}

export interface Vocabulary {
  ci_types: string[];
  relationship_types: string[];
  fields: string[];
  paths: string[];
}

/** How many CIs the paths and relationship types are sampled from, how deep and how many paths are listed. */
const SAMPLE_SIZE = 200;
const PATH_DEPTH = 4;
const PATH_LIMIT = 500;
/** Paths read before the typed segment narrows them, so that narrowing still leaves PATH_LIMIT to list. */
const PATHS_READ = 5_000;
const ROOTS = ['raw_data', 'type_data'] as const;
const NOWHERE = { offset: 0, line: 1, column: 1, end: 0 };

/**
 * A path prefix cut into its whole segments and the one being typed: dots inside a quoted segment
 * (`labels."app.kubernetes.io/name"`) do not cut.
 */
export function splitPrefix(prefix: string): { whole: string[]; typed: string } {
  const whole: string[] = [];
  let current = '';
  let quoted = false;
  for (let i = 0; i < prefix.length; i++) {
    const char = prefix[i]!;
    if (quoted && char === '\\' && i + 1 < prefix.length) {
      current += prefix[++i];
    } else if (char === '"') {
      quoted = !quoted;
    } else if (char === '.' && !quoted) {
      whole.push(current);
      current = '';
    } else {
      current += char;
    }
  }
  return { whole, typed: current };
}

/** Where to walk for the paths a prefix begins: the document it names and the segments below it, or both documents. */
function walksFor(prefix: string | undefined): PathWalk[] {
  const { whole } = splitPrefix(prefix ?? '');
  if (whole.length === 0)
    return ROOTS.filter((root) => prefix === undefined || root.startsWith(prefix) || prefix.startsWith(root)).map(
      (root) => ({ root, under: [], depth: PATH_DEPTH }),
    );
  const [root, ...under] = whole;
  const known = ROOTS.find((name) => name === root);
  return known ? [{ root: known, under, depth: PATH_DEPTH }] : [];
}

/** The relationship types a caller may name: the known ones, and those of the sample for one who may read relationships. */
async function relationshipTypes(sql: Sql, principal: Principal, ciType: string | undefined): Promise<string[]> {
  const known = Object.keys(DEPENDENT_END);
  if (!can(principal, 'relationships', 'read')) return known.sort();
  const present = await relationshipTypesOfSample(sql, principal, { ciType, size: SAMPLE_SIZE });
  return [...new Set([...known, ...present])].sort();
}

/**
 * What a query editor completes: the CI types, relationship types, fields and the JSON paths of a
 * bounded sample of recent CIs, all inside the caller's data scopes.
 */
export async function queryVocabulary(
  app: AppContext,
  principal: Principal,
  input: VocabularyInput,
): Promise<Vocabulary> {
  const { sql } = app;
  const sample = { ciType: input.ci_type, size: SAMPLE_SIZE };
  const segments = await pathsOfSample(sql, principal, sample, walksFor(input.prefix), PATHS_READ);
  const paths = segments
    .map(([root, ...path]) => fieldText({ name: root!, path, at: NOWHERE }))
    .filter((text) => input.prefix === undefined || text.startsWith(input.prefix))
    .slice(0, PATH_LIMIT);
  return {
    ci_types: await ciTypesVisible(sql, principal),
    relationship_types: await relationshipTypes(sql, principal, input.ci_type),
    fields: Object.keys(QUERY_FIELDS),
    paths,
  };
}
