/**
 * Structural diff of two JSON values, for the change timeline: objects are compared key by key,
 * arrays element by element along their longest common subsequence (so an inserted container or
 * condition shows as one added element, not as every later element changed), and an element that
 * was replaced by one of the same shape is diffed inside. Strings are never compared as JSON text.
 */

export type DiffNode =
  | { kind: 'same'; value: unknown }
  | { kind: 'added'; value: unknown }
  | { kind: 'removed'; value: unknown }
  | { kind: 'changed'; old: unknown; new: unknown }
  | { kind: 'object'; entries: { key: string; node: DiffNode }[] }
  | { kind: 'array'; items: ArrayItem[] };

export interface ArrayItem {
  /** Positions in the old and new arrays (absent for an added / removed element). */
  oldIndex?: number;
  newIndex?: number;
  node: DiffNode;
}

/** Above this many element pairs the arrays are compared by position (the subsequence is quadratic). */
const LCS_LIMIT = 250_000;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** JSON with sorted keys: two values are equal when their canonical texts are. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

export function diff(before: unknown, after: unknown): DiffNode {
  if (before === undefined && after !== undefined) return { kind: 'added', value: after };
  if (after === undefined && before !== undefined) return { kind: 'removed', value: before };
  if (canonical(before) === canonical(after)) return { kind: 'same', value: after };
  if (isObject(before) && isObject(after)) return diffObjects(before, after);
  if (Array.isArray(before) && Array.isArray(after)) return diffArrays(before as Json[], after as Json[]);
  return { kind: 'changed', old: before, new: after };
}

function diffObjects(before: Record<string, unknown>, after: Record<string, unknown>): DiffNode {
  const keys = [...Object.keys(before), ...Object.keys(after).filter((key) => !(key in before))];
  return { kind: 'object', entries: keys.map((key) => ({ key, node: diff(before[key], after[key]) })) };
}

/** Pairs of equal elements along a longest common subsequence, as [oldIndex, newIndex]. */
function commonSubsequence(before: string[], after: string[]): [number, number][] {
  const n = before.length;
  const m = after.length;
  if (n * m > LCS_LIMIT) {
    const pairs: [number, number][] = [];
    for (let i = 0; i < Math.min(n, m); i++) if (before[i] === after[i]) pairs.push([i, i]);
    return pairs;
  }
  // lengths[i][j]: the subsequence length of before[i..] and after[j..]
  const lengths = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lengths[i]![j] =
        before[i] === after[j] ? lengths[i + 1]![j + 1]! + 1 : Math.max(lengths[i + 1]![j]!, lengths[i]![j + 1]!);
    }
  }
  const pairs: [number, number][] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (before[i] === after[j]) pairs.push([i++, j++]);
    else if (lengths[i + 1]![j]! >= lengths[i]![j + 1]!) i++;
    else j++;
  }
  return pairs;
}

const sameShape = (a: unknown, b: unknown): boolean =>
  (isObject(a) && isObject(b)) || (Array.isArray(a) && Array.isArray(b));

function diffArrays(before: Json[], after: Json[]): DiffNode {
  const pairs = commonSubsequence(before.map(canonical), after.map(canonical));
  const items: ArrayItem[] = [];
  let i = 0;
  let j = 0;
  // between two matched pairs, old elements were removed and new ones added; those of the same
  // shape at the same offset in the gap are one element changed in place
  const gap = (untilOld: number, untilNew: number) => {
    while (i < untilOld || j < untilNew) {
      if (i < untilOld && j < untilNew && sameShape(before[i], after[j])) {
        items.push({ oldIndex: i, newIndex: j, node: diff(before[i], after[j]) });
        i++;
        j++;
      } else if (i < untilOld) {
        items.push({ oldIndex: i, node: { kind: 'removed', value: before[i] } });
        i++;
      } else {
        items.push({ newIndex: j, node: { kind: 'added', value: after[j] } });
        j++;
      }
    }
  };
  for (const [oldIndex, newIndex] of pairs) {
    gap(oldIndex, newIndex);
    items.push({ oldIndex, newIndex, node: { kind: 'same', value: after[newIndex] } });
    i = oldIndex + 1;
    j = newIndex + 1;
  }
  gap(before.length, after.length);
  return { kind: 'array', items };
}

/** How many leaves changed, were added or removed. */
export function changeCount(node: DiffNode): number {
  switch (node.kind) {
    case 'same':
      return 0;
    case 'object':
      return node.entries.reduce((sum, entry) => sum + changeCount(entry.node), 0);
    case 'array':
      return node.items.reduce((sum, item) => sum + changeCount(item.node), 0);
    default:
      return 1;
  }
}
