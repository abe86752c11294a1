import type { IdentificationRule } from './rules.js';
import type { IdentityKey } from './rules.js';

/** What partitioning needs of an observation: its id and its identifying keys. */
export interface Keyed {
  ciId: string;
  keys: Partial<Record<IdentityKey, string[]>>;
}

/** A person's decision that shapes the partition: these observations are one thing, or two. */
export interface PartitionDecision {
  action: 'merge' | 'keep_apart';
  ciIds: string[];
}

/** A rule that would have joined observations that something keeps apart: for a person to settle. */
export interface RaisedConflict {
  rule: string;
  /** The rule's values the observations share. */
  values: string[];
  /** The groups (observation ids) the rule matched, each already one identity. */
  groups: string[][];
}

export interface Partition {
  /** Every observation in exactly one group, each group sorted, the groups by their first id. */
  groups: string[][];
  conflicts: RaisedConflict[];
}

/** The values of a rule an observation has: every combination of its keys' values. */
export function ruleValues(rule: IdentificationRule, keys: Keyed['keys']): string[] {
  let combined = [''];
  for (const key of rule.keys) {
    const own = keys[key] ?? [];
    if (own.length === 0) return [];
    combined = combined.flatMap((prefix) => own.map((value) => `${prefix}${prefix ? ' ' : ''}${key}=${value}`));
  }
  return combined;
}

class Groups {
  private readonly parent = new Map<string, string>();
  constructor(ids: readonly string[]) {
    for (const id of ids) this.parent.set(id, id);
  }
  find(id: string): string {
    let root = id;
    while (this.parent.get(root) !== root) root = this.parent.get(root)!;
    this.parent.set(id, root);
    return root;
  }
  union(a: string, b: string): void {
    const [ra, rb] = [this.find(a), this.find(b)];
    if (ra !== rb) this.parent.set(ra < rb ? rb : ra, ra < rb ? ra : rb);
  }
  members(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const id of this.parent.keys()) {
      const root = this.find(id);
      out.set(root, [...(out.get(root) ?? []), id]);
    }
    return out;
  }
}

/**
 * Partitions observations into identities by the rules, strongest first. A person's merges come
 * before every rule. For each rule, the groups its values connect (transitively) are joined when
 * every pair of them is compatible; if any pair is not (different values of an exclusive rule, or a
 * person's keep-apart), none of them is joined and the rule raises a conflict instead: a weaker
 * rule never overrides stronger evidence, and an ambiguous match never merges silently.
 *
 * The result depends only on the set of observations, the rules and the decisions, never on the
 * order they arrived in: each step reads whole groups and whole connected sets.
 */
export function partition(
  observations: readonly Keyed[],
  rules: readonly IdentificationRule[],
  decisions: readonly PartitionDecision[] = [],
): Partition {
  const byId = new Map(observations.map((o) => [o.ciId, o]));
  const groups = new Groups([...byId.keys()].sort());
  for (const decision of decisions) {
    if (decision.action !== 'merge') continue;
    const present = decision.ciIds.filter((id) => byId.has(id));
    for (const id of present.slice(1)) groups.union(present[0]!, id);
  }
  const apart = decisions.filter((d) => d.action === 'keep_apart').map((d) => d.ciIds.filter((id) => byId.has(id)));
  const exclusive = rules.filter((rule) => rule.exclusive);
  const conflicts: RaisedConflict[] = [];

  /** Whether two groups may be one: no keep-apart between them (`decided`), no exclusive rule's values disjoint. */
  const fit = (a: readonly string[], b: readonly string[]): 'yes' | 'decided' | 'evidence' => {
    if (apart.some((pair) => pair.some((id) => a.includes(id)) && pair.some((id) => b.includes(id)))) return 'decided';
    for (const rule of exclusive) {
      const va = new Set(a.flatMap((id) => ruleValues(rule, byId.get(id)!.keys)));
      const vb = b.flatMap((id) => ruleValues(rule, byId.get(id)!.keys));
      if (va.size > 0 && vb.length > 0 && !vb.some((v) => va.has(v))) return 'evidence';
    }
    return 'yes';
  };

  // observations a rule found ambiguous: no weaker rule may join them before a person settles it
  const held = new Set<string>();
  const raised = new Set<string>();
  for (const rule of rules) {
    const members = groups.members();
    // the groups each value of this rule names
    const named = new Map<string, Set<string>>();
    for (const [root, ids] of members)
      for (const id of ids)
        for (const value of ruleValues(rule, byId.get(id)!.keys))
          named.set(value, (named.get(value) ?? new Set()).add(root));
    // the groups the rule connects, transitively, over a union-find of its own
    const linked = new Groups([...members.keys()]);
    for (const roots of named.values()) {
      const [first, ...rest] = [...roots];
      for (const root of rest) linked.union(first!, root);
    }
    for (const roots of linked.members().values()) {
      if (roots.length < 2) continue;
      const sets = roots.map((root) => members.get(root)!);
      const pairs = sets.flatMap((a, i) => sets.slice(i + 1).map((b) => fit(a, b)));
      const isHeld = sets.some((ids) => ids.some((id) => held.has(id)));
      if (!isHeld && pairs.every((p) => p === 'yes')) {
        for (const root of roots.slice(1)) groups.union(roots[0]!, root);
        continue;
      }
      // a person already kept every pair of these apart: settled, not raised
      if (!isHeld && pairs.every((p) => p === 'decided')) continue;
      for (const ids of sets) for (const id of ids) held.add(id);
      const sorted = sets.map((ids) => [...ids].sort()).sort((a, b) => a[0]!.localeCompare(b[0]!));
      // the same groups found again by a weaker rule are the same question for a person
      const fingerprint = JSON.stringify(sorted);
      if (raised.has(fingerprint)) continue;
      raised.add(fingerprint);
      const inside = new Set(roots);
      const shared = [...named].filter(([, r]) => r.size > 1 && [...r].every((root) => inside.has(root)));
      conflicts.push({ rule: rule.name, values: shared.map(([value]) => value).sort(), groups: sorted });
    }
  }
  const result = [...groups.members().values()].map((ids) => ids.sort()).sort((a, b) => a[0]!.localeCompare(b[0]!));
  return { groups: result, conflicts };
}
