import { uuidv7 } from 'uuidv7';
import type { Queryable } from '../../platform/db/database.js';
import { facetsOf, type Facet, type ObservedCi } from './facets.js';
import {
  moveObservations,
  relink,
  replaceKeys,
  retireIdentities,
  syncConflicts,
  upsertIdentities,
  writeObservations,
  type ConflictWrite,
  type ObservationWrite,
} from './link-store.js';
import { partition, type Keyed } from './partition.js';
import {
  liveDecisions,
  lockTenant,
  neighbours,
  observationsOf,
  observesAny,
  openLinks,
  tenantRules,
} from './resolve-store.js';
import { rulesInForce, type IdentityKind, type KindRules } from './rules.js';

/** A component larger than this is cut off there: a value shared so widely identifies nothing anyway. */
const MAX_COMPONENT = 5000;

/**
 * Brings the identities of one tenant in line with the CIs given (as they are now; ids without a
 * row are CIs deleted since). Their facets replace their stored keys; then everything those keys
 * connect, before or after (shared values, the identities they linked, people's decisions), is
 * partitioned again by the rules, and identities, links, observations and conflicts are written to
 * match. An identity keeps its id while most of its observations stay together; the whole is one
 * transaction under the tenant's identity lock.
 */
export async function resolveIdentities(
  tx: Queryable,
  tenantId: string,
  cis: readonly ObservedCi[],
  gone: readonly string[],
  now: Date,
): Promise<void> {
  await lockTenant(tx, tenantId);
  const rules = rulesInForce(await tenantRules(tx, tenantId));
  const all = cis.flatMap(facetsOf);
  const changed = [...new Set([...cis.map((c) => c.ci_id), ...gone])];
  for (const kind of Object.keys(rules) as IdentityKind[]) {
    const facets = all.filter((f) => f.kind === kind);
    await resolveKind(tx, tenantId, kind, rules[kind]!, { cis, facets, changed }, now);
  }
}

interface Changed {
  cis: readonly ObservedCi[];
  facets: readonly Facet[];
  changed: readonly string[];
}

async function resolveKind(
  tx: Queryable,
  tenantId: string,
  kind: IdentityKind,
  rules: KindRules,
  input: Changed,
  now: Date,
) {
  const { facets, changed } = input;
  // most batches hold no observation of most kinds (pods, databases): one lookup says so
  if (facets.length === 0 && !(await observesAny(tx, kind, changed))) return;
  // the component before: what the old keys and links connect
  const component = await closure(tx, tenantId, kind, changed);
  await replaceKeys(tx, tenantId, kind, changed, facets);
  // and after: what the new keys connect too
  for (const id of await closure(tx, tenantId, kind, [...component])) component.add(id);
  const members = [...component];
  const stored = new Map((await observationsOf(tx, kind, members)).map((o) => [o.ci_id, o]));
  const fresh = new Map(facets.map((f) => [f.ciId, f]));
  const changedSet = new Set(changed);
  const keyed: Keyed[] = [
    ...facets.map((f) => ({ ciId: f.ciId, keys: f.keys })),
    ...[...stored.values()].filter((o) => !changedSet.has(o.ci_id)).map((o) => ({ ciId: o.ci_id, keys: o.keys })),
  ];
  const decisions = (await liveDecisions(tx, tenantId, kind, members)).filter((d) => d.action !== 'pin');
  const { groups, conflicts } = partition(
    keyed,
    rules.identification,
    decisions.map((d) => ({ action: d.action as 'merge' | 'keep_apart', ciIds: d.ci_ids })),
  );
  const links = await openLinks(tx, kind, members);
  const assigned = assignIds(groups, links);
  // the identities first, then what links them
  const nameOf = (group: string[]) => identityName(kind, group, fresh, stored);
  await upsertIdentities(
    tx,
    tenantId,
    kind,
    groups.map((g, i) => ({ id: assigned[i]!, name: nameOf(g), count: g.length })),
    now,
  );
  const identityOf = new Map(groups.flatMap((g, i) => g.map((ci) => [ci, assigned[i]!] as const)));
  const writes: ObservationWrite[] = input.cis.flatMap((ci) => {
    const facet = fresh.get(ci.ci_id);
    if (!facet) return [];
    return [{ ci, facet, identityId: identityOf.get(ci.ci_id)!, fields: withSince(facet, stored.get(ci.ci_id), ci) }];
  });
  const nowObserving = new Set(identityOf.keys());
  const gone = changed.filter((id) => !nowObserving.has(id));
  await writeObservations(tx, tenantId, kind, writes, gone, now);
  await moveObservations(
    tx,
    kind,
    [...stored.keys()].filter((id) => !changedSet.has(id)).map((id) => ({ ciId: id, identityId: identityOf.get(id)! })),
    now,
  );
  await relink(
    tx,
    tenantId,
    kind,
    members.map((ciId) => ({ ciId, identityId: identityOf.get(ciId) ?? null })),
    now,
  );
  const used = new Set(assigned);
  await retireIdentities(
    tx,
    [...new Set(links.map((l) => l.identity_id))].filter((id) => !used.has(id)),
    now,
  );
  await syncConflicts(
    tx,
    tenantId,
    kind,
    members,
    conflicts.map((c) => conflictWrite(kind, c)),
    now,
  );
}

/** Every observation connected to the given ones by a shared value, an identity or a decision. */
async function closure(tx: Queryable, tenantId: string, kind: string, seeds: readonly string[]): Promise<Set<string>> {
  const reached = new Set(seeds);
  let frontier = [...seeds];
  while (frontier.length > 0 && reached.size < MAX_COMPONENT) {
    const next = (await neighbours(tx, tenantId, kind, frontier)).filter((id) => !reached.has(id));
    for (const id of next) reached.add(id);
    frontier = next;
  }
  return reached;
}

/**
 * Gives each group an identity id: the one most of its observations linked before (the oldest
 * among equals), each id to one group at most, the largest groups choosing first; a new id otherwise.
 */
export function assignIds(
  groups: readonly string[][],
  links: readonly { ci_id: string; identity_id: string; created_at: Date }[],
): string[] {
  const before = new Map(links.map((l) => [l.ci_id, l]));
  const order = groups.map((g, i) => i).sort((a, b) => groups[b]!.length - groups[a]!.length || a - b);
  const taken = new Set<string>();
  const ids: string[] = [];
  for (const index of order) {
    const tally = new Map<string, { count: number; created: number }>();
    for (const ci of groups[index]!) {
      const link = before.get(ci);
      if (!link || taken.has(link.identity_id)) continue;
      const seen = tally.get(link.identity_id) ?? { count: 0, created: link.created_at.getTime() };
      tally.set(link.identity_id, { ...seen, count: seen.count + 1 });
    }
    const [best] = [...tally].sort(
      ([ia, a], [ib, b]) => b.count - a.count || a.created - b.created || ia.localeCompare(ib),
    );
    const id = best?.[0] ?? uuidv7();
    taken.add(id);
    ids[index] = id;
  }
  return ids;
}

/** Fields with since when each value has been reported: kept for an unchanged value, the CI's last write for a new one. */
function withSince(
  facet: Facet,
  before: { fields: Record<string, { value: unknown; since: string }> } | undefined,
  ci: ObservedCi,
): Record<string, { value: unknown; since: string }> {
  const at = new Date(ci.updated_at).toISOString();
  return Object.fromEntries(
    Object.entries(facet.fields).map(([field, value]) => {
      const old = before?.fields[field];
      return [field, { value, since: old && JSON.stringify(old.value) === JSON.stringify(value) ? old.since : at }];
    }),
  );
}

/** What people call the identity: the name most of its observations give (a host's host name, a server's own name). */
function identityName(
  kind: IdentityKind,
  group: readonly string[],
  fresh: Map<string, Facet>,
  stored: Map<string, { fields: Record<string, { value: unknown }> }>,
): string {
  const field = kind === 'host' ? 'hostname' : 'name';
  const names = group
    .map((ci) => fresh.get(ci)?.fields[field] ?? stored.get(ci)?.fields[field]?.value)
    .filter((n): n is string => typeof n === 'string');
  const tally = new Map<string, number>();
  for (const name of names) tally.set(name, (tally.get(name) ?? 0) + 1);
  const [best] = [...tally].sort(([a, ca], [b, cb]) => cb - ca || a.localeCompare(b));
  if (best) return best[0];
  // no host name: the first address, else the machine's id, as people would name it
  const facts = group.map((ci) => fresh.get(ci)?.fields ?? unwrap(stored.get(ci)?.fields));
  const address = facts
    .map((f) => (Array.isArray(f.addresses) ? (f.addresses[0] as unknown) : undefined))
    .find(Boolean);
  const id = facts.map((f) => f.machine_id ?? f.product_uuid).find(Boolean);
  return String(address ?? id ?? group[0]);
}

const unwrap = (fields: Record<string, { value: unknown }> | undefined): Record<string, unknown> =>
  Object.fromEntries(Object.entries(fields ?? {}).map(([k, v]) => [k, v.value]));

function conflictWrite(kind: string, c: { rule: string; values: string[]; groups: string[][] }): ConflictWrite {
  return {
    id: uuidv7(),
    rule: c.rule,
    fingerprint: `${kind}:${JSON.stringify(c.groups)}`,
    values: c.values,
    groups: c.groups,
  };
}
