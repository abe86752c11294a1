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
const compile = (path: string): Steps => path.split('.').flatMap((part) => (part.endsWith('[]') ? [part.slice(0, -2), '[]'] : [part]));

const compiled = new Map<string, { raw: Steps[]; type: Steps[] }>();

export function volatileRules(ciType: string): { raw: Steps[]; type: Steps[] } {
  const family = ciType.slice(0, ciType.indexOf('.'));
  let rules = compiled.get(family);
  if (!rules) {
    const source = (Object.hasOwn(VOLATILE_BY_FAMILY, family) ? VOLATILE_BY_FAMILY[family] : undefined) ?? DEFAULT_RULES;
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
