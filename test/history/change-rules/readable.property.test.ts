import { expect } from 'chai';
import fc from 'fast-check';
import { ensureSource } from '../../../src/collection/sources/store.js';
import { catchUpApplications } from '../../../src/history/change-rules/service.js';
import type { FieldChange } from '../../../src/history/records/diff.js';
import { shapeOf } from '../../../src/history/records/kinds.js';
import { reconcile } from '../../../src/inventory/write-path/reconcile.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';

/**
 * Readable changes against an independent reading of the exact records: random histories of four
 * pods under three replica sets of two deployments, in steps minutes apart. A pod restarts (in
 * bursts), flips its readiness, relabels, is deleted and comes back, or moves to another replica
 * set. The test knows what each step did, so it folds the exact records itself (same CI, same
 * action, within the window of the fold's first record, never across a removal or a return), and
 * says which deployment each record belongs to at its moment. Then:
 * - the folded history (`/changes?fold=true`) has the test's folds: same first records, counts and last times;
 * - every exact record is in exactly one fold: nothing is lost when unfolding;
 * - a deployment's rolled-up history is the records the test says were its own at their moment;
 * - change rules added midway shape the records written after them, and applied again, all of
 *   them, as applying the rules record by record says.
 *
 * Reproduce a failure with the seed fast-check prints: CINV_READABLE_PROPERTY_SEED=<seed>.
 */
const SEED = Number(process.env.CINV_READABLE_PROPERTY_SEED ?? 20261203);
const RUNS = Number(process.env.CINV_READABLE_PROPERTY_RUNS ?? 8);
const WINDOW_MINUTES = 60;

const PODS = ['p1', 'p2', 'p3', 'p4'];
const OWNERS: Record<string, string> = { 'rs-a': 'd1', 'rs-b': 'd1', 'rs-c': 'd2' };
const REPLICA_SETS = Object.keys(OWNERS);

type Action =
  | { kind: 'restart' }
  | { kind: 'flip' }
  | { kind: 'label'; value: 'a' | 'b' | 'c' }
  | { kind: 'delete' }
  | { kind: 'move'; to: string };

const actionArb: fc.Arbitrary<Action> = fc.oneof(
  { weight: 5, arbitrary: fc.constant({ kind: 'restart' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'flip' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('label' as const),
      value: fc.constantFrom('a' as const, 'b' as const, 'c' as const),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'delete' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('move' as const), to: fc.constantFrom(...REPLICA_SETS) }) },
);

interface Step {
  /** Minutes after the previous step: short gaps make bursts, long ones end folds. */
  gap: number;
  actions: Partial<Record<string, Action>>;
}

const stepArb: fc.Arbitrary<Step> = fc.record({
  gap: fc.oneof(fc.integer({ min: 1, max: 15 }), fc.integer({ min: 40, max: 90 })),
  actions: fc.dictionary(fc.constantFrom(...PODS), actionArb, { maxKeys: 3 }),
});

interface Pod {
  alive: boolean;
  ready: boolean;
  restarts: number;
  label: 'a' | 'b' | 'c';
  rs: string;
}

const podRecord = (name: string, p: Pod): UniversalRecord => ({
  external_id: `pod/${name}`,
  ci_type: 'k8s.pod',
  name,
  namespace: 'shop',
  raw_data: {
    metadata: { name, labels: { tier: p.label } },
    status: { containerStatuses: [{ name: 'app', ready: p.ready, restartCount: p.restarts }] },
  },
  type_data: {},
});

const ownerRecords = (pods: Map<string, Pod>): UniversalRecord[] => [
  ...['d1', 'd2'].map((d) => ({
    external_id: `deployment/${d}`,
    ci_type: 'k8s.deployment',
    name: d,
    namespace: 'shop',
    raw_data: { metadata: { name: d } },
    type_data: {},
    relationships: REPLICA_SETS.filter((rs) => OWNERS[rs] === d).map((rs) => ({
      type: 'manages',
      target_external_id: `replicaset/${rs}`,
    })),
  })),
  ...REPLICA_SETS.map((rs) => ({
    external_id: `replicaset/${rs}`,
    ci_type: 'k8s.replicaset',
    name: rs,
    namespace: 'shop',
    raw_data: { metadata: { name: rs } },
    type_data: {},
    relationships: [...pods]
      .filter(([, p]) => p.alive && p.rs === rs)
      .map(([name]) => ({ type: 'manages', target_external_id: `pod/${name}` })),
  })),
];

/** What the test knows of each pod record it caused: its action's class, and the replica set holding it then. */
interface Caused {
  cls: string;
  rs: string;
}

interface Row {
  id: string;
  ci_id: string;
  ci_name: string;
  ci_type: string;
  change_type: string;
  at: string;
  changes: FieldChange[];
  kind: string;
  severity: string;
  ignored: boolean;
}

const T0 = Date.parse('2026-11-01T00:00:00Z');

async function play(app: TestApp, steps: Step[], rulesAt: number, admin: string) {
  const { sql } = app;
  const sourceId = (await ensureSource(sql, DEFAULT_TENANT_ID, 'k8s', 'kubernetes')).id;
  const pods = new Map<string, Pod>(
    PODS.map((name, i) => [name, { alive: true, ready: true, restarts: 0, label: 'a', rs: REPLICA_SETS[i % 3]! }]),
  );
  const caused = new Map<string, Caused>();
  let minute = 0;
  const collect = async (records: UniversalRecord[], deletions: string[] = []) =>
    reconcile(
      sql,
      { tenantId: DEFAULT_TENANT_ID, sourceId, scopeId: null, mode: 'delta', records, deletions },
      { now: new Date(T0 + minute * 60_000) },
    );
  const at = () => new Date(T0 + minute * 60_000).toISOString();
  await collect([...ownerRecords(pods), ...[...pods].map(([name, p]) => podRecord(name, p))]);
  for (const [name, p] of pods) caused.set(`${name} ${at()}`, { cls: 'life', rs: p.rs });
  let rulesAfterId = Number.MAX_SAFE_INTEGER;
  for (let i = 0; i < steps.length; i++) {
    if (i === rulesAt) {
      const [last] = await sql<{ id: string }[]>`select coalesce(max(id), 0)::text as id from change_records`;
      rulesAfterId = Number(last!.id);
      await addRules(app, admin);
    }
    const step = steps[i]!;
    minute += step.gap;
    const records: UniversalRecord[] = [];
    const deletions: string[] = [];
    for (const [name, action] of Object.entries(step.actions)) {
      const p = pods.get(name)!;
      if (!p.alive) {
        // a removed pod comes back, whatever was drawn for it
        p.alive = true;
        records.push(podRecord(name, p));
        caused.set(`${name} ${at()}`, { cls: 'life', rs: p.rs });
        continue;
      }
      const before = `ready=${p.ready}`;
      if (action!.kind === 'restart') p.restarts += 1;
      if (action!.kind === 'flip') p.ready = !p.ready;
      if (action!.kind === 'label') {
        if (action!.value === p.label) continue;
        caused.set(`${name} ${at()}`, { cls: `label ${p.label}>${action!.value}`, rs: p.rs });
        p.label = action!.value;
      }
      if (action!.kind === 'move') {
        if (action!.to === p.rs) continue;
        p.rs = action!.to;
        continue;
      }
      if (action!.kind === 'delete') {
        p.alive = false;
        deletions.push(`pod/${name}`);
        caused.set(`${name} ${at()}`, { cls: 'life', rs: p.rs });
        continue;
      }
      if (action!.kind === 'restart') caused.set(`${name} ${at()}`, { cls: `restart ${before}`, rs: p.rs });
      if (action!.kind === 'flip') caused.set(`${name} ${at()}`, { cls: `flip ${before}`, rs: p.rs });
      records.push(podRecord(name, p));
    }
    // the replica sets say which pods they hold, every step
    await collect([...ownerRecords(pods), ...records], deletions);
  }
  return { caused, rulesAfterId, until: new Date(T0 + (minute + 1) * 60_000).toISOString() };
}

const RULES = [
  { name: 'quiet restarts', match: 'name in (p1, p3) and change.kind = restart', action: 'ignore' },
  {
    name: 'p2 flaps',
    match: 'name = p2 and change.field = raw_data.status.containerStatuses',
    action: 'classify',
    kind: 'flap',
    severity: 'low',
  },
];

async function addRules(app: TestApp, admin: string) {
  for (const body of RULES) {
    const reply = await app.request('POST', '/api/v1/change-rules', { key: admin, body });
    expect(reply.status, reply.text).to.equal(201);
  }
}

/** The rules applied to one record by hand: the shipped verdict, then each rule in order. */
function byHand(row: Row, rules: boolean) {
  const shipped = shapeOf({ ci_type: row.ci_type, change_type: row.change_type, changes: row.changes });
  if (!rules) return { kind: shipped.kind, severity: shipped.severity, ignored: false };
  const statuses = row.changes.some((c) => c.field === 'raw_data.status.containerStatuses');
  const flap = row.ci_name === 'p2' && statuses;
  return {
    kind: flap ? 'flap' : shipped.kind,
    severity: flap ? 'low' : shipped.severity,
    ignored: ['p1', 'p3'].includes(row.ci_name) && shipped.kind === 'restart',
  };
}

/** The test's own fold of the exact records: per CI and action class, within the window of the first. */
function foldByHand(rows: readonly Row[], caused: Map<string, Caused>) {
  const folds = new Map<string, { records: number; last: string }>();
  const open = new Map<string, { head: string; at: number }>();
  for (const row of [...rows].sort((a, b) => a.at.localeCompare(b.at) || Number(a.id) - Number(b.id))) {
    const cls = caused.get(`${row.ci_name} ${row.at}`)?.cls ?? 'life';
    if (row.ci_type !== 'k8s.pod' || cls === 'life' || row.change_type !== 'UPDATED') {
      for (const key of [...open.keys()]) if (key.startsWith(`${row.ci_id} `)) open.delete(key);
      if (row.changes.length > 0) folds.set(row.id, { records: 1, last: row.at });
      continue;
    }
    const key = `${row.ci_id} ${cls}`;
    const current = open.get(key);
    const t = Date.parse(row.at);
    if (current && t - current.at <= WINDOW_MINUTES * 60_000) {
      const fold = folds.get(current.head)!;
      fold.records += 1;
      fold.last = row.at;
    } else {
      open.set(key, { head: row.id, at: t });
      folds.set(row.id, { records: 1, last: row.at });
    }
  }
  return folds;
}

/** Which deployment a record is read on: its own, its replica set's, or its pod's replica set's then. */
function deploymentOf(row: Row, caused: Map<string, Caused>): string | undefined {
  if (row.ci_type === 'k8s.deployment') return row.ci_name;
  if (row.ci_type === 'k8s.replicaset') return OWNERS[row.ci_name];
  const cause = caused.get(`${row.ci_name} ${row.at}`);
  return cause ? OWNERS[cause.rs] : undefined;
}

describe('readable changes: folds, roll-ups and rules against a reading of the exact records by hand (property)', function () {
  this.timeout(600_000);
  let app: TestApp;

  before(async () => {
    app = await startTestApp();
  });

  after(async () => {
    await app?.close();
  });

  it('folds as the test folds, loses nothing, rolls up by ownership at each moment, and shapes as the rules say', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 8, maxLength: 24 }), fc.nat(), async (steps, split) => {
        const { sql } = await testDatabase();
        await resetDatabase(sql);
        const admin = await createKey(sql, 'adm');
        const rulesAt = split % steps.length;
        const { caused, rulesAfterId, until } = await play(app, steps, rulesAt, admin);
        const read = () => sql<Row[]>`
          select id::text, ci_id, ci_name, ci_type, change_type, changes, kind, severity, ignored,
                 to_char(changed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at
          from change_records order by changed_at, id`;
        const rows = await read();
        // the rules shape what was written after they were added, record by record
        for (const row of rows)
          expect(
            { kind: row.kind, severity: row.severity, ignored: row.ignored },
            `${row.ci_name} ${row.at}`,
          ).to.deep.equal(byHand(row, Number(row.id) > rulesAfterId));
        const listed = rows.filter((r) => r.changes.length > 0);
        const foldsOf = async (query: string) => {
          const reply = await app.get(`/api/v1/changes?fold=true&limit=1000&sort_order=asc${query}`, admin);
          expect(reply.status, reply.text).to.equal(200);
          return Object.fromEntries(
            reply.body.items.map((i: { id: string; fold: { records: number; last_at: string } }) => [
              i.id,
              { records: i.fold.records, last: i.fold.last_at },
            ]),
          ) as Record<string, { records: number; last: string }>;
        };
        // folds, the ignored records with them: the test's folds exactly
        const expected = Object.fromEntries(foldByHand(listed, caused));
        const got = await foldsOf('&include_ignored=true');
        expect(got, 'folds').to.deep.equal(expected);
        // unfolding loses nothing: the folds' counts add up to the exact list
        const exact = await app.get(`/api/v1/changes?limit=1000&include_ignored=true`, admin);
        expect(
          Object.values(got).reduce((n, f) => n + f.records, 0),
          'records in folds',
        ).to.equal(exact.body.items.length);
        // roll-ups by ownership at each record's moment
        for (const d of ['d1', 'd2']) {
          const [ci] = await sql<{ ci_id: string }[]>`select ci_id from configuration_items where name = ${d}`;
          const reply = await app.get(
            `/api/v1/ci-changes/${ci!.ci_id}?rollup=true&include_ignored=true&limit=5000&start_date=2026-10-31T00:00:00Z&end_date=${until}`,
            admin,
          );
          expect(reply.status, reply.text).to.equal(200);
          const mine = listed.filter((r) => deploymentOf(r, caused) === d).map((r) => r.id);
          expect(reply.body.items.map((i: { id: string }) => i.id).sort(), `roll-up of ${d}`).to.deep.equal(
            mine.sort(),
          );
        }
        // the rules again over all of it: every record as the rules say
        const apply = await app.request('POST', '/api/v1/change-rules/apply', {
          key: admin,
          body: { from: '2026-10-31T00:00:00Z', until },
        });
        expect(apply.status, apply.text).to.equal(202);
        await catchUpApplications(app.context);
        const after = await read();
        for (const row of after)
          expect(
            { kind: row.kind, severity: row.severity, ignored: row.ignored },
            `${row.ci_name} ${row.at}`,
          ).to.deep.equal(byHand(row, true));
        // a fold is one CI's one action: ignored whole or not at all, so the default reading is the test's folds not ignored
        const ignored = new Set(after.filter((r) => r.ignored).map((r) => r.id));
        const shown = Object.fromEntries(Object.entries(expected).filter(([head]) => !ignored.has(head)));
        expect(await foldsOf(''), 'folds without the ignored').to.deep.equal(shown);
        expect(rows.some((r) => r.ci_type === 'k8s.pod' && r.change_type === 'UPDATED')).to.equal(true);
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
  });
});
