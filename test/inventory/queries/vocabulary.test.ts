import { expect } from 'chai';
import type { Sql } from '../../../src/platform/db/database.js';
import { splitPrefix } from '../../../src/inventory/queries/vocabulary-service.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, ciIdOf, ingest } from '../../support/factories.js';
import { insertRelationship } from '../relationships/fixtures.js';

const NOW = new Date('2026-11-01T10:00:00Z');

const deployment = (name: string, labels: Record<string, string>) =>
  buildPod({
    name,
    namespace: 'shop',
    ci_type: 'k8s.deployment',
    external_id: `deployment/shop/${name}`,
    raw_data: {
      metadata: { labels },
      spec: { replicas: 2, template: { spec: { containers: [{ name: 'app', image: 'shop:1' }] } } },
    },
  });
const node = (name: string) =>
  buildPod({
    name,
    namespace: null,
    ci_type: 'k8s.node',
    external_id: `node/${name}`,
    raw_data: { status: { nodeInfo: { kubeletVersion: 'v1.29.1' } } },
  });

describe('GET /api/v1/query/vocabulary: the names a query editor completes', function () {
  this.timeout(120_000);
  let sql: Sql;
  let app: TestApp;
  let admin: string;
  let westOnly: string;
  let noRelationships: string;

  const vocabulary = async (query = '', key = admin) => {
    const reply = await app.get(`/api/v1/query/vocabulary${query}`, key);
    expect(reply.status, reply.text).to.equal(200);
    return reply.body as { ci_types: string[]; relationship_types: string[]; fields: string[]; paths: string[] };
  };

  before(async () => {
    sql = (await testDatabase()).sql;
    await resetDatabase(sql);
    await ingest(sql, [deployment('checkout', { 'app.kubernetes.io/name': 'checkout' }), node('node-1')], {
      source: 'east',
      now: NOW,
    });
    await ingest(sql, [buildPod({ name: 'billing-a', namespace: 'payments' })], { source: 'west', now: NOW });
    // a type no collector type writes, pushed by hand
    await insertRelationship(
      sql,
      await ciIdOf(sql, 'deployment/shop/checkout'),
      await ciIdOf(sql, 'node/node-1'),
      'pinned_to',
    );
    app = await startTestApp();
    admin = await createKey(sql, 'adm');
    const [west] = await sql<{ id: string }[]>`select id::text from sources where name = 'west'`;
    westOnly = await createKey(sql, 'svc', {
      permissions: ['configuration_items:read', 'relationships:read'],
      scopes: [{ sourceId: west!.id, scopeId: null }],
    });
    noRelationships = await createKey(sql, 'svc', { permissions: ['configuration_items:read'] });
  });
  after(async () => {
    await app?.close();
  });

  it('names the CI types, the known and present relationship types, the fields and the paths', async () => {
    const all = await vocabulary();
    expect(all.ci_types).to.deep.equal(['k8s.deployment', 'k8s.node', 'k8s.pod']);
    expect(all.relationship_types).to.include.members(['manages', 'runs_on', 'pinned_to']);
    expect(all.fields).to.include.members(['name', 'ci_type', 'raw_data', 'type_data', 'last_seen']);
    expect(all.paths).to.include.members([
      'raw_data.spec',
      'raw_data.spec.replicas',
      'raw_data.metadata.labels."app.kubernetes.io/name"',
      'raw_data.status.nodeInfo.kubeletVersion',
      'type_data.restarts',
    ]);
    // shallowest first, four levels at most
    expect(all.paths.indexOf('raw_data.spec')).to.be.below(all.paths.indexOf('raw_data.spec.replicas'));
    expect(all.paths).to.include('raw_data.spec.template.spec.containers');
    expect(all.paths).not.to.include('raw_data.spec.template.spec.containers.0');
  });

  it("samples one type's paths, below a prefix, arrays through their first element", async () => {
    const typed = await vocabulary('?ci_type=k8s.deployment&prefix=raw_data.spec.te');
    expect(typed.paths).to.deep.equal([
      'raw_data.spec.template',
      'raw_data.spec.template.spec',
      'raw_data.spec.template.spec.containers',
      'raw_data.spec.template.spec.containers.0',
    ]);
    const labels = await vocabulary(`?prefix=${encodeURIComponent('raw_data.metadata.labels."app.')}`);
    expect(labels.paths).to.deep.equal(['raw_data.metadata.labels."app.kubernetes.io/name"']);
    const types = await vocabulary('?prefix=ty');
    expect(types.paths.every((path) => path.startsWith('type_data.'))).to.equal(true);
    expect(types.paths).to.include('type_data.phase');
    expect((await vocabulary('?prefix=name.x')).paths).to.deep.equal([]);
  });

  it("stays inside the caller's data scopes, and names present relationship types only to a reader of relationships", async () => {
    const west = await vocabulary('', westOnly);
    expect(west.ci_types).to.deep.equal(['k8s.pod']);
    expect(west.paths).not.to.include('raw_data.status.nodeInfo.kubeletVersion');
    expect(west.relationship_types).not.to.include('pinned_to');
    const plain = await vocabulary('', noRelationships);
    expect(plain.relationship_types).to.include('manages').and.not.to.include('pinned_to');
  });

  it('cuts a prefix at the dots outside quotes', () => {
    expect(splitPrefix('raw_data.metadata.labels."app.k')).to.deep.equal({
      whole: ['raw_data', 'metadata', 'labels'],
      typed: 'app.k',
    });
    expect(splitPrefix('raw_data.')).to.deep.equal({ whole: ['raw_data'], typed: '' });
    expect(splitPrefix('na')).to.deep.equal({ whole: [], typed: 'na' });
  });
});
