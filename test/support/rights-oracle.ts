/**
 * An independent model of the data-scope rule for tests: a set of scopes is the set of
 * (source, instance) cells it covers over a universe that includes a source and an instance
 * nobody names, so "a whole source" and "all data" differ from any list of what exists today.
 */

export interface ScopeView {
  source_id: string | null;
  scope_id: string | null;
}

export interface Rights {
  superadmin?: boolean;
  permissions: readonly string[];
  scopes: 'all' | readonly ScopeView[];
}

const UNNAMED = '\u0000unnamed';

function cells(
  scopes: 'all' | readonly ScopeView[],
  sources: readonly string[],
  instances: readonly string[],
): Set<string> {
  const covered = new Set<string>();
  for (const source of sources) {
    for (const instance of instances) {
      const hit =
        scopes === 'all' ||
        scopes.some(
          (s) => s.source_id === null || (s.source_id === source && (s.scope_id === null || s.scope_id === instance)),
        );
      if (hit) covered.add(`${source}/${instance}`);
    }
  }
  return covered;
}

const named = (rights: Rights) => (rights.scopes === 'all' ? [] : rights.scopes);

/** Whether `caller` holds everything `wanted` holds. */
export function contains(caller: Rights, wanted: Rights, knownSources: readonly string[]): boolean {
  if (caller.superadmin) return true;
  if (wanted.superadmin) return false;
  const held = new Set(caller.permissions);
  if (!wanted.permissions.every((p) => held.has(p))) return false;
  const both = [...named(caller), ...named(wanted)];
  const sources = [...new Set([...knownSources, ...both.flatMap((s) => (s.source_id ? [s.source_id] : [])), UNNAMED])];
  const instances = [...new Set([...both.flatMap((s) => (s.scope_id ? [s.scope_id] : [])), UNNAMED])];
  const mine = cells(caller.scopes, sources, instances);
  return [...cells(wanted.scopes, sources, instances)].every((cell) => mine.has(cell));
}
