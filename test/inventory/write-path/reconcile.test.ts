import { expect } from 'chai';
import type { Sql } from '../../../src/platform/db/database.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { ALL_PARTS, partOf } from '../../../src/inventory/write-path/parts.js';
import { assertSnapshot, newBulkLoad, reconcile } from '../../../src/inventory/write-path/reconcile.js';
import { partExpression } from '../../../src/inventory/write-path/store.js';
import { MAX_JSON_DEPTH } from '../../../src/platform/validation.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, buildSource, ciIdOf, ingest } from '../../support/factories.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';

interface ChangeRow {
  id: string;
  ci_id: string;
  change_type: string;
  ci_name: string;
  ci_namespace: string | null;
  ci_type: string;
  changes: { field: string; old_value: unknown; new_value: unknown }[];
}

const changesOf = (sql: Sql, ciId: string) =>
  sql<
    ChangeRow[]
  >`select id::text, ci_id, change_type, ci_name, ci_namespace, ci_type, changes from change_records where ci_id = ${ciId} order by id`;

const count = async (sql: Sql, table: string) =>
  Number((await sql<{ n: string }[]>`select count(*) as n from ${sql(table)}`)[0]!.n);

const T0 = new Date('2026-03-01T00:00:00Z');
const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);

describe('reconcile', () => {
  let sql: Sql;
  beforeEach(async () => {
    sql = (await testDatabase()).sql;
    await resetDatabase(sql);
  });

  it('creates CIs with a CREATED change record and an outbox row each, in the same write', async () => {
    const pods = [buildPod({ name: 'a' }), buildPod({ name: 'b', namespace: null })];
    const result = await ingest(sql, pods, { now: at(0), scopeId: 'cluster-1' });
    expect(result).to.include({ received: 2, created: 2, updated: 0, unchanged: 0, changes: 2 });
    const [ci] =
      await sql`select c.*, l.last_seen from configuration_items c join ci_last_seen l using (ci_id) where external_id = ${pods[0]!.external_id}`;
    expect(ci).to.include({
      name: 'a',
      namespace: 'default',
      ci_type: 'k8s.pod',
      status: 'active',
      scope_id: 'cluster-1',
    });
    expect(ci!.last_seen.toISOString()).to.equal(at(0).toISOString());
    expect(ci!.raw_data).to.deep.equal(pods[0]!.raw_data);
    const [created] = await changesOf(sql, ci!.ci_id);
    expect(created).to.include({ change_type: 'CREATED', ci_name: 'a', ci_namespace: 'default', ci_type: 'k8s.pod' });
    expect(created!.changes).to.deep.include({ field: 'status', old_value: null, new_value: 'active' });
    const outbox = await sql`select aggregate_id, payload from outbox order by id`;
    expect(outbox.map((o) => o.aggregate_id)).to.have.members(
      (await sql`select id::text from change_records`).map((r) => r.id),
    );
  });

  it('records field-level updates with dotted paths, keeping arrays of objects as real JSON', async () => {
    const pod = buildPod({ name: 'web', replicas: 2 });
    await ingest(sql, [pod], { now: at(0) });
    const conditions = [
      { type: 'Ready', status: 'False', reason: 'CrashLoopBackOff' },
      { type: 'PodScheduled', status: 'True' },
    ];
    const changed: UniversalRecord = {
      ...pod,
      raw_data: {
        ...pod.raw_data,
        spec: { ...(pod.raw_data.spec as object), replicas: 5 },
        status: { phase: 'Running', conditions },
      },
    };
    const result = await ingest(sql, [changed], { now: at(10) });
    expect(result).to.include({ updated: 1, created: 0, changes: 1 });
    const ciId = await ciIdOf(sql, pod.external_id);
    const [, update] = await changesOf(sql, ciId);
    expect(update!.change_type).to.equal('UPDATED');
    const byField = Object.fromEntries(update!.changes.map((c) => [c.field, c]));
    expect(Object.keys(byField)).to.have.members(['raw_data.spec.replicas', 'raw_data.status.conditions']);
    expect(byField['raw_data.spec.replicas']).to.deep.equal({
      field: 'raw_data.spec.replicas',
      old_value: 2,
      new_value: 5,
    });
    const conditionChange = byField['raw_data.status.conditions']!;
    expect(conditionChange.new_value).to.be.an('array').that.deep.equals(conditions);
    expect(conditionChange.old_value).to.be.an('array').with.lengthOf(1);
    const [ci] = await sql`select updated_at, created_at from configuration_items where ci_id = ${ciId}`;
    expect(ci!.updated_at.toISOString()).to.equal(at(10).toISOString());
    expect(ci!.created_at.toISOString()).to.equal(at(0).toISOString());
  });

  it('writes nothing for an unchanged re-collection, even when volatile fields moved', async () => {
    const pod = buildPod({ name: 'steady' });
    await ingest(sql, [pod], { now: at(0) });
    const before = { changes: await count(sql, 'change_records'), outbox: await count(sql, 'outbox') };
    const [row] = await sql`select updated_at, content_hash from configuration_items`;
    const recollected: UniversalRecord = {
      ...pod,
      raw_data: {
        ...pod.raw_data,
        metadata: {
          ...(pod.raw_data.metadata as object),
          resourceVersion: '999',
          managedFields: [{ manager: 'kubelet' }],
        },
        status: {
          phase: 'Running',
          conditions: [
            {
              type: 'Ready',
              status: 'True',
              lastProbeTime: '2026-03-01T00:05:00Z',
              lastHeartbeatTime: '2026-03-01T00:05:00Z',
            },
          ],
        },
      },
    };
    const result = await ingest(sql, [recollected], { now: at(5) });
    expect(result).to.include({ unchanged: 1, updated: 0, created: 0, changes: 0 });
    expect(await count(sql, 'change_records')).to.equal(before.changes);
    expect(await count(sql, 'outbox')).to.equal(before.outbox);
    const [after] =
      await sql`select c.updated_at, l.last_seen from configuration_items c join ci_last_seen l using (ci_id)`;
    expect(after!.updated_at.toISOString()).to.equal(row!.updated_at.toISOString());
    expect(after!.last_seen.toISOString()).to.equal(at(5).toISOString());
  });

  it('reactivates an inactive or archived CI that is seen again, recording the status move', async () => {
    const pod = buildPod({ name: 'phoenix' });
    await ingest(sql, [pod], { now: at(0) });
    const ciId = await ciIdOf(sql, pod.external_id);
    for (const status of ['inactive', 'archived']) {
      await sql`update configuration_items set status = ${status}, status_updated_at = ${at(1)} where ci_id = ${ciId}`;
      const result = await ingest(sql, [pod], { now: at(2) });
      expect(result).to.include({ reactivated: 1, updated: 1 });
      const [ci] = await sql`select status, status_updated_at from configuration_items where ci_id = ${ciId}`;
      expect(ci!.status).to.equal('active');
      expect(ci!.status_updated_at.toISOString()).to.equal(at(2).toISOString());
      const history = await changesOf(sql, ciId);
      expect(history.at(-1)!.changes).to.deep.equal([{ field: 'status', old_value: status, new_value: 'active' }]);
    }
  });

  it('archives explicit delta deletions with a DELETED change, and leaves absent snapshot objects alone', async () => {
    const [a, b, c] = [buildPod({ name: 'a' }), buildPod({ name: 'b' }), buildPod({ name: 'c' })];
    await ingest(sql, [a!, b!, c!], { now: at(0) });
    const snapshot = await ingest(sql, [a!], { now: at(1) });
    expect(snapshot.archived).to.equal(0);
    expect(
      (await sql`select status from configuration_items where external_id = ${b!.external_id}`)[0]!.status,
    ).to.equal('active');

    const delta = await ingest(sql, [], {
      mode: 'delta',
      deletions: [b!.external_id, 'pod/default/never-seen'],
      now: at(2),
    });
    expect(delta).to.include({ archived: 1, changes: 1 });
    const ciId = await ciIdOf(sql, b!.external_id);
    const [ci] = await sql`select status, status_updated_at from configuration_items where ci_id = ${ciId}`;
    expect(ci).to.deep.include({ status: 'archived' });
    expect(ci!.status_updated_at.toISOString()).to.equal(at(2).toISOString());
    const deleted = (await changesOf(sql, ciId)).at(-1)!;
    expect(deleted.change_type).to.equal('DELETED');
    expect(deleted.changes).to.deep.equal([{ field: 'status', old_value: 'active', new_value: 'archived' }]);

    const again = await ingest(sql, [], { mode: 'delta', deletions: [b!.external_id], now: at(3) });
    expect(again.archived).to.equal(0);
  });

  it('processes inputs larger than one batch, each batch on its own', async () => {
    const pods = Array.from({ length: 23 }, (_, i) => buildPod({ name: `bulk-${i}` }));
    const first = await ingest(sql, pods, { now: at(0), batchSize: 5 });
    expect(first).to.include({ created: 23, changes: 23 });
    const changed = pods.map((p, i) => (i % 4 === 0 ? { ...p, raw_data: { ...p.raw_data, extra: i } } : p));
    const second = await ingest(sql, changed, { now: at(1), batchSize: 5 });
    expect(second).to.include({ updated: 6, unchanged: 17, changes: 6 });
    expect(await count(sql, 'ci_last_seen')).to.equal(23);
  });

  it('keeps metrics beside last_seen: a re-collection where only metrics moved rewrites no CI row and records no change', async () => {
    const pod = buildPod({ name: 'metered', type_data: { phase: 'Running', metrics: { cpu: '100m', memory: 1024 } } });
    await ingest(sql, [pod], { now: at(0) });
    const ciId = await ciIdOf(sql, pod.external_id);
    const moved = await ingest(
      sql,
      [{ ...pod, type_data: { phase: 'Running', metrics: { cpu: '250m', memory: 2048 } } }],
      { now: at(5) },
    );
    expect(moved).to.include({ unchanged: 1, updated: 0, changes: 0 });
    const [row] = await sql`
      select c.type_data, c.updated_at, l.metrics, l.last_seen from configuration_items c join ci_last_seen l using (ci_id) where ci_id = ${ciId}`;
    expect(row!.type_data).to.deep.equal({ phase: 'Running' });
    expect(row!.metrics).to.deep.equal({ cpu: '250m', memory: 2048 });
    expect(row!.updated_at.toISOString()).to.equal(at(0).toISOString());
    expect(row!.last_seen.toISOString()).to.equal(at(5).toISOString());
    // a real change still writes the row, and the metrics it came with
    const changed = await ingest(sql, [{ ...pod, type_data: { phase: 'Failed', metrics: { cpu: '0' } } }], {
      now: at(10),
    });
    expect(changed).to.include({ updated: 1, changes: 1 });
    const [update] = (await changesOf(sql, ciId)).filter((c) => c.change_type === 'UPDATED');
    expect(update!.changes).to.deep.equal([{ field: 'type_data.phase', old_value: 'Running', new_value: 'Failed' }]);
    const [after] = await sql`select l.metrics from ci_last_seen l where ci_id = ${ciId}`;
    expect(after!.metrics).to.deep.equal({ cpu: '0' });
    // metrics that stop coming are gone
    await ingest(sql, [{ ...pod, type_data: { phase: 'Failed' } }], { now: at(15) });
    const [none] = await sql`select l.metrics from ci_last_seen l where ci_id = ${ciId}`;
    expect(none!.metrics).to.equal(null);
  });

  it("resolves relationships by external id and replaces an object's outgoing set", async () => {
    const node = { ...buildPod({ name: 'node-1' }), external_id: 'node/node-1', ci_type: 'k8s.node' };
    const node2 = { ...buildPod({ name: 'node-2' }), external_id: 'node/node-2', ci_type: 'k8s.node' };
    const pod = buildPod({
      name: 'web',
      relationships: [
        { type: 'runs_on', target_external_id: 'node/node-1' },
        { type: 'runs_on', target_external_id: 'node/ghost' },
      ],
    });
    const first = await ingest(sql, [pod, node, node2], { now: at(0) });
    expect(first.relationships).to.deep.equal({ written: 1, removed: 0, unresolved: 1 });
    const [podId, node1Id, node2Id] = await Promise.all([
      ciIdOf(sql, pod.external_id),
      ciIdOf(sql, 'node/node-1'),
      ciIdOf(sql, 'node/node-2'),
    ]);
    let rels = await sql`select from_ci_id, to_ci_id, relationship_type from relationships`;
    expect(rels).to.deep.equal([{ from_ci_id: podId, to_ci_id: node1Id, relationship_type: 'runs_on' }]);

    const moved = { ...pod, relationships: [{ type: 'runs_on', target_external_id: 'node/node-2' }] };
    const second = await ingest(sql, [moved, node, node2], { now: at(1) });
    expect(second.relationships).to.deep.equal({ written: 1, removed: 1, unresolved: 0 });
    rels = await sql`select from_ci_id, to_ci_id from relationships`;
    expect(rels).to.deep.equal([{ from_ci_id: podId, to_ci_id: node2Id }]);
  });

  it('keeps the relationships of a reconcile stopped between batches, completing them on the next ingest', async () => {
    const nodes = ['n1', 'n2'].map((n) => ({
      ...buildPod({ name: n }),
      external_id: `node/${n}`,
      ci_type: 'k8s.node',
    }));
    const pods = Array.from({ length: 4 }, (_, i) =>
      buildPod({ name: `p${i}`, relationships: [{ type: 'runs_on', target_external_id: `node/n${(i % 2) + 1}` }] }),
    );
    // the nodes come in the last batch, and that batch fails: the state a crash leaves behind
    await sql.unsafe(`
      create function refuse_nodes() returns trigger language plpgsql as $$
      begin if new.ci_type = 'k8s.node' then raise exception 'interrupted'; end if; return new; end $$;
      create trigger refuse_nodes before insert on configuration_items for each row execute function refuse_nodes();`);
    try {
      let failure: Error | undefined;
      await ingest(sql, [...pods, ...nodes], { now: at(0), batchSize: 2 }).catch((error: Error) => (failure = error));
      expect(failure?.message).to.match(/interrupted/);
    } finally {
      await sql.unsafe('drop trigger refuse_nodes on configuration_items; drop function refuse_nodes();');
    }
    expect(await count(sql, 'configuration_items')).to.equal(4);
    expect(await count(sql, 'pending_relationships')).to.equal(4);

    const retry = await ingest(sql, [...pods, ...nodes], { now: at(1), batchSize: 2 });
    expect(retry).to.include({ created: 2, unchanged: 4 });
    expect(retry.relationships).to.deep.equal({ written: 4, removed: 0, unresolved: 0 });
    const rels = await sql<{ pod: string; node: string }[]>`
      select f.name as pod, t.name as node from relationships r
      join configuration_items f on f.ci_id = r.from_ci_id join configuration_items t on t.ci_id = r.to_ci_id
      order by f.name`;
    expect(rels).to.deep.equal([
      { pod: 'p0', node: 'n1' },
      { pod: 'p1', node: 'n2' },
      { pod: 'p2', node: 'n1' },
      { pod: 'p3', node: 'n2' },
    ]);
    expect(await count(sql, 'pending_relationships')).to.equal(0);
  });

  it('resolves a reference when its target arrives in a later ingest, without the owner changing', async () => {
    const pod = buildPod({ name: 'early', relationships: [{ type: 'runs_on', target_external_id: 'node/late' }] });
    const first = await ingest(sql, [pod], { now: at(0) });
    expect(first.relationships).to.deep.equal({ written: 0, removed: 0, unresolved: 1 });
    const node = { ...buildPod({ name: 'late' }), external_id: 'node/late', ci_type: 'k8s.node' };
    const second = await ingest(sql, [pod, node], { now: at(1) });
    expect(second).to.include({ created: 1, unchanged: 1 });
    expect(second.relationships).to.deep.equal({ written: 1, removed: 0, unresolved: 0 });
    const [rel] = await sql`select from_ci_id, to_ci_id from relationships`;
    expect(rel).to.deep.equal({
      from_ci_id: await ciIdOf(sql, pod.external_id),
      to_ci_id: await ciIdOf(sql, 'node/late'),
    });
    // an owner that drops the reference before the target exists leaves nothing waiting
    const other = buildPod({ name: 'fickle', relationships: [{ type: 'runs_on', target_external_id: 'node/never' }] });
    await ingest(sql, [other], { now: at(2) });
    await ingest(sql, [{ ...other, relationships: [] }], { now: at(3) });
    expect(await count(sql, 'pending_relationships')).to.equal(0);
  });

  it('records a change of 100 000 fields, or of 3 000 keys of 300 characters, without losing the rest of its batch', async function () {
    this.timeout(120_000);
    const manyKeys = (value: number) =>
      Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, i + value]));
    const bigKeys = (value: string) => {
      const keys = Object.fromEntries(
        Array.from({ length: 3000 }, (_, i) => [`${String(i).padStart(4, '0')}${'x'.repeat(296)}`, value]),
      );
      // and one key far longer than an index entry can hold
      return { ...keys, ['y'.repeat(4000)]: value };
    };
    const wide = buildPod({ name: 'wide' });
    const longKeys = buildPod({ name: 'long-keys' });
    const neighbour = buildPod({ name: 'neighbour' });
    const withLabels = (pod: UniversalRecord, labels: unknown) => ({ ...pod, raw_data: { ...pod.raw_data, labels } });
    await ingest(sql, [withLabels(wide, manyKeys(0)), withLabels(longKeys, bigKeys('a'.repeat(40)))], { now: at(0) });
    const result = await ingest(
      sql,
      [withLabels(wide, manyKeys(1)), neighbour, withLabels(longKeys, bigKeys('b'.repeat(40)))],
      { now: at(1) },
    );
    expect(result).to.include({ created: 1, updated: 2, changes: 3 });
    const [wideChange] = await sql<{ n: number }[]>`
      select jsonb_array_length(changes) as n from change_records where ci_id = ${await ciIdOf(sql, wide.external_id)} and change_type = 'UPDATED'`;
    expect(wideChange!.n).to.equal(100_000);
    const [longChange] = await sql<{ n: number; longest: number }[]>`
      select jsonb_array_length(changes) as n, (select max(length(c ->> 'field')) from jsonb_array_elements(changes) c) as longest
      from change_records where ci_id = ${await ciIdOf(sql, longKeys.external_id)} and change_type = 'UPDATED'`;
    expect(longChange).to.deep.equal({ n: 3001, longest: 'raw_data.labels.'.length + 4000 });
    expect(await sql`select 1 from configuration_items where external_id = ${neighbour.external_id}`).to.have.lengthOf(
      1,
    );
    // the capped search document still finds the CI by name
    const found =
      await sql`select ci_name from change_records where search_vector @@ to_tsquery('simple', 'wide') and change_type = 'UPDATED'`;
    expect(found.map((r) => r.ci_name)).to.deep.equal(['wide']);
  });

  it('refuses a delta naming one id as item and as deletion, so that a retry changes nothing', () => {
    const pod = buildPod({ name: 'both' });
    let failure: { code?: string; details?: { errors: { field: string; message: string }[] } } | undefined;
    try {
      assertSnapshot({ mode: 'delta', items: [pod, buildPod()], deletions: ['pod/default/other', pod.external_id] });
    } catch (error) {
      failure = error as typeof failure;
    }
    expect(failure?.code).to.equal('VALIDATION_ERROR');
    expect(failure!.details!.errors).to.deep.equal([
      {
        field: 'deletions.1',
        location: 'body',
        message: 'is also listed in items; send an id as an item or as a deletion, not both',
      },
    ]);
  });

  it('rolls back the CI write when its change record cannot be written (one transaction)', async () => {
    const pod = buildPod({ name: 'atomic', replicas: 1 });
    await ingest(sql, [pod], { now: at(0) });
    const ciId = await ciIdOf(sql, pod.external_id);
    await sql.unsafe(`
      create function refuse_change() returns trigger language plpgsql as $$
      begin raise exception 'change records are refused'; end $$;
      create trigger refuse_change before insert on change_records for each row execute function refuse_change();`);
    try {
      const fresh = buildPod({ name: 'never-created' });
      const updated = { ...pod, raw_data: { ...pod.raw_data, spec: { replicas: 9 } } };
      let failure: Error | undefined;
      try {
        await ingest(sql, [updated, fresh], { now: at(5) });
      } catch (error) {
        failure = error as Error;
      }
      expect(failure?.message).to.match(/change records are refused/);
      const [ci] = await sql`select raw_data, updated_at from configuration_items where ci_id = ${ciId}`;
      expect((ci!.raw_data as { spec: { replicas: number } }).spec.replicas).to.equal(1);
      expect(ci!.updated_at.toISOString()).to.equal(at(0).toISOString());
      expect(await sql`select 1 from configuration_items where external_id = ${fresh.external_id}`).to.have.lengthOf(0);
      const [seen] = await sql`select last_seen from ci_last_seen where ci_id = ${ciId}`;
      expect(seen!.last_seen.toISOString()).to.equal(at(0).toISOString());
      expect(await count(sql, 'outbox')).to.equal(1);
    } finally {
      await sql.unsafe('drop trigger refuse_change on change_records; drop function refuse_change();');
    }
  });

  it('rejects an invalid snapshot with field errors before writing anything', () => {
    const bad = { items: [buildPod(), { ...buildPod(), ci_type: 'NoDot' }, { ...buildPod(), raw_data: 'text' }] };
    let failure: { code?: string; details?: { errors: { field: string }[] } } | undefined;
    try {
      assertSnapshot(bad);
    } catch (error) {
      failure = error as typeof failure;
    }
    expect(failure?.code).to.equal('VALIDATION_ERROR');
    expect(failure!.details!.errors.map((e) => e.field)).to.include.members(['items.1.ci_type', 'items.2.raw_data']);
  });
  it('refreshes the planner statistics once for a write reconciled in parts, when its parts together created enough', async () => {
    const sourceId = await buildSource(sql, 'paged');
    const analyses = async () => {
      // the statistics views answer from a snapshot taken at their first read in a transaction
      await sql`select pg_stat_clear_snapshot()`;
      const [row] = await sql<
        { n: string }[]
      >`select analyze_count::text as n from pg_stat_user_tables where relname = 'configuration_items'`;
      return Number(row!.n);
    };
    const load = newBulkLoad(5);
    const page = (n: number) => [0, 1, 2].map((i) => buildPod({ name: `paged-${n}-${i}` }));
    const before = await analyses();
    const pages = [];
    for (const n of [1, 2, 3, 4]) {
      await reconcile(
        sql,
        { tenantId: DEFAULT_TENANT_ID, sourceId, scopeId: null, mode: 'snapshot', records: page(n) },
        { load },
      );
      pages.push(await analyses());
    }
    // three creations per page: the second page reaches five, and the refresh is not repeated
    expect(pages.map((n) => n - before)).to.deep.equal([0, 1, 1, 1]);
    expect(load).to.include({ created: 12, analyzed: true });
  });

  it('splits a source into parts the same way in the process and in the database', async () => {
    const ids = [
      'pod/default/a',
      'node/worker-1',
      'Pod/kube-system/coredns-7d8b',
      'pod/naïve/é',
      'svc/日本/名前',
      '🙂/x',
      '',
      'e\u0301/𝔘𝔫𝔦𝔠𝔬𝔡𝔢',
      'ß/Ω/€/\u{10FFFF}',
      'x'.repeat(300),
    ];
    for (let i = 0; i < 200; i++) ids.push(`pod/ns-${i % 7}/web-${i}`);
    const rows = await sql<{ id: string; part: number }[]>`
      select id, ${sql.unsafe(partExpression('id'))} as part from unnest(${ids}::text[]) as t(id)`;
    expect(rows.map((row) => row.part)).to.deep.equal(ids.map(partOf));
    const counts = ALL_PARTS.map((part) => ids.filter((id) => partOf(id) === part).length);
    expect(Math.min(...counts)).to.be.greaterThan(70);
  });

  describe('checks before anything is written', () => {
    const refusal = (document: unknown) => {
      try {
        assertSnapshot(document);
        return undefined;
      } catch (error) {
        return (error as { details: { errors: { field: string; message: string }[] } }).details.errors;
      }
    };
    /** A value that nests `levels` deep on its own (an object inside an object ...). */
    const nested = (levels: number, leaf: unknown = 1): unknown => {
      let value: unknown = leaf;
      for (let i = 0; i < levels; i++) value = { deeper: value };
      return value;
    };

    it('counts nesting from the document: an item may reach the limit, not one level past it', () => {
      // document 1, items 2, the item 3, raw_data 4: the innermost of raw_data's n objects is at 3 + n
      const fits = buildPod({ name: 'fits' });
      fits.raw_data = nested(MAX_JSON_DEPTH - 3) as Record<string, unknown>;
      expect(refusal({ items: [fits] })).to.equal(undefined);
      const over = buildPod({ name: 'over' });
      over.raw_data = nested(MAX_JSON_DEPTH - 2) as Record<string, unknown>;
      expect(refusal({ items: [buildPod(), over] })).to.deep.equal([
        { field: '(root)', location: 'body', message: `must not nest deeper than ${MAX_JSON_DEPTH} levels` },
      ]);
      // a member beside the items sits at 2, its innermost object at 1 + n; too deep is said before
      // the schema names the member unknown
      expect(refusal({ items: [fits], extra: nested(MAX_JSON_DEPTH) })![0]!.field).to.equal('(root)');
      expect(refusal({ items: [fits], extra: nested(MAX_JSON_DEPTH - 1) })![0]!.field).to.not.equal('(root)');
    });

    it('names each item holding a NUL, in a key or a value at any depth, and the scope and deletions', () => {
      const inKey = buildPod({ name: 'in-key' });
      inKey.raw_data = { spec: { containers: [{ ['na\u0000me']: 'x' }] } };
      const inValue = buildPod({ name: 'in-value' });
      inValue.raw_data = { metadata: { labels: { team: 'a\u0000b' } } };
      const errors = refusal({
        mode: 'delta',
        scope_id: 'prod',
        items: [buildPod({ name: 'clean' }), inKey, inValue],
        deletions: ['gone\u0000'],
      });
      expect(errors!.map((e) => e.field)).to.deep.equal(['items.1', 'items.2', 'deletions.0']);
      expect(refusal({ items: [buildPod({ name: 'clean' })] })).to.equal(undefined);
      // an instance id is refused by its schema already: it may hold no control character at all
      const scope = refusal({ mode: 'delta', scope_id: 'p\u0000rod', items: [inKey] });
      expect(scope!.map((e) => e.field)).to.include('scope_id');
      expect(scope!.every((e) => e.field === 'scope_id')).to.equal(true);
    });

    it('refuses unpaired surrogates anywhere an item, the scope or a deletion holds text, and takes pairs', () => {
      const lone = buildPod({ name: 'lone' });
      lone.raw_data = { spec: { ['\ud800']: ['fine', 'x\udbff'] } };
      const errors = refusal({
        mode: 'delta',
        scope_id: 'prod\udc00',
        items: [buildPod({ name: 'pair \ud83d\ude80' }), lone],
        deletions: ['\udfff'],
      });
      expect(errors!.map((e) => e.field)).to.deep.equal(['items.1', 'scope_id', 'deletions.0']);
      expect(errors!.every((e) => /valid Unicode/.test(e.message))).to.equal(true);
      // a NUL is named before a surrogate in the same item
      const both = buildPod({ name: 'both' });
      both.raw_data = { a: '\ud800', b: '\u0000' };
      expect(refusal({ items: [both] })![0]!.message).to.match(/NUL/);
    });
  });
});
