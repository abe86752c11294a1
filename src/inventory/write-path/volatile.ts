/**
 * Paths that change on every collection without saying anything about the object (resource
 * versions, heartbeats). They are left out of the content hash and of field diffs, so that an
 * unchanged object re-collected writes nothing. `[]` steps into every element of an array.
 */
const VOLATILE_BY_FAMILY: Record<string, { raw: string[]; type: string[] }> = {
  k8s: {
    raw: [
      'metadata.resourceVersion',
      'metadata.managedFields',
      'status.conditions[].lastHeartbeatTime',
      'status.conditions[].lastProbeTime',
      'spec.renewTime',
    ],
    type: ['metrics'],
  },
};
const DEFAULT_RULES = { raw: [] as string[], type: ['metrics'] };

type Steps = (string | '[]')[];
const compile = (path: string): Steps =>
  path.split('.').flatMap((part) => (part.endsWith('[]') ? [part.slice(0, -2), '[]'] : [part]));

const compiled = new Map<string, { raw: Steps[]; type: Steps[] }>();

export function volatileRules(ciType: string): { raw: Steps[]; type: Steps[] } {
  const family = ciType.slice(0, ciType.indexOf('.'));
  let rules = compiled.get(family);
  if (!rules) {
    const source =
      (Object.hasOwn(VOLATILE_BY_FAMILY, family) ? VOLATILE_BY_FAMILY[family] : undefined) ?? DEFAULT_RULES;
    rules = { raw: source.raw.map(compile), type: source.type.map(compile) };
    compiled.set(family, rules);
  }
  return rules;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function without(value: unknown, steps: Steps): unknown {
  const [head, ...rest] = steps;
  if (head === undefined) return value;
  if (head === '[]') return Array.isArray(value) ? value.map((item) => without(item, rest)) : value;
  if (!isObject(value) || !(head in value)) return value;
  const copy = { ...value };
  if (rest.length === 0) delete copy[head];
  else copy[head] = without(value[head], rest);
  return copy;
}

/** A copy of `value` without the given volatile paths; the input is never modified. */
export function stripVolatile(value: Record<string, unknown>, rules: readonly Steps[]): Record<string, unknown> {
  return rules.reduce<unknown>((acc, steps) => without(acc, steps), value) as Record<string, unknown>;
}

type Masked = [holder: Record<string, unknown>, key: string, value: unknown];

function collect(value: unknown, steps: Steps, from: number, out: Masked[]): void {
  const head = steps[from];
  if (head === undefined) return;
  if (head === '[]') {
    if (Array.isArray(value)) for (const item of value) collect(item, steps, from + 1, out);
    return;
  }
  if (!isObject(value) || !Object.hasOwn(value, head)) return;
  if (from === steps.length - 1) out.push([value, head, value[head]]);
  else collect(value[head], steps, from + 1, out);
}

/**
 * Runs `work` while the volatile paths of `value` read as undefined, which JSON.stringify leaves
 * out exactly as if they had been deleted, and puts them back afterwards. It serialises the
 * content without building a stripped copy of every record (the larger part of digest time on
 * bulk ingests). Records that cannot be written to (frozen) are read through a copy instead.
 */
export function withoutVolatile<T>(
  value: Record<string, unknown>,
  rules: readonly Steps[],
  work: (content: Record<string, unknown>) => T,
): T {
  if (rules.length === 0) return work(value);
  const masked: Masked[] = [];
  for (const steps of rules) collect(value, steps, 0, masked);
  if (masked.length === 0) return work(value);
  if (masked.some(([holder]) => Object.isFrozen(holder))) return work(stripVolatile(value, rules));
  for (const [holder, key] of masked) holder[key] = undefined;
  try {
    return work(value);
  } finally {
    for (let i = masked.length - 1; i >= 0; i--) masked[i]![0][masked[i]![1]] = masked[i]![2];
  }
}
