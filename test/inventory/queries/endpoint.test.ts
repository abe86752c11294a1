import { expect } from 'chai';
import type { Sql } from '../../../src/platform/db/database.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, ciIdOf, ingest } from '../../support/factories.js';
import { insertRelationship } from '../relationships/fixtures.js';

const T0 = new Date('2026-11-01T10:00:00Z');
const T1 = new Date('2026-11-10T10:00:00Z');

const deployment = (name: string, namespace: string, replicas: number, image = 'shop:1') =>
  buildPod({
    name,
    namespace,
    ci_type: 'k8s.deployment',
    external_id: `deployment/${namespace}/${name}`,
    raw_data: { spec: { replicas, template: { image } } },
    relationships: [{ type: 'manages', target_external_id: `replicaset/${namespace}/${name}-rs` }],
  });
const replicaSet = (name: string, namespace: string, pods: string[]) =>
  buildPod({
    name: `${name}-rs`,
    namespace,
    ci_type: 'k8s.replicaset',
    external_id: `replicaset/${namespace}/${name}-rs`,
    raw_data: { spec: { replicas: pods.length } },
    relationships: pods.map((pod) => ({ type: 'manages', target_external_id: `pod/${namespace}/${pod}` })),
  });
const pod = (name: string, namespace: string, node: string) =>
  buildPod({
    name,
    namespace,
    raw_data: { spec: { nodeName: node } },
    relationships: [{ type: 'runs_on', target_external_id: `node/${node}` }],
  });
const node = (name: string, kubelet: string) =>
  buildPod({
    name,
    namespace: null,
    ci_type: 'k8s.node',
    external_id: `node/${name}`,
    raw_data: { status: { nodeInfo: { kubeletVersion: kubelet } } },
  });

/** Two clusters: `east` (source east) runs checkout in shop, `west` (source west) runs billing in payments. */
function east(image: string) {
  return [
    deployment('checkout', 'shop', 2, image),
    replicaSet('checkout', 'shop', ['checkout-a', 'checkout-b']),
    pod('checkout-a', 'shop', 'node-1'),
    pod('checkout-b', 'shop', 'node-2'),
    node('node-1', 'v1.28.3'),
    node('node-2', 'v1.29.1'),
    // an east pod on a west node: the relationship leads out of the east source
    pod('stray', 'ops', 'node-9'),
  ];
}
const west = [
  deployment('billing', 'payments', 1, 'billing:1'),
  replicaSet('billing', 'payments', ['billing-a']),
  pod('billing-a', 'payments', 'node-9'),
  node('node-9', 'v1.30.0'),
];

describe('POST /api/v1/query: the query language over a small estate', function () {
  this.timeout(120_000);
  let sql: Sql;
  let app: TestApp;
  let admin: string;
  let eastOnly: string;

  const run = (body: Record<string, unknown>, key = admin) => app.request('POST', '/api/v1/query', { key, body });
  const names = (reply: { body: { items: { fields: { name: string } }[] } }) =>
    reply.body.items.map((item) => item.fields.name);

  before(async () => {
    sql = (await testDatabase()).sql;
    await resetDatabase(sql);
    await ingest(sql, east('shop:1'), { source: 'east', now: T0 });
    await ingest(sql, west, { source: 'west', now: T0 });
    // at T1 checkout rolls a new image: one change record on the deployment
    await ingest(sql, east('shop:2'), { source: 'east', now: T1 });
    // relationships resolve inside their source: the stray pod's node in the west source is written by hand
    await insertRelationship(sql, await ciIdOf(sql, 'pod/ops/stray'), await ciIdOf(sql, 'node/node-9'), 'runs_on');
    app = await startTestApp();
    admin = await createKey(sql, 'adm');
    const [eastSource] = await sql<{ id: string }[]>`select id::text from sources where name = 'east'`;
    eastOnly = await createKey(sql, 'svc', {
      permissions: ['configuration_items:read', 'relationships:read', 'changes:read'],
      scopes: [{ sourceId: eastSource!.id, scopeId: null }],
    });
  });
  after(async () => {
    await app?.close();
  });

  it('matches on columns and JSON paths, numbers as numbers', async () => {
    const reply = await run({ query: 'ci_type = k8s.deployment and raw_data.spec.replicas >= 2 | fields name' });
    expect(reply.status, reply.text).to.equal(200);
    expect(names(reply)).to.deep.equal(['checkout']);
    const listed = await run({ query: 'namespace in (shop, payments) and ci_type = k8s.pod | sort name desc' });
    expect(names(listed)).to.deep.equal(['checkout-b', 'checkout-a', 'billing-a']);
  });

  it('walks hops in sequence to the end of the path, or answers its start with return first', async () => {
    const pods = await run({
      query: 'name = checkout -[manages]-> ci_type = k8s.replicaset -[manages]-> ci_type = k8s.pod -[runs_on]-> *',
    });
    expect(names(pods)).to.deep.equal(['node-1', 'node-2']);
    const old = await run({
      query:
        'ci_type = k8s.deployment -[manages 2]-> * -[runs_on]-> raw_data.status.nodeInfo.kubeletVersion < "v1.29" | return first',
    });
    expect(names(old)).to.deep.equal(['checkout']);
    const back = await run({ query: 'name = node-9 <-[runs_on]- * <-[manages 1..2]- ci_type = k8s.deployment' });
    expect(names(back)).to.deep.equal(['billing']);
  });

  it('finds what changed, with its records beside it', async () => {
    const reply = await run({
      query: `changed raw_data.spec.template since ${new Date(T1.getTime() - 3_600_000).toISOString()} | with changes`,
    });
    expect(names(reply)).to.deep.equal(['checkout']);
    const changes = reply.body.items[0].changes;
    expect(changes).to.have.lengthOf(1);
    expect(changes[0].changes[0]).to.deep.include({ field: 'raw_data.spec.template.image', old_value: 'shop:1' });
    const none = await run({ query: `changed raw_data.spec.replicas since ${T0.toISOString()}` });
    expect(names(none)).to.deep.equal([]);
  });

  it('aggregates: count by, and avg of a path by a field', async () => {
    const counted = await run({ query: 'ci_type = k8s.pod | count by namespace' });
    expect(counted.body.groups).to.deep.equal([
      { key: { namespace: 'shop' }, count: 2, value: null },
      { key: { namespace: 'ops' }, count: 1, value: null },
      { key: { namespace: 'payments' }, count: 1, value: null },
    ]);
    const avg = await run({ query: 'ci_type = k8s.deployment | avg(raw_data.spec.replicas) by namespace' });
    expect(avg.body.groups.map((g: { key: object; value: number }) => [g.key, g.value])).to.deep.equal([
      [{ namespace: 'shop' }, 2],
      [{ namespace: 'payments' }, 1],
    ]);
  });

  it('reads the inventory as it was, and what matches now and did not then', async () => {
    const then = await run({
      query: 'raw_data.spec.template.image = "shop:1" | fields name',
      as_of: new Date(T1.getTime() - 1000).toISOString(),
    });
    expect(names(then)).to.deep.equal(['checkout']);
    const now = await run({ query: 'raw_data.spec.template.image = "shop:1"' });
    expect(names(now)).to.deep.equal([]);
    const entered = await run({
      query: 'raw_data.spec.template.image = "shop:2"',
      compare_to: new Date(T1.getTime() - 1000).toISOString(),
    });
    expect(names(entered)).to.deep.equal(['checkout']);
  });

  it('pages by cursor over its sort', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await run({ query: 'ci_type in (k8s.pod, k8s.node) | sort ci_type desc, name', limit: 2, cursor });
      expect(page.status, page.text).to.equal(200);
      seen.push(...names(page));
      cursor = page.body.next_cursor ?? undefined;
    } while (cursor);
    // k8s.pod sorts after k8s.node: descending, pods first
    expect(seen).to.deep.equal(['billing-a', 'checkout-a', 'checkout-b', 'stray', 'node-1', 'node-2', 'node-9']);
  });

  it('keeps a scoped key inside its data scopes: hops into other scopes count as hidden', async () => {
    const all = await run({ query: 'ci_type = k8s.pod | count' }, eastOnly);
    expect(all.body.groups).to.deep.equal([{ key: {}, count: 3, value: null }]);
    const nodes = await run({ query: 'ci_type = k8s.pod -[runs_on]-> *' }, eastOnly);
    expect(names(nodes)).to.deep.equal(['node-1', 'node-2']);
    expect(nodes.body.hidden).to.equal(1);
    const unscoped = await run({ query: 'ci_type = k8s.pod -[runs_on]-> *' });
    expect(names(unscoped)).to.deep.equal(['node-1', 'node-2', 'node-9']);
    expect(unscoped.body.hidden).to.equal(0);
    const west = await run({ query: 'namespace = payments' }, eastOnly);
    expect(names(west)).to.deep.equal([]);
  });

  it("binds named parameters, and runs a saved query under the opener's rights", async () => {
    const bound = await run({ query: 'ci_type = k8s.pod and namespace = $ns | count', params: { ns: 'payments' } });
    expect(bound.body.groups[0].count).to.equal(1);
    const missing = await run({ query: 'namespace = $ns' });
    expect(missing.status).to.equal(422);
    expect(missing.body.error.details).to.include({ line: 1, column: 13 });
    const saved = await app.request('POST', '/api/v1/saved-views', {
      key: admin,
      body: {
        name: 'pods by namespace',
        view: 'query',
        query: `q=${encodeURIComponent('ci_type = k8s.pod and namespace = $ns')}`,
        shared: true,
      },
    });
    expect(saved.status, saved.text).to.equal(201);
    const mine = await run({ saved_view_id: saved.body.id, params: { ns: 'shop' } });
    expect(names(mine)).to.deep.equal(['checkout-a', 'checkout-b']);
    // the east key opens the shared query and sees what it may: nothing of payments
    const theirs = await run({ saved_view_id: saved.body.id, params: { ns: 'payments' } }, eastOnly);
    expect(names(theirs)).to.deep.equal([]);
    const link = await app.get(`/api/v1/query?saved_view_id=${saved.body.id}&param=ns=shop`, admin);
    expect(names(link)).to.deep.equal(['checkout-a', 'checkout-b']);
  });

  it('answers syntax errors and unknown names with the position, what was expected and the nearest names', async () => {
    const syntax = await run({ query: 'name = checkout and (ci_type = k8s.pod' });
    expect(syntax.status).to.equal(422);
    expect(syntax.body.error.code).to.equal('INVALID_QUERY');
    expect(syntax.body.error.details).to.include({ line: 1, column: 39 });
    expect(syntax.body.error.details.expected).to.include('")"');
    const unknown = await run({ query: 'ci_type = k8s.pod -[run_on]-> *' });
    expect(unknown.body.error.details.suggestions).to.deep.equal(['runs_on']);
  });

  it('streams CSV for Accept: text/csv, and links run through GET ?q=', async () => {
    const reply = await app.request('POST', '/api/v1/query', {
      key: admin,
      body: { query: 'ci_type = k8s.node | sort name | fields name, raw_data.status.nodeInfo.kubeletVersion' },
      headers: { accept: 'text/csv' },
    });
    expect(reply.status).to.equal(200);
    const lines = reply.text.trim().split('\n');
    expect(lines[0]).to.equal('ci_id,name,raw_data.status.nodeInfo.kubeletVersion');
    expect(lines.slice(1).map((l) => l.split(',').slice(1).join(','))).to.deep.equal([
      'node-1,v1.28.3',
      'node-2,v1.29.1',
      'node-9,v1.30.0',
    ]);
    const link = await app.get(`/api/v1/query?q=${encodeURIComponent('name = node-1')}`, admin);
    expect(names(link)).to.deep.equal(['node-1']);
  });

  it('explains without running: which reads use an index', async () => {
    const reply = await run({ query: 'ci_type = k8s.pod and namespace = shop', explain: true });
    expect(reply.body.kind).to.equal('explain');
    expect(reply.body.plan.rating).to.be.oneOf(['light', 'moderate', 'heavy']);
    expect(reply.body.plan.steps.some((s: { table: string }) => s.table === 'configuration_items')).to.equal(true);
  });
});
