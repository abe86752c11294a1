import { expect } from 'chai';
import {
  classifyBatch,
  fieldChanges,
  splitBatches,
  type ClassifyInput,
} from '../../../src/inventory/write-path/classify.js';
import { contentHash, metricsOf } from '../../../src/inventory/write-path/content.js';
import { partOf } from '../../../src/inventory/write-path/parts.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import type { StoredContent, StoredState } from '../../../src/inventory/write-path/store.js';

const NOW = new Date('2026-03-01T00:00:00Z');
const KEY = { tenantId: '00000000-0000-0000-0000-000000000001', sourceId: '7', scopeId: 'cluster-1' };
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function pod(name: string, overrides: Partial<UniversalRecord> = {}): UniversalRecord {
  return {
    external_id: `pod/default/${name}`,
    ci_type: 'k8s.pod',
    name,
    namespace: 'default',
    raw_data: { metadata: { name, resourceVersion: '1' }, spec: { replicas: 1 } },
    type_data: { phase: 'Running', metrics: { cpu: 0.1 } },
    ...overrides,
  };
}

/** The row a record was stored as, with `ci_id`. */
function storedAs(record: UniversalRecord, ciId: string, status: StoredContent['status'] = 'active'): StoredContent {
  const { metrics: _metrics, ...typeData } = record.type_data ?? {};
  return {
    ci_id: ciId,
    external_id: record.external_id,
    scope_id: KEY.scopeId,
    ci_type: record.ci_type,
    name: record.name,
    namespace: record.namespace ?? null,
    status,
    raw_data: record.raw_data,
    type_data: typeData,
  };
}

/** A batch beside what the lookup answered for it: `states` for the records it returned, with the rows it found. */
function classify(records: UniversalRecord[], states: StoredState[]) {
  const input: ClassifyInput = {
    key: KEY,
    now: NOW,
    records,
    hashes: records.map(contentHash),
    metrics: records.map(metricsOf),
    states: new Map(states.map((s) => [s.external_id, s])),
  };
  return classifyBatch(input);
}

const newState = (record: UniversalRecord): StoredState => ({
  external_id: record.external_id,
  ci_id: null,
  stored: null,
});
const storedState = (row: StoredContent): StoredState => ({
  external_id: row.external_id,
  ci_id: row.ci_id,
  stored: row,
});

describe('classifyBatch', () => {
  it('plans a new record as an insert with a fresh UUIDv7, its CREATED change and its last_seen row', () => {
    const record = pod('a');
    const plan = classify([record], [newState(record)]);
    expect(plan.inserts).to.have.lengthOf(1);
    const [write] = plan.inserts;
    expect(write!.ci_id).to.match(UUID_V7);
    expect(write).to.deep.include({
      scope_id: 'cluster-1',
      external_id: 'pod/default/a',
      name: 'a',
      namespace: 'default',
      content_hash: contentHash(record),
    });
    // metrics are kept beside last_seen, not in the CI row
    expect(write!.type_data).to.deep.equal({ phase: 'Running' });
    expect(plan.seen).to.deep.equal([{ ci_id: write!.ci_id, metrics: '{"cpu":0.1}' }]);
    expect(plan.changes).to.deep.equal([
      {
        tenant_id: KEY.tenantId,
        ci_id: write!.ci_id,
        source_id: '7',
        scope_id: 'cluster-1',
        ci_name: 'a',
        ci_namespace: 'default',
        ci_type: 'k8s.pod',
        change_type: 'CREATED',
        changed_at: NOW,
        changes: [
          { field: 'name', old_value: null, new_value: 'a' },
          { field: 'namespace', old_value: null, new_value: 'default' },
          { field: 'ci_type', old_value: null, new_value: 'k8s.pod' },
          { field: 'status', old_value: null, new_value: 'active' },
        ],
      },
    ]);
    expect(plan).to.include({ unchanged: 0, reactivated: 0 });
    expect(plan.updates).to.be.empty;
  });

  it('counts a record the lookup did not return as unchanged and plans no write for it (metrics-only included)', () => {
    const record = pod('steady', { type_data: { phase: 'Running', metrics: { cpu: 0.9 } } });
    const plan = classify([record], []);
    expect(plan.unchanged).to.equal(1);
    expect(plan.inserts).to.be.empty;
    expect(plan.updates).to.be.empty;
    expect(plan.seen).to.be.empty;
    expect(plan.changes).to.be.empty;
    expect(plan.owners).to.be.empty;
  });

  it('plans a changed record as an update with an UPDATED change on dotted paths, ignoring volatile paths and metrics', () => {
    const before = pod('web');
    const row = storedAs(before, '0190a000-0000-7000-8000-000000000001');
    const after = pod('web', {
      raw_data: { metadata: { name: 'web', resourceVersion: '2' }, spec: { replicas: 3 } },
      type_data: { phase: 'Running', metrics: { cpu: 0.7 } },
    });
    const plan = classify([after], [storedState(row)]);
    expect(plan.updates.map((w) => w.ci_id)).to.deep.equal([row.ci_id]);
    expect(plan.inserts).to.be.empty;
    expect(plan.seen).to.deep.equal([{ ci_id: row.ci_id, metrics: '{"cpu":0.7}' }]);
    expect(plan.changes).to.have.lengthOf(1);
    expect(plan.changes[0]).to.deep.include({
      change_type: 'UPDATED',
      ci_id: row.ci_id,
      ci_name: 'web',
      scope_id: 'cluster-1',
    });
    expect(plan.changes[0]!.changes).to.deep.equal([{ field: 'raw_data.spec.replicas', old_value: 1, new_value: 3 }]);
  });

  it('rewrites a returned record whose content moved only in metrics without recording a change', () => {
    // the lookup returns a record whose digest differs from the stored one (keys in another
    // order, or a row moving to this scope); when only metrics moved there is nothing to record
    const before = pod('reordered');
    const row = storedAs(before, '0190a000-0000-7000-8000-000000000002');
    const after = pod('reordered', { type_data: { metrics: { cpu: 0.5 }, phase: 'Running' } });
    const plan = classify([after], [storedState(row)]);
    expect(plan.updates).to.have.lengthOf(1);
    expect(plan.changes).to.be.empty;
    expect(plan.seen).to.deep.equal([{ ci_id: row.ci_id, metrics: '{"cpu":0.5}' }]);
    expect(plan.reactivated).to.equal(0);
  });

  it('reactivates an inactive or archived CI seen again, recording the status move', () => {
    const inactive = pod('phoenix');
    const archived = pod('ash');
    const rows = [
      storedAs(inactive, '0190a000-0000-7000-8000-000000000003', 'inactive'),
      storedAs(archived, '0190a000-0000-7000-8000-000000000004', 'archived'),
    ];
    const plan = classify([inactive, archived], rows.map(storedState));
    expect(plan.reactivated).to.equal(2);
    expect(plan.updates).to.have.lengthOf(2);
    expect(plan.changes.map((c) => c.changes)).to.deep.equal([
      [{ field: 'status', old_value: 'inactive', new_value: 'active' }],
      [{ field: 'status', old_value: 'archived', new_value: 'active' }],
    ]);
  });

  it('lists CREATED changes in batch order before the UPDATED ones, and counts each kind', () => {
    const changed = pod('changed');
    const row = storedAs(changed, '0190a000-0000-7000-8000-000000000005');
    const records = [pod('changed', { name: 'renamed' }), pod('unchanged'), pod('new-1'), pod('new-2')];
    const plan = classify(records, [storedState(row), newState(records[2]!), newState(records[3]!)]);
    expect(plan.changes.map((c) => [c.change_type, c.ci_name])).to.deep.equal([
      ['CREATED', 'new-1'],
      ['CREATED', 'new-2'],
      ['UPDATED', 'renamed'],
    ]);
    expect(plan.changes[2]!.changes).to.deep.equal([{ field: 'name', old_value: 'changed', new_value: 'renamed' }]);
    expect(plan).to.include({ unchanged: 1, reactivated: 0 });
    expect(plan.inserts.map((w) => w.name)).to.deep.equal(['new-1', 'new-2']);
    expect(plan.updates.map((w) => w.name)).to.deep.equal(['renamed']);
    expect(plan.seen.map((s) => s.ci_id)).to.deep.equal([row.ci_id, plan.inserts[0]!.ci_id, plan.inserts[1]!.ci_id]);
  });

  it('replaces the relationships of written records that carry them, each named relationship once', () => {
    const node = pod('node-1', { relationships: [] });
    const web = pod('web', {
      relationships: [
        { type: 'runs_on', target_external_id: 'node/node-1' },
        { type: 'runs_on', target_external_id: 'node/node-1' },
        { type: 'uses', target_external_id: 'svc/db' },
      ],
    });
    const quiet = pod('quiet');
    const steady = pod('steady', { relationships: [{ type: 'runs_on', target_external_id: 'node/node-1' }] });
    const row = storedAs(web, '0190a000-0000-7000-8000-000000000006');
    const plan = classify([node, web, quiet, steady], [newState(node), storedState(row), newState(quiet)]);
    const nodeId = plan.inserts.find((w) => w.name === 'node-1')!.ci_id;
    // a record with `relationships: []` loses its relationships; one without the field keeps them,
    // and an unchanged record (not returned by the lookup) needs no relationship work
    expect(plan.owners).to.deep.equal([nodeId, row.ci_id]);
    expect(plan.relationships).to.deep.equal([
      { from_ci_id: row.ci_id, to_external_id: 'node/node-1', type: 'runs_on' },
      { from_ci_id: row.ci_id, to_external_id: 'svc/db', type: 'uses' },
    ]);
    // the relationships are part of the digest, but no recorded field
    expect(plan.changes.filter((c) => c.change_type === 'UPDATED')).to.be.empty;
  });

  it('writes a stored row into the scope of the batch, recorded as a move that names the instance it left', () => {
    const record = pod('moved');
    const row = storedAs(record, '0190a000-0000-7000-8000-000000000007');
    const plan = classifyBatch({
      key: { ...KEY, scopeId: null },
      now: NOW,
      records: [record],
      hashes: [contentHash(record)],
      metrics: [metricsOf(record)],
      states: new Map([[record.external_id, storedState(row)]]),
    });
    expect(plan.updates[0]!.scope_id).to.equal(null);
    expect(plan.changes).to.have.length(1);
    expect(plan.changes[0]!.change_type).to.equal('UPDATED');
    expect(plan.changes[0]!.changes).to.deep.equal([{ field: 'scope_id', old_value: 'cluster-1', new_value: null }]);
    expect(plan.changes[0]!.moved_from_scope_id).to.equal('cluster-1');
  });
});

describe('fieldChanges: type_data beside raw_data', () => {
  // a PostgreSQL role as its collector type stores it: type_data copies some raw_data values
  const role = (login: boolean, limit: number, member: string[]): UniversalRecord => ({
    external_id: 'role/app',
    ci_type: 'pg.role',
    name: 'app',
    raw_data: { rolname: 'app', rolcanlogin: login, rolconnlimit: limit, member_of: member },
    type_data: { can_login: login, connection_limit: limit, member_of: member },
  });
  const before = storedAs(role(true, 10, ['readers']), 'ci-1');
  const after = role(false, 20, ['readers', 'writers']);

  it("records a derived type_data (every collector type) not at all: its changes repeat raw_data's", () => {
    expect(fieldChanges(before, after, true).map((c) => c.field)).to.deep.equal([
      'raw_data.member_of',
      'raw_data.rolcanlogin',
      'raw_data.rolconnlimit',
    ]);
  });

  it('records pushed type_data except the values that moved exactly as a raw_data value did', () => {
    const pushed = { ...after, type_data: { ...after.type_data, owner: 'team-b' } };
    const stored = { ...before, type_data: { ...before.type_data, owner: 'team-a' } };
    expect(fieldChanges(stored, pushed, false)).to.deep.equal([
      { field: 'raw_data.member_of', old_value: ['readers'], new_value: ['readers', 'writers'] },
      { field: 'raw_data.rolcanlogin', old_value: true, new_value: false },
      { field: 'raw_data.rolconnlimit', old_value: 10, new_value: 20 },
      { field: 'type_data.owner', old_value: 'team-a', new_value: 'team-b' },
    ]);
  });

  it('records a pushed type_data change that raw_data does not carry, also when raw_data did not change', () => {
    const renamedOnly = {
      ...role(true, 10, ['readers']),
      type_data: { can_login: true, connection_limit: 10, member_of: ['readers'], tier: 'gold' },
    };
    expect(fieldChanges(before, renamedOnly, false)).to.deep.equal([
      { field: 'type_data.tier', old_value: null, new_value: 'gold' },
    ]);
    // the same change when type_data is derived: nothing to record (and no real collector sends it)
    expect(fieldChanges(before, renamedOnly, true)).to.deep.equal([]);
  });

  it('passes the rule through classifyBatch', () => {
    const pushed = { ...after, type_data: { ...after.type_data, owner: 'team-b' } };
    const stored = { ...before, type_data: { ...before.type_data, owner: 'team-a' } };
    const input = (typeDataDerived: boolean): ClassifyInput => ({
      key: KEY,
      now: NOW,
      typeDataDerived,
      records: [pushed],
      hashes: [contentHash(pushed)],
      metrics: [metricsOf(pushed)],
      states: new Map([[pushed.external_id, storedState(stored)]]),
    });
    expect(classifyBatch(input(true)).changes[0]!.changes.map((c) => c.field)).to.not.include('type_data.owner');
    expect(classifyBatch(input(false)).changes[0]!.changes.map((c) => c.field)).to.include('type_data.owner');
  });
});

describe('splitBatches', () => {
  it('keeps the last record of an external id, in the place of its first, and batches them', () => {
    const first = pod('a', { name: 'first' });
    const records = [first, pod('b'), pod('c'), { ...first, name: 'last' }, pod('d')];
    const { lanes } = splitBatches(records, [], 2);
    expect(lanes).to.have.length(1);
    expect(lanes[0]!.part).to.equal(undefined);
    expect(lanes[0]!.batches.map((batch) => batch.map((r) => r.name))).to.deep.equal([
      ['last', 'b'],
      ['c', 'd'],
    ]);
  });

  it('archives each gone external id once, in batches of the same size', () => {
    const { lanes, gone } = splitBatches([], ['x', 'y', 'x', 'z'], 2);
    expect(lanes).to.deep.equal([{ batches: [] }]);
    expect(gone).to.deep.equal([['x', 'y'], ['z']]);
  });

  it("in lanes, splits more than one batch by part, each record in the lane of its external id's part", () => {
    const records = Array.from({ length: 40 }, (_, i) => pod(`pod-${i}`));
    const { lanes } = splitBatches([...records, { ...records[0]!, name: 'again' }], [], 8, true);
    expect(lanes.map((lane) => lane.part)).to.deep.equal([0, 1]);
    for (const lane of lanes) {
      expect(lane.batches.every((batch) => batch.length <= 8)).to.equal(true);
      expect(lane.batches.flat().every((record) => partOf(record.external_id) === lane.part)).to.equal(true);
    }
    const written = lanes.flatMap((lane) => lane.batches.flat());
    expect(written.map((record) => record.external_id).sort()).to.deep.equal(
      records.map((record) => record.external_id).sort(),
    );
    expect(written.find((record) => record.external_id === records[0]!.external_id)!.name).to.equal('again');
    expect(Math.min(...lanes.map((lane) => lane.batches.flat().length))).to.be.greaterThan(5);
  });

  it('in lanes, keeps what fits one batch in one lane of every part', () => {
    const { lanes } = splitBatches([pod('a'), pod('b'), pod('c')], [], 8, true);
    expect(lanes).to.have.length(1);
    expect(lanes[0]!.part).to.equal(undefined);
    expect(lanes[0]!.batches.flat()).to.have.length(3);
  });
});
