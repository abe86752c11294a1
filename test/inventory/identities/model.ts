import type { IdentificationRule, IdentityKey } from '../../../src/inventory/identities/rules.js';

/**
 * The documented identification rule written again, small and differently, for the property tests
 * to compare the identities the worker stores with: a person's merges first, then each rule,
 * strongest first, joins the groups its values connect when every pair of them may be one thing
 * (no keep-apart between them, no exclusive rule with values on both sides and none in common) and
 * none of them is held by an earlier conflict; otherwise the connected groups stay apart, are held,
 * and raise a conflict (once per set of groups) — unless a person kept every pair of them apart.
 * Groups and components are fixed points of pairwise joining over plain arrays, not union-finds.
 */

export type Keys = Partial<Record<IdentityKey, string[]>>;
export interface ModelDecision {
  action: 'merge' | 'keep_apart';
  ids: string[];
}
export interface ModelPartition {
  groups: string[][];
  /** Each conflict's groups. */
  conflicts: string[][][];
}

/** Groups sorted inside and by their first member: one spelling for a set of disjoint sets. */
export const canonical = (groups: readonly (readonly string[])[]): string[][] =>
  groups.map((g) => [...g].sort()).sort((a, b) => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : 0));

export const canonicalConflicts = (conflicts: readonly (readonly string[][])[]): string[][][] =>
  conflicts
    .map((c) => canonical(c))
    .sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : JSON.stringify(a) > JSON.stringify(b) ? 1 : 0));

/** A rule's values of one observation: one per combination of its keys' values, none when a key has none. */
export function valuesOfRule(rule: IdentificationRule, keys: Keys): string[] {
  return rule.keys
    .reduce<string[][]>(
      (combos, key) => combos.flatMap((c) => (keys[key] ?? []).map((v) => [...c, `${key}:${v}`])),
      [[]],
    )
    .map((combo) => combo.join('|'));
}

/** Joins any two related sets, again and again, until no two are related. */
function joinedWhile<T>(sets: readonly T[][], related: (a: T[], b: T[]) => boolean): T[][] {
  const out = sets.map((s) => [...s]);
  for (let again = true; again;) {
    again = false;
    for (let i = 0; i < out.length && !again; i++)
      for (let j = i + 1; j < out.length && !again; j++)
        if (related(out[i]!, out[j]!)) {
          out[i] = [...out[i]!, ...out.splice(j, 1)[0]!];
          again = true;
        }
  }
  return out;
}

export function modelPartition(
  observations: ReadonlyMap<string, Keys>,
  rules: readonly IdentificationRule[],
  decisions: readonly ModelDecision[] = [],
): ModelPartition {
  const present = (d: ModelDecision) => d.ids.filter((id) => observations.has(id));
  const merges = decisions.filter((d) => d.action === 'merge').map(present);
  const aparts = decisions.filter((d) => d.action === 'keep_apart').map(present);
  const touches = (group: readonly string[], ids: readonly string[]) => ids.some((id) => group.includes(id));
  const valuesOf = (rule: IdentificationRule, group: readonly string[]) =>
    new Set(group.flatMap((id) => valuesOfRule(rule, observations.get(id)!)));
  const keptApart = (a: string[], b: string[]) => aparts.some((ids) => touches(a, ids) && touches(b, ids));
  const contradict = (a: string[], b: string[]) =>
    rules.some((rule) => {
      if (!rule.exclusive) return false;
      const [va, vb] = [valuesOf(rule, a), valuesOf(rule, b)];
      return va.size > 0 && vb.size > 0 && ![...va].some((v) => vb.has(v));
    });

  let groups = joinedWhile(
    [...observations.keys()].map((id) => [id]),
    (a, b) => merges.some((ids) => touches(a, ids) && touches(b, ids)),
  );
  const held = new Set<string>();
  const conflicts = new Map<string, string[][]>();
  for (const rule of rules) {
    const share = (a: string[], b: string[]) => {
      const va = valuesOf(rule, a);
      return [...valuesOf(rule, b)].some((v) => va.has(v));
    };
    const components = joinedWhile(
      groups.map((g) => [g]),
      (as, bs) => as.some((a) => bs.some((b) => share(a, b))),
    );
    groups = components.flatMap((parts) => {
      if (parts.length === 1) return parts;
      const pairs = parts.flatMap((a, i) => parts.slice(i + 1).map((b) => [a, b] as const));
      const isHeld = parts.some((g) => g.some((id) => held.has(id)));
      if (!isHeld && pairs.every(([a, b]) => !keptApart(a, b) && !contradict(a, b))) return [parts.flat()];
      if (!isHeld && pairs.every(([a, b]) => keptApart(a, b))) return parts;
      for (const id of parts.flat()) held.add(id);
      const raised = canonical(parts);
      conflicts.set(JSON.stringify(raised), raised);
      return parts;
    });
  }
  return { groups: canonical(groups), conflicts: canonicalConflicts([...conflicts.values()]) };
}
