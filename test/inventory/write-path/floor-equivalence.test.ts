import { expect } from 'chai';
import type { Sql } from '../../../src/platform/db/database.js';
import { reconcile, type ReconcileResult } from '../../../src/inventory/write-path/reconcile.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { ensureSource } from '../../../src/collection/sources/store.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { cluster, type Collection } from '../../bench/cluster.js';
import { Floor, SCOPE } from '../../bench/floor.js';
import { resetDatabase, testDatabase } from '../../support/db.js';

const SHAPE = { pods: 600, nodes: 12, namespaces: 5, deployments: 48 };
const T0 = Date.UTC(2026, 10, 1);

/** What a source holds, keyed by external ids so that two sources compare row for row. */
async function holdings(sql: Sql, sourceId: string) {
  const cis = await sql`
    select c.external_id, c.scope_id, c.ci_type, c.name, c.namespace, c.status, c.raw_data, c.type_data,
           encode(c.content_hash, 'hex') as content_hash, c.created_at, c.updated_at, l.last_seen, l.metrics
    from configuration_items c join ci_last_seen l using (ci_id)
    where c.source_id = ${sourceId} order by c.external_id`;
  const changes = await sql`
    select c.external_id, r.scope_id, r.ci_name, r.ci_namespace, r.ci_type, r.change_type, r.changed_at, r.changes,
           r.changed_fields, r.search_vector::text as search_vector,
           (select count(*)::int from outbox o where o.aggregate_id = r.id::text) as outbox_rows,
           (select count(*)::int from change_stats_queue q where q.change_id = r.id) as queued
    from change_records r join configuration_items c using (ci_id)
    where r.source_id = ${sourceId} order by c.external_id, r.changed_at, r.change_type`;
  const relationships = await sql`
    select f.external_id as from_external_id, t.external_id as to_external_id, r.relationship_type,
           r.from_scope_id, r.to_scope_id, r.last_seen
    from relationships r join configuration_items f on f.ci_id = r.from_ci_id join configuration_items t on t.ci_id = r.to_ci_id
    where r.source_id = ${sourceId} order by 1, 2, 3`;
  const versions = await sql`
    select c.external_id, v.name, v.namespace, v.ci_type, v.scope_id, v.status, v.valid_from, v.valid_to
    from ci_versions v join configuration_items c using (ci_id)
    where c.source_id = ${sourceId} order by c.external_id, v.valid_from`;
  return { cis, changes, relationships, versions };
}

describe('the reconcile beside an independent writer of the same rows (the floor benchmark)', function () {
  this.timeout(120_000);
  let sql: Sql;
  let cinvSource: string;
  let floorSource: string;
  let lanesSource: string;
  const oneLaneResults: ReconcileResult[] = [];
  const lanesResults: ReconcileResult[] = [];

  before(async () => {
    sql = (await testDatabase()).sql;
    await resetDatabase(sql);
    cinvSource = (await ensureSource(sql, DEFAULT_TENANT_ID, 'through-cinv', 'kubernetes')).id;
    floorSource = (await ensureSource(sql, DEFAULT_TENANT_ID, 'through-floor', 'kubernetes')).id;
    lanesSource = (await ensureSource(sql, DEFAULT_TENANT_ID, 'in-lanes', 'kubernetes')).id;
    const floor = new Floor(sql, { tenantId: DEFAULT_TENANT_ID, sourceId: floorSource, scopeId: SCOPE });
    // batches of 100: relationships to objects of later batches wait as pending references
    const collections: Collection[] = [
      { collection: 0, generation: 0 },
      { collection: 1, generation: 0 },
      { collection: 2, generation: 1, changeEvery: 10 },
    ];
    for (const [minute, at] of collections.entries()) {
      const now = new Date(T0 + minute * 60_000);
      const records = [...cluster(SHAPE, at)];
      oneLaneResults.push(
        await reconcile(
          sql,
          { tenantId: DEFAULT_TENANT_ID, sourceId: cinvSource, scopeId: SCOPE, mode: 'snapshot', records },
          { now, batchSize: 100 },
        ),
      );
      await floor.collect({ items: [...cluster(SHAPE, at)] as UniversalRecord[] }, now);
      lanesResults.push(
        await reconcile(
          sql,
          { tenantId: DEFAULT_TENANT_ID, sourceId: lanesSource, scopeId: SCOPE, mode: 'snapshot', records },
          { now, batchSize: 100, lanes: true },
        ),
      );
    }
  });

  it('stores the same CIs, last-seen rows and metrics', async () => {
    const [cinv, floor] = await Promise.all([holdings(sql, cinvSource), holdings(sql, floorSource)]);
    expect(cinv.cis.length).to.be.greaterThan(700);
    expect(cinv.cis).to.deep.equal(floor.cis);
  });

  it('records the same changes, with the same search documents, outbox and statistics queue rows', async () => {
    const [cinv, floor] = await Promise.all([holdings(sql, cinvSource), holdings(sql, floorSource)]);
    expect(cinv.changes.filter((c) => c.change_type === 'UPDATED').length).to.be.greaterThan(50);
    expect(cinv.changes).to.deep.equal(floor.changes);
  });

  it('keeps the same relationships and CI versions', async () => {
    const [cinv, floor] = await Promise.all([holdings(sql, cinvSource), holdings(sql, floorSource)]);
    expect(cinv.relationships.length).to.be.greaterThan(600);
    expect(cinv.relationships).to.deep.equal(floor.relationships);
    expect(cinv.versions).to.deep.equal(floor.versions);
  });

  it('leaves the same counters, equal to the CIs they count', async () => {
    const counters = (sourceId: string) => sql`
      select status, ci_type, scope_id, namespace, sum(n)::int as n
      from (select status, ci_type, scope_id, namespace, cis as n from ci_counts where source_id = ${sourceId}
            union all
            select status, ci_type, scope_id, namespace, delta from ci_count_deltas where source_id = ${sourceId}) as counted
      group by 1, 2, 3, 4 having sum(n) <> 0 order by 1, 2, 3, 4`;
    const stored = (sourceId: string) => sql`
      select status, ci_type, scope_id, namespace, count(*)::int as n from configuration_items
      where source_id = ${sourceId} group by 1, 2, 3, 4 order by 1, 2, 3, 4`;
    const cinv = await counters(cinvSource);
    expect(cinv).to.have.length.greaterThan(5);
    expect(cinv).to.deep.equal(await stored(cinvSource));
    expect(await counters(floorSource)).to.deep.equal(cinv);
  });

  // on the embedded database (one session) the lanes take turns at it, batch by batch: the split,
  // the locks and the closing pass are the same, the overlap is the server's alone
  it('in two lanes, holds row for row what one lane holds, and reports the same outcome', async () => {
    const [oneLane, inLanes] = await Promise.all([holdings(sql, cinvSource), holdings(sql, lanesSource)]);
    expect(inLanes.cis).to.deep.equal(oneLane.cis);
    expect(inLanes.changes).to.deep.equal(oneLane.changes);
    expect(inLanes.relationships).to.deep.equal(oneLane.relationships);
    expect(inLanes.versions).to.deep.equal(oneLane.versions);
    const pending = (sourceId: string) => sql`
      select p.target_external_id, f.external_id as from_external_id, p.relationship_type
      from pending_relationships p join configuration_items f on f.ci_id = p.from_ci_id
      where p.source_id = ${sourceId} order by 1, 2, 3`;
    expect(await pending(lanesSource)).to.deep.equal(await pending(cinvSource));
    expect(lanesResults).to.deep.equal(oneLaneResults);
    expect(lanesResults[0]!.relationships.written).to.be.greaterThan(600);
  });
});
