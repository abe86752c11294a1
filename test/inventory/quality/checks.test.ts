import { expect } from 'chai';
import { catchUpQuality, sourceListed, sweepQuality } from '../../../src/inventory/quality/service.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, useTestApp, type TestApp } from '../../support/app.js';
import { ingest } from '../../support/factories.js';

const pod = (name: string, spec: Record<string, unknown>, team = 'payments'): UniversalRecord => ({
  external_id: `pod/shop/${name}`,
  ci_type: 'k8s.pod',
  name,
  namespace: 'shop',
  raw_data: { metadata: { name, namespace: 'shop', labels: { team } }, spec: { nodeName: 'node-1', ...spec } },
  type_data: {},
  relationships: [
    { type: 'runs_on', target_external_id: 'node/node-1' },
    { type: 'member_of', target_external_id: 'namespace/shop' },
  ],
});

const node: UniversalRecord = {
  external_id: 'node/node-1',
  ci_type: 'k8s.node',
  name: 'node-1',
  namespace: null,
  raw_data: { metadata: { name: 'node-1' }, status: { nodeInfo: { kubeletVersion: 'v1.29.1' } } },
  type_data: {},
};

const namespace: UniversalRecord = {
  external_id: 'namespace/shop',
  ci_type: 'k8s.namespace',
  name: 'shop',
  namespace: null,
  raw_data: { metadata: { name: 'shop' } },
  type_data: {},
};

const CONTAINERS = { containers: [{ name: 'app', image: 'shop:1', resources: { limits: { cpu: '1' } } }] };

interface Overview {
  cis: number;
  score: number | null;
  measures: Record<string, { items: number; failing: number; score: number | null }>;
  by_owner: { owner: string | null; cis: number }[];
  pending: number;
}

async function overview(app: TestApp, key: string, query = ''): Promise<Overview> {
  const reply = await app.get(`/api/v1/quality${query}`, key);
  expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
  return reply.body as Overview;
}

async function failing(app: TestApp, key: string, measure: string, query = '') {
  const reply = await app.get(`/api/v1/quality/${measure}/items${query}`, key);
  expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
  return reply.body as { items: { name: string; reason: string }[]; query: string | null; next_cursor: string | null };
}

describe('data-quality checks', () => {
  const app = useTestApp();
  let admin: string;

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
  });

  const settle = () => catchUpQuality(app.current.context);

  it('finds missing paths and relationships, and counts them as the scores say', async () => {
    await ingest(app.current.sql, [pod('web-1', CONTAINERS), pod('web-2', {}, 'search'), namespace]);
    await settle();
    const scores = await overview(app.current, admin);
    expect(scores.cis).to.equal(3);
    expect(scores.measures.completeness!.failing).to.equal(1);
    // both pods run on a node the inventory does not hold
    expect(scores.measures.orphans!.failing).to.equal(2);
    expect(scores.pending).to.equal(0);
    const incomplete = await failing(app.current, admin, 'completeness');
    expect(incomplete.items.map((item) => [item.name, item.reason])).to.deep.equal([
      ['web-2', 'missing raw_data.spec.containers'],
    ]);
    const orphans = await failing(app.current, admin, 'orphans');
    expect(orphans.items.map((item) => item.reason)).to.deep.equal([
      'no runs_on relationship to an active k8s.node',
      'no runs_on relationship to an active k8s.node',
    ]);
    expect(orphans.query).to.equal(null);
    expect(scores.by_owner.map((row) => row.owner).sort()).to.deep.equal([null, 'payments', 'search']);
    const mine = await overview(app.current, admin, '?owner=payments');
    expect([mine.cis, mine.measures.completeness!.failing]).to.deep.equal([1, 0]);
  });

  it('mends an orphan when the CI it points at arrives, and marks it again when that CI goes', async () => {
    await ingest(app.current.sql, [pod('web-1', CONTAINERS), namespace], { source: 'k8s' });
    await settle();
    expect((await overview(app.current, admin)).measures.orphans!.failing).to.equal(1);
    await ingest(app.current.sql, [pod('web-1', CONTAINERS), namespace, node], { source: 'k8s' });
    await settle();
    expect((await overview(app.current, admin)).measures.orphans!.failing).to.equal(0);
    const reply = await app.current.get('/api/v1/configuration-items?filter=name:eq:node-1', admin);
    const nodeId = (reply.body as { items: { ci_id: string }[] }).items[0]!.ci_id;
    const removed = await app.current.request('DELETE', `/api/v1/configuration-items/${nodeId}`, { key: admin });
    expect(removed.status).to.be.oneOf([200, 204]);
    await settle();
    expect((await failing(app.current, admin, 'orphans')).items.map((item) => item.name)).to.deep.equal(['web-1']);
    // the node left the active inventory: no verdicts, said so rather than a 404
    const gone = await app.current.get(`/api/v1/quality/configuration-items/${nodeId}`, admin);
    expect([gone.status, gone.body.checked, gone.body.missing]).to.deep.equal([200, false, []]);
  });

  it('marks a replica set its deployment no longer manages, though only the deployment was written', async () => {
    const replicaSet: UniversalRecord = {
      external_id: 'replicaset/shop/web-1',
      ci_type: 'k8s.replicaset',
      name: 'web-1',
      namespace: null,
      raw_data: { metadata: { name: 'web-1', ownerReferences: [{ kind: 'Deployment', name: 'web' }] } },
      type_data: {},
    };
    const deployment = (manages: boolean): UniversalRecord => ({
      external_id: 'deployment/shop/web',
      ci_type: 'k8s.deployment',
      name: 'web',
      namespace: null,
      raw_data: { metadata: { name: 'web' }, spec: { replicas: manages ? 2 : 3 } },
      type_data: {},
      relationships: manages ? [{ type: 'manages', target_external_id: 'replicaset/shop/web-1' }] : [],
    });
    await ingest(app.current.sql, [replicaSet, deployment(true)], { source: 'k8s' });
    await settle();
    expect((await failing(app.current, admin, 'orphans')).items).to.deep.equal([]);
    await ingest(app.current.sql, [deployment(false)], { source: 'k8s', mode: 'delta' });
    await settle();
    expect((await failing(app.current, admin, 'orphans')).items.map((item) => [item.name, item.reason])).to.deep.equal([
      ['web-1', 'no manages relationship from an active k8s.deployment'],
    ]);
  });

  it('counts a CI stale once its type’s threshold passes unseen, and fresh again once seen', async () => {
    const seenAt = new Date(Date.now() - 7 * 3_600_000);
    await ingest(app.current.sql, [pod('old', CONTAINERS), node, namespace], { now: seenAt, source: 'k8s' });
    await ingest(app.current.sql, [pod('new', CONTAINERS)], { source: 'k8s2' });
    await settle();
    await sweepQuality(app.current.context, new Date());
    const stale = await failing(app.current, admin, 'staleness');
    expect(stale.items.map((item) => item.name).sort()).to.deep.equal(['node-1', 'old', 'shop']);
    expect(stale.query).to.match(/^last_seen < /);
    // seen again by an unchanged collection: the next sweep clears it
    await ingest(app.current.sql, [pod('old', CONTAINERS), node, namespace], { source: 'k8s' });
    await sweepQuality(app.current.context, new Date());
    expect((await failing(app.current, admin, 'staleness')).items).to.deep.equal([]);
  });

  it('counts CIs the last list did not see as unfresh, and every CI of a source past its schedule', async () => {
    const before = new Date(Date.now() - 60_000);
    const { sourceId } = await ingest(app.current.sql, [pod('gone', CONTAINERS)], { now: before, source: 'k8s' });
    const listedAt = new Date();
    await ingest(app.current.sql, [pod('here', CONTAINERS), node, namespace], { source: 'k8s', mode: 'delta' });
    await settle();
    await sourceListed(app.current.context, DEFAULT_TENANT_ID, sourceId, listedAt);
    // the list is recorded at once; its unseen CIs are flagged by the sweep
    expect((await failing(app.current, admin, 'freshness')).items).to.deep.equal([]);
    await sweepQuality(app.current.context, new Date());
    const unfresh = await failing(app.current, admin, 'freshness');
    expect(unfresh.items.map((item) => item.name)).to.deep.equal(['gone']);
    expect(unfresh.query).to.equal(`source_id = ${sourceId} and last_seen < ${listedAt.toISOString()}`);
    await app.current.sql`
      update sources set schedule_config = '{"enabled": true, "interval_minutes": 60}' where id = ${sourceId}`;
    app.current.clock.now = new Date(listedAt.getTime() + 91 * 60_000);
    const late = await overview(app.current, admin);
    expect([late.measures.freshness!.failing, late.measures.freshness!.items]).to.deep.equal([4, 4]);
  });

  it('forgets a deleted rule, counted and folded before', async () => {
    await ingest(app.current.sql, [pod('a', {}), pod('b', CONTAINERS)]);
    const rule = await app.current.request('POST', '/api/v1/quality/rules', {
      key: admin,
      body: { name: 'containers', applies_to: 'ci_type = k8s.pod', requires: 'raw_data.spec.containers exists' },
    });
    await settle();
    await sweepQuality(app.current.context, new Date());
    const before = await overview(app.current, admin);
    expect([before.measures.rules!.items, before.measures.rules!.failing]).to.deep.equal([2, 1]);
    expect(
      (await app.current.request('DELETE', `/api/v1/quality/rules/${rule.body.id}`, { key: admin })).status,
    ).to.equal(204);
    const after = await overview(app.current, admin);
    expect([after.measures.rules!.items, after.measures.rules!.score]).to.deep.equal([0, null]);
    expect((await failing(app.current, admin, 'rules')).items).to.deep.equal([]);
  });

  it('shows a scoped caller only the counts and failures of what it may see', async () => {
    const { sourceId } = await ingest(app.current.sql, [pod('a', {}), namespace], { source: 'one' });
    await ingest(app.current.sql, [pod('b', {}), pod('c', {})], { source: 'two' });
    await settle();
    const scoped = await createKey(app.current.sql, 'svc', {
      permissions: ['configuration_items:read'],
      scopes: [{ sourceId, scopeId: null }],
    });
    const seen = await overview(app.current, scoped);
    expect([seen.cis, seen.measures.completeness!.failing]).to.deep.equal([2, 1]);
    const instances = (
      seen as unknown as { by_instance: { source_id: string; scope_id: string | null; cis: number }[] }
    ).by_instance;
    expect(instances.map((row) => [row.source_id, row.scope_id, row.cis])).to.deep.equal([[sourceId, null, 2]]);
    expect((await failing(app.current, scoped, 'completeness')).items.map((item) => item.name)).to.deep.equal(['a']);
    expect((await overview(app.current, admin)).measures.completeness!.failing).to.equal(3);
  });
});
