import fc from 'fast-check';
import { catchUpIdentities } from '../../../src/inventory/identities/worker.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import type { Sql } from '../../../src/platform/db/database.js';
import { ingest } from '../../support/factories.js';

/**
 * Random worlds for the identity properties: a few observations of hosts-to-be by a few sources,
 * each with its history (ingested, deleted, rediscovered, changed), and random orders and batches
 * to play them through the write path and the identity worker in.
 */

// small pools, spelt so that normalisation matters (case, a trailing dot, dashes)
const HOSTNAMES = ['web', 'db', 'Cache.'];
const MACHINE_IDS = ['aa11', 'BB-22', 'cc33'];
const PRODUCT_UUIDS = ['1111-aaaa', '2222-BBBB'];
export const ADDRESSES = ['10.0.0.1', '10.0.0.2', '10.0.0.3'];
export const CI_TYPES = ['k8s.node', 'host.linux', 'redis.server'] as const;

interface Identifiers {
  hostname: string;
  /** Only a server may know no host name. */
  nameless: boolean;
  machineId: string | null;
  productUuid: string | null;
  addresses: string[];
}
export interface Planned {
  externalId: string;
  source: string;
  ciType: (typeof CI_TYPES)[number];
  versions: Identifiers[];
  /** What happens to it, in order: a version ingested, or a deletion. */
  history: (number | 'delete')[];
}
interface Event {
  obs: number;
  step: number | 'delete';
}

const identifiersArb: fc.Arbitrary<Identifiers> = fc.record({
  hostname: fc.constantFrom(...HOSTNAMES),
  nameless: fc.boolean(),
  machineId: fc.oneof(fc.constant(null), fc.constantFrom(...MACHINE_IDS)),
  productUuid: fc.oneof(
    { arbitrary: fc.constant(null), weight: 2 },
    { arbitrary: fc.constantFrom(...PRODUCT_UUIDS), weight: 1 },
  ),
  addresses: fc.subarray(ADDRESSES, { maxLength: 2 }),
});

const EXTERNAL = { 'k8s.node': 'node/o', 'host.linux': 'host/o', 'redis.server': 'server/o' };

/** 3–8 observations from 2–4 sources, each ingested, maybe deleted, maybe rediscovered or changed. */
export const worldArb: fc.Arbitrary<Planned[]> = fc.integer({ min: 2, max: 4 }).chain((sources) =>
  fc
    .array(
      fc.record({
        source: fc.nat({ max: sources - 1 }),
        ciType: fc.constantFrom(...CI_TYPES),
        versions: fc.array(identifiersArb, { minLength: 1, maxLength: 2 }),
        later: fc.array(fc.constantFrom('delete' as const, 'put' as const), { maxLength: 2 }),
      }),
      { minLength: 3, maxLength: 8 },
    )
    .map((drawn) =>
      drawn.map((d, i) => {
        const history: Planned['history'] = [0];
        for (const step of d.later) {
          const last = history[history.length - 1]!;
          if (step === 'delete' && last !== 'delete') history.push('delete');
          const lastPut = history.filter((h) => h !== 'delete').pop()!;
          if (step === 'put') history.push(last === 'delete' ? lastPut : (lastPut + 1) % d.versions.length);
        }
        return {
          externalId: `${EXTERNAL[d.ciType]}${i}`,
          source: `source-${d.source}`,
          ciType: d.ciType,
          versions: d.versions,
          history,
        };
      }),
    ),
);

/** A random order of events (each observation's own in its order) and where the worker catches up. */
export const orderArb = fc.record({
  keys: fc.array(fc.nat({ max: 999 }), { minLength: 24, maxLength: 24 }),
  cuts: fc.array(fc.boolean(), { minLength: 24, maxLength: 24 }),
});
type Order = { keys: number[]; cuts: boolean[] };

export function interleave(histories: readonly (readonly Event['step'][])[], order: Order): Event[] {
  const slots = histories.flatMap((h, obs) => h.map(() => obs)).map((obs, n) => ({ obs, n, key: order.keys[n % 24]! }));
  slots.sort((a, b) => a.key - b.key || a.n - b.n);
  const next = histories.map(() => 0);
  return slots.map(({ obs }) => ({ obs, step: histories[obs]![next[obs]!++]! }));
}

function recordOf(o: Planned, v: Identifiers): UniversalRecord {
  const base = { external_id: o.externalId, ci_type: o.ciType, name: v.hostname, namespace: null };
  if (o.ciType === 'k8s.node') {
    const nodeInfo = { machineID: v.machineId ?? '', systemUUID: v.productUuid ?? '', osImage: 'Ubuntu 22.04.3 LTS' };
    const addresses = [
      ...v.addresses.map((address) => ({ type: 'InternalIP', address })),
      { type: 'Hostname', address: v.hostname },
    ];
    return { ...base, raw_data: { metadata: { name: v.hostname }, status: { nodeInfo, addresses } }, type_data: {} };
  }
  const host = { machine_id: v.machineId, product_uuid: v.productUuid, addresses: v.addresses };
  if (o.ciType === 'host.linux')
    return {
      ...base,
      raw_data: { hostname: v.hostname },
      type_data: { hostname: v.hostname, os_name: 'Ubuntu', os_version: '22.04', kernel: '6.1.0', host },
    };
  return {
    ...base,
    raw_data: { version: '7.0.15' },
    type_data: { host: { ...host, hostname: v.nameless ? null : v.hostname, endpoint: `${v.addresses[0]}:6379` } },
  };
}

/** Ingests the events one by one (deltas: records or deletions), the worker catching up at each cut and at the end. */
export async function play(sql: Sql, world: readonly Planned[], events: readonly Event[], cuts: readonly boolean[]) {
  for (const [i, { obs, step }] of events.entries()) {
    const o = world[obs]!;
    if (step === 'delete') await ingest(sql, [], { source: o.source, mode: 'delta', deletions: [o.externalId] });
    else await ingest(sql, [recordOf(o, o.versions[step]!)], { source: o.source, mode: 'delta' });
    if (cuts[i % cuts.length] || i === events.length - 1) await catchUpIdentities(sql, () => new Date());
  }
}

/** Each observation's last step when it is a version: what is there at the end. */
export const finalSteps = (world: readonly Planned[]) =>
  world.map((o) => {
    const last = o.history[o.history.length - 1]!;
    return last === 'delete' ? [] : [last];
  });
