import { expect } from 'chai';
import fc from 'fast-check';
import type { Sql } from '../../../src/platform/db/database.js';
import { facetsOf } from '../../../src/inventory/identities/facets.js';
import { reconcileFields, type Offer, type Pin } from '../../../src/inventory/identities/reconciled.js';
import { partition } from '../../../src/inventory/identities/partition.js';
import { resolveIdentities } from '../../../src/inventory/identities/resolve.js';
import { cisById } from '../../../src/inventory/identities/resolve-store.js';
import { KINDS, SHIPPED_RULES, type IdentityKind, type KindRules } from '../../../src/inventory/identities/rules.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { canonical, canonicalConflicts, modelPartition, valuesOfRule, type Keys, type ModelDecision } from './model.js';
import { ADDRESSES, CI_TYPES, finalSteps, interleave, orderArb, play, worldArb, type Planned } from './world.js';

/**
 * Identities against a model written in the test (model.ts): random worlds of a few observations
 * from a few sources, their identifiers drawn from small pools so that they collide, overlap and
 * contradict; ingested in random orders and batches with deletions and rediscoveries, the worker
 * catching up after each batch. The stored partition and open conflicts equal the model's over the
 * final observations, whatever the order; a person's merge or keep-apart, once undone, leaves the
 * partition as it was. Pure properties, with many more runs: partition() itself equals the model
 * over random keys and decisions, and reconcileFields() picks by pins, staleness and precedence.
 *
 * Reproduce a failure with the seed fast-check prints: CINV_IDENTITY_PROPERTY_SEED=<seed>
 * (CINV_IDENTITY_PROPERTY_RUNS sets the number of worlds).
 */

const SEED = Number(process.env.CINV_IDENTITY_PROPERTY_SEED ?? 20261015);
const RUNS = Number(process.env.CINV_IDENTITY_PROPERTY_RUNS ?? 20);
const rulesOf = (kind: IdentityKind) => SHIPPED_RULES[kind]!.identification;

interface Stored {
  groups: string[][];
  conflicts: string[][][];
  /** The conflicts' observations, each conflict's as a set. */
  conflictIds: Set<string>[];
  /** Each CI's id by external id, and the final observations' keys (facetsOf over the CIs as stored). */
  ciIds: Map<string, string>;
  keys: Map<string, Keys>;
}

/** The identities of a kind as stored: live identities' observations, the open conflicts, by external id. */
async function stored(sql: Sql, kind: IdentityKind = 'host'): Promise<Stored> {
  const cis = await sql<{ ci_id: string; external_id: string }[]>`select ci_id, external_id from configuration_items`;
  const label = new Map(cis.map((c) => [c.ci_id, c.external_id]));
  const keys = new Map<string, Keys>();
  const observed = await cisById(
    sql,
    cis.map((c) => c.ci_id),
  );
  for (const facet of observed.flatMap(facetsOf).filter((f) => f.kind === kind))
    keys.set(label.get(facet.ciId)!, facet.keys);
  const rows = await sql<{ identity_id: string; retired: boolean; count: number; ci_id: string }[]>`
    select o.identity_id, i.retired_at is not null as retired, i.observation_count as count, o.ci_id
    from identity_observations o join identities i on i.id = o.identity_id where o.kind = ${kind}`;
  const ofRetired = rows.filter((r) => r.retired);
  expect(ofRetired, 'observations of retired identities').to.deep.equal([]);
  const byIdentity = new Map<string, string[]>();
  for (const r of rows) byIdentity.set(r.identity_id, [...(byIdentity.get(r.identity_id) ?? []), label.get(r.ci_id)!]);
  for (const r of rows) expect(r.count, 'observation_count').to.equal(byIdentity.get(r.identity_id)!.length);
  const empty = await sql`select id from identities i where retired_at is null and i.kind = ${kind}
    and not exists (select 1 from identity_observations o where o.identity_id = i.id)`;
  expect(empty, 'live identities without observations').to.have.lengthOf(0);
  const open = await sql<
    { groups: string[][] }[]
  >`select groups from identity_conflicts where status = 'open' and kind = ${kind}`;
  const conflicts = open.map((c) => c.groups.map((g) => g.map((id) => label.get(id)!)));
  return {
    groups: canonical([...byIdentity.values()]),
    conflicts: canonicalConflicts(conflicts),
    conflictIds: conflicts.map((c) => new Set(c.flat())),
    ciIds: new Map(cis.map((c) => [c.external_id, c.ci_id])),
    keys,
  };
}

/** No two identities share a value of an exclusive rule unless an open conflict holds both; conflicts name identities. */
function expectInvariants(state: Stored, kind: IdentityKind): void {
  const identities = new Set(state.groups.map((g) => JSON.stringify(g)));
  for (const conflict of state.conflicts)
    for (const group of conflict)
      expect(identities.has(JSON.stringify(group)), `conflict group ${group}`).to.equal(true);
  for (const rule of rulesOf(kind).filter((r) => r.exclusive))
    state.groups.forEach((a, i) =>
      state.groups.slice(i + 1).forEach((b) => {
        const va = new Set(a.flatMap((id) => valuesOfRule(rule, state.keys.get(id)!)));
        if (!b.some((id) => valuesOfRule(rule, state.keys.get(id)!).some((v) => va.has(v)))) return;
        const covered = state.conflictIds.some((c) => c.has(a[0]!) && c.has(b[0]!));
        expect(covered, `${JSON.stringify(a)} and ${JSON.stringify(b)} share a ${rule.name}`).to.equal(true);
      }),
    );
}

/** What a world exercised, for the run's summary. */
function tally(seen: Map<string, number>, state: Stored, world: readonly Planned[], kind: IdentityKind): void {
  const kinds = [
    ...(state.conflicts.length > 0 ? [`${kind} conflicts`] : []),
    ...(state.groups.some((g) => g.length > 1) ? [`${kind} joined`] : []),
    // what the world did, once per world
    ...(kind !== 'host' ? [] : world.some((o) => o.history.includes('delete')) ? ['deletions'] : []),
    ...(kind === 'host' &&
    world.some((o) => o.history.some((h, i) => h !== 'delete' && o.history.slice(0, i).includes('delete')))
      ? ['rediscoveries']
      : []),
    ...(kind === 'host' &&
    world.some((o) => o.history.some((h, i) => i > 0 && h !== 'delete' && ![h, 'delete'].includes(o.history[i - 1]!)))
      ? ['changes']
      : []),
  ];
  for (const kind of kinds) seen.set(kind, (seen.get(kind) ?? 0) + 1);
}

const expectModel = (state: Stored, decisions: ModelDecision[] = [], kind: IdentityKind = 'host') => {
  const model = modelPartition(state.keys, rulesOf(kind), decisions);
  expect(state.groups, `${kind} partition`).to.deep.equal(model.groups);
  expect(state.conflicts, `${kind} open conflicts`).to.deep.equal(model.conflicts);
};

/**
 * A person's decision over two observations, stored and the two CIs resolved again; then undone and
 * the two resolved again: the identities and conflicts are what they were before the decision.
 * Returns whether the decision changed the partition.
 */
async function decideAndUndo(
  sql: Sql,
  before: Stored,
  [a, b]: [string, string],
  action: 'merge' | 'keep_apart',
): Promise<boolean> {
  const pair = [before.ciIds.get(a)!, before.ciIds.get(b)!];
  const resolvePair = () =>
    sql.begin(async (tx) => resolveIdentities(tx, DEFAULT_TENANT_ID, await cisById(tx, pair), [], new Date()));
  const [decision] = await sql<{ id: string }[]>`
    insert into identity_decisions (id, tenant_id, kind, action, ci_ids, made_by, made_at)
    values (gen_random_uuid(), ${DEFAULT_TENANT_ID}, 'host', ${action}, ${pair}::uuid[],
            ${JSON.stringify({ kind: 'user', id: null, name: 'property' })}::text::jsonb, now())
    returning id`;
  await resolvePair();
  const after = await stored(sql);
  expectModel(after, [{ action, ids: [a, b] }]);
  const together = after.groups.some((g) => g.includes(a) && g.includes(b));
  expect(together, `${a} and ${b} after ${action}`).to.equal(action === 'merge');
  await sql`update identity_decisions set undone_at = now() where id = ${decision!.id}`;
  await resolvePair();
  const undone = await stored(sql);
  expect(undone.groups, `the partition after ${action} of ${a} and ${b} undone`).to.deep.equal(before.groups);
  expect(undone.conflicts, `the conflicts after ${action} of ${a} and ${b} undone`).to.deep.equal(before.conflicts);
  return JSON.stringify(after.groups) !== JSON.stringify(before.groups);
}

describe('identities equal an independent model of the identification rules, over random worlds', function () {
  this.timeout(1_800_000);
  let sql: Sql;
  before(async () => {
    sql = (await testDatabase()).sql;
  });

  it(`whatever the order, batches, deletions and rediscoveries (${RUNS} worlds, seed ${SEED})`, async () => {
    const seen = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(worldArb, orderArb, orderArb, async (world, first, second) => {
        await resetDatabase(sql);
        await play(
          sql,
          world,
          interleave(
            world.map((o) => o.history),
            first,
          ),
          first.cuts,
        );
        const played = new Map<IdentityKind, Stored>();
        for (const kind of KINDS) {
          const state = await stored(sql, kind);
          tally(seen, state, world, kind);
          expectModel(state, [], kind);
          expectInvariants(state, kind);
          played.set(kind, state);
        }
        // the final observations alone, in another order
        await resetDatabase(sql);
        await play(sql, world, interleave(finalSteps(world), second), second.cuts);
        for (const kind of KINDS) {
          const direct = await stored(sql, kind);
          expect(direct.groups, `the same ${kind} observations in another order`).to.deep.equal(
            played.get(kind)!.groups,
          );
          expect(direct.conflicts, `the same ${kind} conflicts in another order`).to.deep.equal(
            played.get(kind)!.conflicts,
          );
        }
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    console.log(`      worlds with: ${JSON.stringify(Object.fromEntries([...seen].sort()))}`);
  });

  it(`an undone merge or keep-apart restores the partition before it (${RUNS} worlds, seed ${SEED})`, async () => {
    let [decided, changed] = [0, 0];
    await fc.assert(
      fc.asyncProperty(
        worldArb,
        orderArb,
        fc.nat(),
        fc.nat(),
        fc.constantFrom('merge' as const, 'keep_apart' as const),
        async (world, order, i, j, action) => {
          await resetDatabase(sql);
          await play(sql, world, interleave(finalSteps(world), order), order.cuts);
          const before = await stored(sql);
          expectModel(before);
          const labels = [...before.keys.keys()].sort();
          if (labels.length < 2) return;
          const a = labels[i % labels.length]!;
          const b = labels.filter((l) => l !== a)[j % (labels.length - 1)]!;
          if (await decideAndUndo(sql, before, [a, b], action)) changed++;
          decided++;
        },
      ),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    console.log(`      ${decided} decisions undone, ${changed} of which had changed the partition`);
    expect(decided).to.be.above(RUNS / 2);
  });
});

const NOW = new Date('2026-10-01T12:00:00.000Z');
const minutesFromNow = (m: number) => new Date(NOW.getTime() + m * 60_000).toISOString();
const FIELDS = ['os.name', 'kernel', 'architecture', 'kubelet_version'];
const SELECTORS = ['host.linux', 'k8s.node', 'redis.server', 'source:1', 'source:2', 'source:3'];

const offersArb: fc.Arbitrary<Offer[]> = fc.uniqueArray(
  fc.record({
    ciId: fc.nat({ max: 40 }).map((n) => `ci-${String(n).padStart(2, '0')}`),
    sourceId: fc.constantFrom('1', '2', '3'),
    ciType: fc.constantFrom(...CI_TYPES),
    fields: fc.dictionary(
      fc.constantFrom(...FIELDS),
      fc.record({
        value: fc.constantFrom<unknown>('a', 'b', 1, '1', ['a']),
        since: fc.constantFrom(minutesFromNow(-300), minutesFromNow(-200)),
      }),
      { maxKeys: 4 },
    ),
    lastSeen: fc.constantFrom(minutesFromNow(-60), minutesFromNow(-30), minutesFromNow(-5)),
    // stale at now exactly counts as stale
    staleAt: fc.constantFrom(minutesFromNow(-10), minutesFromNow(0), minutesFromNow(10)),
  }),
  { selector: (o) => o.ciId, minLength: 1, maxLength: 6 },
);
const selectorsArb = fc.uniqueArray(fc.constantFrom(...SELECTORS), { maxLength: 4 });
const kindRulesArb: fc.Arbitrary<KindRules> = fc.record({
  identification: fc.constant(rulesOf('host')),
  precedence: fc.dictionary(fc.constantFrom(...FIELDS), selectorsArb, { maxKeys: 3 }),
  defaultPrecedence: selectorsArb,
  staleMarginMinutes: fc.constant(30),
});
const pinsArb: fc.Arbitrary<Pin[]> = fc.uniqueArray(
  fc.record({ field: fc.constantFrom(...FIELDS), sourceId: fc.constantFrom('1', '2', '3', '4') }),
  { selector: (p) => p.field, maxLength: 3 },
);

/** The winner of one field as the rule reads: the pinned source if it reports it, else the best fresh offer, else the best stale one. */
function expectedWinner(field: string, reporting: Offer[], rules: KindRules, pins: Pin[]) {
  const selectors = Object.hasOwn(rules.precedence, field) ? rules.precedence[field]! : rules.defaultPrecedence;
  const rankOf = (o: Offer) => {
    for (const [i, s] of selectors.entries()) if (s === o.ciType || s === `source:${o.sourceId}`) return i;
    return selectors.length;
  };
  const stale = (o: Offer) => Date.parse(o.staleAt) <= NOW.getTime();
  const better = (a: Offer, b: Offer) =>
    rankOf(a) !== rankOf(b)
      ? rankOf(a) < rankOf(b)
      : a.lastSeen !== b.lastSeen
        ? Date.parse(a.lastSeen) > Date.parse(b.lastSeen)
        : a.ciId < b.ciId;
  const best = (offers: Offer[]) => {
    const fresh = offers.filter((o) => !stale(o));
    return (fresh.length > 0 ? fresh : offers).reduce((w, o) => (better(o, w) ? o : w));
  };
  const pin = pins.find((p) => p.field === field);
  const pinned = reporting.filter((o) => pin !== undefined && o.sourceId === pin.sourceId);
  const winner = best(pinned.length > 0 ? pinned : reporting);
  const reason =
    pinned.length > 0
      ? 'pinned'
      : stale(winner)
        ? 'stale'
        : rankOf(winner) < selectors.length
          ? 'precedence'
          : 'latest';
  return { winner, reason, stale };
}

describe('reconcileFields() picks by pins, staleness and precedence', function () {
  this.timeout(600_000);
  it('the winner and the competing values, over random offers, rules and pins', () => {
    fc.assert(
      fc.property(offersArb, kindRulesArb, pinsArb, (offers, rules, pins) => {
        const record = reconcileFields(offers, rules, pins, NOW);
        const reported = [...new Set(offers.flatMap((o) => Object.keys(o.fields)))].sort();
        expect(Object.keys(record).sort()).to.deep.equal(reported);
        for (const field of reported) {
          const reporting = offers.filter((o) => o.fields[field] !== undefined);
          const { winner, reason, stale } = expectedWinner(field, reporting, rules, pins);
          const got = record[field]!;
          const offered = winner.fields[field]!;
          expect({ ...got, competing: [] }, field).to.deep.equal({
            value: offered.value,
            source_id: winner.sourceId,
            ci_id: winner.ciId,
            since: offered.since,
            reason,
            competing: [],
          });
          const text = (v: unknown) => JSON.stringify(v);
          const others = reporting.filter((o) => text(o.fields[field]!.value) !== text(offered.value));
          expect(new Set(got.competing.map((c) => text(c.value)))).to.deep.equal(
            new Set(others.map((o) => text(o.fields[field]!.value))),
          );
          expect(got.competing.map((c) => c.ci_id).sort()).to.deep.equal(others.map((o) => o.ciId).sort());
          for (const c of got.competing) {
            const o = reporting.find((r) => r.ciId === c.ci_id)!;
            expect(c).to.deep.equal({
              value: o.fields[field]!.value,
              source_id: o.sourceId,
              ci_id: o.ciId,
              since: o.fields[field]!.since,
              stale: stale(o),
            });
          }
        }
      }),
      { seed: SEED, numRuns: RUNS * 50 },
    );
  });
});

const keysArb: fc.Arbitrary<Keys> = fc.record(
  {
    machine_id: fc.subarray(['m1', 'm2', 'm3'], { minLength: 1, maxLength: 1 }),
    product_uuid: fc.subarray(['p1', 'p2'], { minLength: 1, maxLength: 1 }),
    hostname: fc.subarray(['web', 'db', 'cache'], { minLength: 1, maxLength: 1 }),
    address: fc.subarray(ADDRESSES, { minLength: 1, maxLength: 2 }),
  },
  { requiredKeys: [] },
);

describe('partition() equals the model, over random keys and decisions', () => {
  it('the groups and the conflicts', () => {
    fc.assert(
      fc.property(
        fc.array(keysArb, { minLength: 1, maxLength: 8 }),
        fc.array(
          fc.record({
            action: fc.constantFrom('merge' as const, 'keep_apart' as const),
            ids: fc.uniqueArray(fc.nat({ max: 7 }), { minLength: 2, maxLength: 3 }),
          }),
          { maxLength: 2 },
        ),
        (drawn, drawnDecisions) => {
          const observations = new Map(drawn.map((keys, i) => [`o${i}`, keys]));
          const decisions = drawnDecisions.map((d) => ({ action: d.action, ids: d.ids.map((n) => `o${n}`) }));
          const model = modelPartition(observations, rulesOf('host'), decisions);
          const got = partition(
            [...observations].map(([ciId, keys]) => ({ ciId, keys })),
            rulesOf('host'),
            decisions.map((d) => ({ action: d.action, ciIds: d.ids })),
          );
          expect(got.groups, 'groups').to.deep.equal(model.groups);
          expect(canonicalConflicts(got.conflicts.map((c) => c.groups)), 'conflicts').to.deep.equal(model.conflicts);
        },
      ),
      { seed: SEED, numRuns: RUNS * 100 },
    );
  });
});
