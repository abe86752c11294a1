import { expect } from 'chai';
import type { Permission } from '../../../src/platform/auth/principal.js';
import type { Sql } from '../../../src/platform/db/database.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { sweepLifecycle } from '../../../src/inventory/lifecycle/sweep.js';
import { createKey, startTestApp, type Reply, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { ciIdOf, ingest } from '../../support/factories.js';
import { insertRelationship } from '../relationships/fixtures.js';

/**
 * The query endpoint inside the caller's data scopes, for each way an answer reads the inventory:
 * matches, hops (what they reach outside is counted as hidden and never walked through),
 * aggregates, the records of `with changes`, `compare_to`, `as_of` and CSV; and the permissions a
 * hop and the history add to the route's own.
 */

const T0 = new Date('2026-10-01T00:00:00Z');
const T1 = new Date('2026-10-01T01:00:00Z');
const T2 = new Date('2026-10-01T02:00:00Z');
const NOW = new Date('2026-10-01T03:00:00Z');
const READS: Permission[] = ['configuration_items:read', 'relationships:read', 'changes:read'];

const ci = (name: string, ciType: string, targets: [string, string][] = [], extra: Record<string, unknown> = {}) =>
  ({
    external_id: name,
    ci_type: ciType,
    name,
    namespace: 'ns',
    raw_data: { spec: { replicas: 1 }, ...extra },
    relationships: targets.map(([type, target]) => ({ type, target_external_id: target })),
  }) as UniversalRecord;

describe('POST /api/v1/query: a scoped key sees only its scopes, whatever the query reads', function () {
  this.timeout(120_000);
  let sql: Sql;
  let app: TestApp;
  let admin: string;
  /** The whole east source; only its instance e2; all data without relationships:read or changes:read. */
  let east: string;
  let e2: string;
  let noRelationships: string;
  let noChanges: string;
  let noCis: string;
  const id: Record<string, string> = {};

  const run = (body: Record<string, unknown>, key: string) => app.request('POST', '/api/v1/query', { key, body });
  const names = (reply: Reply) => {
    expect(reply.status, reply.text).to.equal(200);
    return (reply.body.items as { ci_id: string }[]).map((item) => nameOf(item.ci_id)).sort();
  };
  const nameOf = (ciId: string) => Object.entries(id).find(([, v]) => v === ciId)?.[0] ?? ciId;

  before(async () => {
    sql = (await testDatabase()).sql;
    await resetDatabase(sql);
    // east/e1: a deployment managing a pod on an east node; the pod also ran a pod that goes away
    const e1At = (at: Date, extra: Record<string, unknown> = {}, gone = true) =>
      ingest(
        sql,
        [
          ci('d-east', 'k8s.deployment', [['manages', 'p-east']]),
          ci(
            'p-east',
            'k8s.pod',
            [['runs_on', 'n-east'], ...(gone ? ([['owns', 'p-gone']] as [string, string][]) : [])],
            extra,
          ),
          ci('n-east', 'k8s.node'),
          ...(gone ? [ci('p-gone', 'k8s.pod')] : []),
          ci('mover', 'k8s.pod'),
        ],
        { source: 'east', scopeId: 'e1', mode: 'delta', now: at },
      );
    const { sourceId: eastId } = await e1At(T0);
    await ingest(sql, [ci('p-east2', 'k8s.pod')], { source: 'east', scopeId: 'e2', mode: 'delta', now: T0 });
    const { sourceId: westId } = await ingest(
      sql,
      [ci('n-west', 'k8s.node'), ci('p-west', 'k8s.pod', [['runs_on', 'n-west']])],
      {
        source: 'west',
        mode: 'delta',
        now: T0,
      },
    );
    // at T1: p-east and p-west change, mover moves to e2, p-gone is archived; at T2 it is removed for good
    await e1At(T1, { changed: true });
    await ingest(sql, [ci('mover', 'k8s.pod')], { source: 'east', scopeId: 'e2', mode: 'delta', now: T1 });
    await ingest(sql, [ci('n-west', 'k8s.node'), ci('p-west', 'k8s.pod', [['runs_on', 'n-west']], { changed: true })], {
      source: 'west',
      mode: 'delta',
      now: T1,
    });
    await ingest(sql, [], { source: 'east', scopeId: 'e1', mode: 'delta', deletions: ['p-gone'], now: T1 });
    for (const name of ['d-east', 'p-east', 'n-east', 'p-gone', 'mover', 'p-east2', 'n-west', 'p-west'])
      id[name] = await ciIdOf(sql, name);
    await sweepLifecycle(
      sql,
      { inactiveAfterMs: 1e12, archiveInactiveAfterMs: 1e12, archiveRetentionMs: 1_800_000, batchSize: 100 },
      T2,
    );
    // relationships across sources are not the write path's: written as it stores them
    await insertRelationship(sql, id['p-east']!, id['n-west']!, 'runs_on', eastId, { from: 'e1', to: null });
    await insertRelationship(sql, id['p-east2']!, id['n-west']!, 'runs_on', eastId, { from: 'e2', to: null });
    app = await startTestApp();
    app.clock.now = NOW;
    admin = await createKey(sql, 'adm');
    east = await createKey(sql, 'svc', { permissions: READS, scopes: [{ sourceId: eastId, scopeId: null }] });
    e2 = await createKey(sql, 'svc', { permissions: READS, scopes: [{ sourceId: eastId, scopeId: 'e2' }] });
    const all = [{ sourceId: null, scopeId: null }];
    noRelationships = await createKey(sql, 'svc', {
      permissions: ['configuration_items:read', 'changes:read'],
      scopes: all,
    });
    noChanges = await createKey(sql, 'svc', {
      permissions: ['configuration_items:read', 'relationships:read'],
      scopes: all,
    });
    noCis = await createKey(sql, 'svc', { permissions: ['relationships:read', 'changes:read'], scopes: all });
    void westId;
  });
  after(async () => {
    await app?.close();
  });

  it('matches nothing outside the scopes, whatever names it', async () => {
    expect(names(await run({ query: '* | limit 1000' }, east))).to.deep.equal([
      'd-east',
      'mover',
      'n-east',
      'p-east',
      'p-east2',
    ]);
    expect(names(await run({ query: '*' }, e2))).to.deep.equal(['mover', 'p-east2']);
    expect(names(await run({ query: `ci_id = ${id['p-west']}` }, east))).to.deep.equal([]);
    expect(names(await run({ query: 'name in (n-west, p-west) or ci_type = k8s.node' }, east))).to.deep.equal([
      'n-east',
    ]);
    expect(
      names(await run({ query: 'status in (active, inactive, archived) and name starts with p' }, east)),
    ).to.deep.equal(['p-east', 'p-east2']);
  });

  it('walks only through what the scopes hold, and counts what it reached outside as hidden', async () => {
    const nodes = await run({ query: 'name = p-east -[runs_on]-> *' }, east);
    expect(names(nodes)).to.deep.equal(['n-east']);
    expect(nodes.body.hidden).to.equal(1);
    const all = await run({ query: 'name = p-east -[runs_on]-> *' }, admin);
    expect(names(all)).to.deep.equal(['n-east', 'n-west']);
    expect(all.body.hidden).to.equal(0);
    // through n-west p-east2 lies two relationships away: not for a key that may not walk through n-west
    const around = 'name = p-east <-[runs_on 2]-> *';
    expect(names(await run({ query: around }, admin))).to.deep.equal(['p-east', 'p-east2', 'p-west']);
    const scoped = await run({ query: around }, east);
    expect(names(scoped)).to.deep.equal(['p-east']);
    expect(scoped.body.hidden).to.equal(1);
    const start = await run({ query: 'ci_type = k8s.deployment -[manages]-> * -[runs_on]-> * | return first' }, east);
    expect(names(start)).to.deep.equal(['d-east']);
  });

  it('counts a relationship to a CI removed for good as reaching nothing, not as hidden', async () => {
    for (const key of [east, admin]) {
      const reply = await run({ query: 'name = p-east -[owns]-> status in (active, inactive, archived)' }, key);
      expect(names(reply)).to.deep.equal([]);
      expect(reply.body.hidden).to.equal(0);
    }
    // before its removal it was there, inside the scopes: reached, not hidden
    const then = await run(
      { query: 'name = p-east -[owns]-> status in (active, archived)', as_of: '2026-10-01T01:30:00Z' },
      east,
    );
    expect(names(then)).to.deep.equal(['p-gone']);
    expect(then.body.hidden).to.equal(0);
  });

  it('aggregates only what the scopes hold', async () => {
    const bySource = await run({ query: '* | count by source_id' }, east);
    expect(bySource.body.groups.map((g: { count: number }) => g.count)).to.deep.equal([5]);
    const pods = await run({ query: 'ci_type = k8s.pod | sum(raw_data.spec.replicas) by namespace' }, e2);
    expect(pods.body.groups).to.deep.equal([{ key: { namespace: 'ns' }, count: 2, value: 2 }]);
    const reached = await run({ query: 'ci_type = k8s.pod -[runs_on]-> * | count' }, east);
    expect(reached.body.groups).to.deep.equal([{ key: {}, count: 1, value: null }]);
    expect(reached.body.hidden).to.equal(1);
  });

  it('shows the change records the scopes hold, a move only to who sees both instances', async () => {
    const changed = await run({ query: 'changed since 2026-10-01T00:30:00Z | with changes' }, east);
    expect(names(changed)).to.deep.equal(['mover', 'p-east']);
    for (const item of changed.body.items as { ci_id: string; changes: { change_type: string }[] }[])
      expect(item.changes.length, nameOf(item.ci_id)).to.be.greaterThan(0);
    // the move's record carries e1's values: e2 alone does not see it, nor the creation in e1
    expect(names(await run({ query: 'changed since 2026-10-01T00:30:00Z' }, e2))).to.deep.equal([]);
    const mover = await run({ query: 'name = mover | with changes' }, e2);
    expect(names(mover)).to.deep.equal(['mover']);
    expect(mover.body.items[0].changes).to.deep.equal([]);
    const full = await run({ query: 'name = mover | with changes' }, east);
    expect(full.body.items[0].changes.map((c: { change_type: string }) => c.change_type)).to.deep.equal([
      'UPDATED',
      'CREATED',
    ]);
    const archived = await run({ query: 'archived since 2026-10-01' }, east);
    expect(names(archived)).to.deep.equal([]);
  });

  it('reads the past and compares moments inside the scopes (then and now)', async () => {
    expect(names(await run({ query: '*', as_of: '2026-10-01T00:30:00Z' }, e2))).to.deep.equal(['p-east2']);
    expect(names(await run({ query: '*', as_of: '2026-10-01T00:30:00Z' }, east))).to.deep.equal([
      'd-east',
      'mover',
      'n-east',
      'p-east',
      'p-east2',
      'p-gone',
    ]);
    const entered = await run({ query: 'raw_data.changed = true', compare_to: '2026-10-01T00:30:00Z' }, east);
    expect(names(entered)).to.deep.equal(['p-east']);
    const everyone = await run({ query: 'raw_data.changed = true', compare_to: '2026-10-01T00:30:00Z' }, admin);
    expect(names(everyone)).to.deep.equal(['p-east', 'p-west']);
    // mover was in e1 then: to e2 it appeared since
    expect(names(await run({ query: '*', compare_to: '2026-10-01T00:30:00Z' }, e2))).to.deep.equal(['mover']);
  });

  it('streams CSV and answers links with the same scopes', async () => {
    const csv = await app.request('POST', '/api/v1/query', {
      key: east,
      body: { query: '* | fields name | sort name' },
      headers: { accept: 'text/csv' },
    });
    expect(csv.status).to.equal(200);
    expect(
      csv.text
        .trim()
        .split('\n')
        .slice(1)
        .map((line) => line.split(',')[1]),
    ).to.deep.equal(['d-east', 'mover', 'n-east', 'p-east', 'p-east2']);
    const groups = await app.request('POST', '/api/v1/query', {
      key: e2,
      body: { query: '* | count by ci_type' },
      headers: { accept: 'text/csv' },
    });
    expect(groups.text.trim().split('\n')).to.deep.equal(['ci_type,count', 'k8s.pod,2']);
    const link = await app.get(`/api/v1/query?q=${encodeURIComponent('ci_type = k8s.node')}`, east);
    expect(names(link)).to.deep.equal(['n-east']);
  });

  it('refuses a hop without relationships:read and history without changes:read (403)', async () => {
    const refused = async (key: string, query: string, required: string) => {
      const reply = await run({ query }, key);
      expect(reply.status, `${query}: ${reply.text}`).to.equal(403);
      expect(reply.body.error.details, query).to.deep.include({ required });
    };
    await refused(noRelationships, 'name = p-east -[runs_on]-> *', 'relationships:read');
    await refused(noRelationships, '* <-[*]- * | count', 'relationships:read');
    await refused(noChanges, 'changed since now-1d', 'changes:read');
    await refused(noChanges, 'name = p-east and not changed name', 'changes:read');
    await refused(noChanges, 'archived since now-7d', 'changes:read');
    await refused(noChanges, '* | with changes', 'changes:read');
    await refused(noChanges, '* -[runs_on]-> changed since now-1d', 'changes:read');
    // what needs neither: a match, and when a CI was created (a column of the CI)
    expect((await run({ query: '* | count' }, noRelationships)).status).to.equal(200);
    expect((await run({ query: 'created since now-1d' }, noChanges)).status).to.equal(200);
    expect((await run({ query: '*' }, noCis)).status).to.equal(403);
  });
});
