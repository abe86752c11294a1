import { expect } from 'chai';
import { Type } from '@sinclair/typebox';
import { registerCollectorType, unregisterCollectorType } from '../../../src/collection/types/registry.js';
import { createKey, useTestApp } from '../../support/app.js';
import { buildPod } from '../../support/factories.js';

const SOURCES = '/api/v1/sources';

describe('sources and collectors API', () => {
  const app = useTestApp({ sourceAllowedHosts: [] });
  let admin: string;

  before(() => {
    // a type that collects by itself, can watch, and offers a choice of what to collect
    registerCollectorType({
      type: 'test-cluster',
      description: 'test double of a collecting type',
      configSchema: Type.Object({ cluster_name: Type.Optional(Type.String({ minLength: 1 })) }),
      capabilities: {
        supports_universal_format: false,
        supports_multi_source: true,
        supports_watch: true,
        collects: true,
      },
      collectables: ['pods', 'nodes'],
      endpointSchemes: ['https'],
    });
  });
  after(() => unregisterCollectorType('test-cluster'));

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
  });

  const post = (path: string, body: unknown, key = admin) => app.current.request('POST', path, { key, body });
  const put = (path: string, body: unknown, key = admin) => app.current.request('PUT', path, { key, body });

  it('creates sources, provisioning one collector per type and name, and lists them', async () => {
    const created = await post(SOURCES, {
      name: 'prod',
      collector_type: 'test-cluster',
      endpoint: 'https://10.0.0.1:6443',
      config: {
        cluster_name: 'prod',
        verify_ssl: false,
        collection_mode: 'hybrid',
        enabled_collectors: ['pods'],
        timeout: 30,
      },
      schedule_config: { enabled: true, interval_minutes: 5 },
    });
    expect(created.status, created.text).to.equal(201);
    expect(created.body).to.deep.include({
      name: 'prod',
      endpoint: 'https://10.0.0.1:6443',
      status: 'enabled',
      last_error: null,
      health_status: null,
    });
    expect(created.body.schedule_config).to.deep.equal({ enabled: true, interval_minutes: 5 });
    expect(created.body.collector).to.deep.include({ name: 'test-cluster', collector_type: 'test-cluster' });

    const second = await post(`/api/v1/collectors/${created.body.collector_id}/sources`, {
      name: 'staging',
      endpoint: 'https://10.0.0.2:6443',
    });
    expect(second.status, second.text).to.equal(201);
    expect(second.body.collector_id).to.equal(created.body.collector_id);
    expect(second.body.schedule_config).to.deep.equal({ enabled: false, interval_minutes: 60 });
    // the same collector name with another type is another collector
    const pushed = await post(SOURCES, { name: 'agents', collector_type: 'universal', collector_name: 'test-cluster' });
    expect(pushed.status, pushed.text).to.equal(201);
    expect(pushed.body.collector_id).to.not.equal(created.body.collector_id);
    expect(pushed.body.collector).to.deep.include({ name: 'test-cluster', collector_type: 'universal' });

    const collectors = await app.current.get('/api/v1/collectors?name=test-cluster', admin);
    expect(collectors.body.items.map((c: { collector_type: string }) => c.collector_type).sort()).to.deep.equal([
      'test-cluster',
      'universal',
    ]);
    const byType = await app.current.get('/api/v1/collectors?type=test-cluster', admin);
    expect(byType.body.items).to.have.length(1);
    expect(byType.body.items[0]).to.deep.include({
      sources_total: 2,
      capabilities: { supports_universal_format: false, supports_multi_source: true },
    });

    const list = await app.current.get(`${SOURCES}?collector_id=${created.body.collector_id}`, admin);
    expect(list.body).to.deep.include({ total: 2, offset: 0, limit: 50 });
    expect(list.body.items.map((s: { name: string }) => s.name)).to.deep.equal(['prod', 'staging']);
    const bare = await app.current.get(`/api/v1/collectors/${created.body.collector_id}/sources`, admin);
    expect(bare.body.map((s: { name: string }) => s.name)).to.deep.equal(['prod', 'staging']);
    expect((await post(SOURCES, { name: 'prod', collector_type: 'universal' })).status).to.equal(409);
  });

  it('refuses settings the type cannot take, naming the field', async () => {
    const refuse = async (body: Record<string, unknown>, field: string, message: RegExp) => {
      const reply = await post(SOURCES, { name: 'x', collector_type: 'test-cluster', ...body });
      expect(reply.status, JSON.stringify(body)).to.equal(422);
      const error = reply.body.error.details.errors.find((e: { field: string }) => e.field === field);
      expect(error, `${field} in ${reply.text}`).to.exist;
      expect(error.message).to.match(message);
    };
    const unknown = await post(SOURCES, { name: 'x', collector_type: 'nope' });
    expect(unknown.status).to.equal(422);
    expect(unknown.body.error.details.errors[0]).to.deep.include({ field: 'collector_type' });
    expect(unknown.body.error.details.errors[0].message).to.include('test-cluster').and.include('universal');
    await refuse({ endpoint: 'not a url' }, 'endpoint', /absolute URL/);
    await refuse({ endpoint: 'http://10.0.0.1' }, 'endpoint', /https/);
    await refuse({ endpoint: 'https://user:pw@10.0.0.1' }, 'endpoint', /credentials/);
    await refuse({ endpoint: 'https://169.254.169.254/latest/meta-data' }, 'endpoint', /metadata/);
    await refuse({ endpoint: 'https://[fd00:ec2::254]/' }, 'endpoint', /metadata/);
    await refuse({ endpoint: 'https://[::ffff:169.254.169.254]/' }, 'endpoint', /metadata/);
    await refuse({ endpoint: 'https://metadata.google.internal/computeMetadata/v1/' }, 'endpoint', /metadata/);
    await refuse({ config: { timeout: 0 } }, 'config.timeout', /must be >/);
    await refuse({ config: { collection_mode: 'sometimes' } }, 'config.collection_mode', /./);
    await refuse(
      { config: { enabled_collectors: ['pods', 'secrets'] } },
      'config.enabled_collectors',
      /secrets.*pods, nodes/,
    );
    await refuse({ config: { colection_mode: 'periodic' } }, 'config.colection_mode', /not allowed/);
    await refuse({ schedule_config: { interval_minutes: 0 } }, 'schedule_config.interval_minutes', /must be >= 1/);
    const hybrid = await post(SOURCES, {
      name: 'x',
      collector_type: 'universal',
      config: { collection_mode: 'hybrid' },
    });
    expect(hybrid.status).to.equal(422);
    expect(hybrid.body.error.details.errors[0]).to.deep.include({ field: 'config.collection_mode' });
    expect((await app.current.get(SOURCES, admin)).body.total).to.equal(0);
  });

  it('recognises metadata hosts and addresses however they are spelled, for every endpoint scheme', async () => {
    const refused = async (collectorType: string, endpoint: string): Promise<string> => {
      const reply = await post(SOURCES, { name: 'odd', collector_type: collectorType, endpoint });
      expect(reply.status, `${endpoint}: ${reply.text}`).to.equal(422);
      const error = reply.body.error.details.errors.find((e: { field: string }) => e.field === 'endpoint');
      expect(error, `${endpoint}: ${reply.text}`).to.exist;
      return error.message as string;
    };
    const spellings = [
      'metadata.google.internal.',
      'metadata.google.internal..',
      'METADATA.Google.Internal.',
      'ｍｅｔａｄａｔａ.google.internal',
      'x.metadata.google.internal.',
      'Metadata',
      'instance-data.',
      '2852039166',
      '0251.0376.0251.0376',
      '0xa9fea9fe',
      '0xa9.0xfe.43518',
      '169.254.169.254.',
      '100.100.100.200',
      '[::ffff:169.254.169.254]',
      '[::ffff:a9fe:a9fe]',
      '[0:0:0:0:0:ffff:a9fe:a9fe]',
      '[::169.254.169.254]',
      '[64:ff9b::169.254.169.254]',
      '[::ffff:0:a9fe:a9fe]',
      '[::ffff:0:169.254.169.254]',
      'metadata.google.internal%2e',
      'metadata%2E',
      'Metadata%2e%2E',
      'instance-data%2e.',
      'meta%64ata.google.internal%2e',
      '[2002:a9fe:a9fe::1]',
      '[fe80::1]',
      '[FD00:EC2::254]',
    ];
    for (const host of spellings) {
      expect(await refused('test-cluster', `https://${host}/`), host).to.match(/metadata|link-local/);
      expect(await refused('postgresql', `postgres://${host}:5432/postgres`), `postgres ${host}`).to.match(
        /metadata|link-local/,
      );
    }
    expect(await refused('postgresql', 'postgres://4294967296/')).to.match(/not a valid host name/);
    expect((await app.current.get(SOURCES, admin)).body.total).to.equal(0);
    // names and addresses that merely resemble them are ordinary endpoints
    for (const endpoint of [
      'https://metadata.example.com/',
      'https://169.254.example.com/',
      'https://[2001:db8::a9fe:a9fe]/',
    ]) {
      const reply = await post(SOURCES, {
        name: `fine-${endpoint.length}-${endpoint.charCodeAt(8)}`,
        collector_type: 'test-cluster',
        endpoint,
      });
      expect(reply.status, `${endpoint}: ${reply.text}`).to.equal(201);
    }
  });

  it('allows loopback and private endpoints by default, and refuses them with CINV_SOURCE_ALLOW_PRIVATE=false', async () => {
    const nonPublic = [
      'https://127.0.0.1/',
      'https://127.1.2.3:6443/',
      'https://2130706433/',
      'https://0x7f000001/',
      'https://0.0.0.0/',
      'https://localhost/',
      'https://api.localhost./',
      'https://[::1]/',
      'https://[::ffff:127.0.0.1]/',
      'https://10.1.2.3/',
      'https://172.16.0.1/',
      'https://172.31.255.255/',
      'https://192.168.1.10/',
      'https://100.64.0.1/',
      'https://[fd12:3456::1]/',
      'https://[fc00::1]/',
    ];
    expect(app.current.config.sourceAllowPrivate, 'the default').to.equal(true);
    for (const [i, endpoint] of nonPublic.entries()) {
      const reply = await post(SOURCES, { name: `private-${i}`, collector_type: 'test-cluster', endpoint });
      expect(reply.status, `${endpoint}: ${reply.text}`).to.equal(201);
    }
    app.current.context.config.sourceAllowPrivate = false;
    try {
      for (const endpoint of nonPublic) {
        const reply = await post(SOURCES, { name: 'refused', collector_type: 'test-cluster', endpoint });
        expect(reply.status, `${endpoint}: ${reply.text}`).to.equal(422);
        expect(reply.body.error.details.errors[0].field).to.equal('endpoint');
        expect(reply.body.error.details.errors[0].message, endpoint).to.match(/CINV_SOURCE_ALLOW_PRIVATE is false/);
      }
      const postgres = await post(SOURCES, {
        name: 'refused',
        collector_type: 'postgresql',
        endpoint: 'postgres://0x7f.1:5432/postgres',
      });
      expect(postgres.body.error.details.errors[0].message).to.match(
        /127\.0\.0\.1 is a loopback.*CINV_SOURCE_ALLOW_PRIVATE is false/,
      );
      // moving an existing source onto a private address is refused the same way
      const [first] = (await app.current.get(SOURCES, admin)).body.items;
      const moved = await app.current.request('PUT', `${SOURCES}/${first.id}`, {
        key: admin,
        body: { endpoint: 'https://192.168.0.1/' },
      });
      expect(moved.status, moved.text).to.equal(422);
      // public addresses stay reachable; link-local ones stay refused, as they are when private ones are allowed
      expect(
        (await post(SOURCES, { name: 'public', collector_type: 'test-cluster', endpoint: 'https://203.0.113.7/' }))
          .status,
      ).to.equal(201);
    } finally {
      app.current.context.config.sourceAllowPrivate = true;
    }
    const metadata = await post(SOURCES, {
      name: 'metadata',
      collector_type: 'test-cluster',
      endpoint: 'https://169.254.169.254/',
    });
    expect(metadata.status).to.equal(422);
  });

  it('keeps endpoints inside CINV_SOURCE_ALLOWED_HOSTS when it is set', async () => {
    app.current.context.config.sourceAllowedHosts = ['10.1.0.0/16', '*.example.com'];
    try {
      expect(
        (await post(SOURCES, { name: 'a', collector_type: 'test-cluster', endpoint: 'https://10.1.2.3' })).status,
      ).to.equal(201);
      expect(
        (await post(SOURCES, { name: 'b', collector_type: 'test-cluster', endpoint: 'https://k8s.example.com' }))
          .status,
      ).to.equal(201);
      const outside = await post(SOURCES, { name: 'c', collector_type: 'test-cluster', endpoint: 'https://10.2.0.1' });
      expect(outside.status).to.equal(422);
      expect(outside.body.error.details.errors[0].message).to.include('CINV_SOURCE_ALLOWED_HOSTS');
    } finally {
      app.current.context.config.sourceAllowedHosts = [];
    }
  });

  it('updates partially: omitted fields stay, config and schedule merge key by key, and the result is validated', async () => {
    const created = await post(SOURCES, {
      name: 'prod',
      collector_type: 'test-cluster',
      endpoint: 'https://10.0.0.1',
      config: { cluster_name: 'prod', timeout: 30, verify_ssl: true },
      schedule_config: { enabled: true, interval_minutes: 5 },
    });
    const id = created.body.id;
    const updated = await put(`${SOURCES}/${id}`, {
      config: { timeout: 60, verify_ssl: null },
      schedule_config: { interval_minutes: 10 },
    });
    expect(updated.status, updated.text).to.equal(200);
    expect(updated.body.config).to.deep.equal({ cluster_name: 'prod', timeout: 60 });
    expect(updated.body.schedule_config).to.deep.equal({ enabled: true, interval_minutes: 10 });
    expect(updated.body).to.deep.include({ name: 'prod', endpoint: 'https://10.0.0.1' });
    const bad = await put(`${SOURCES}/${id}`, { config: { enabled_collectors: ['everything'] } });
    expect(bad.status).to.equal(422);
    const metadata = await put(`${SOURCES}/${id}`, { endpoint: 'https://169.254.169.254' });
    expect(metadata.status).to.equal(422);
    expect((await app.current.get(`${SOURCES}/${id}`, admin)).body.config).to.deep.equal({
      cluster_name: 'prod',
      timeout: 60,
    });
    const renamed = await put(`${SOURCES}/${id}`, { name: 'production' });
    expect(renamed.body.name).to.equal('production');
  });

  it('disabling refuses pushes with 409; deleting keeps CIs and history and makes every route of the source 404', async () => {
    const created = await post(SOURCES, { name: 'agents', collector_type: 'universal' });
    const id = created.body.id;
    const push = () => post(`${SOURCES}/${id}/ingest`, { scope_id: 'c1', items: [buildPod({ name: 'kept' })] });
    expect((await push()).status).to.equal(200);
    expect((await put(`${SOURCES}/${id}`, { status: 'disabled' })).body.status).to.equal('disabled');
    const refused = await push();
    expect(refused.status).to.equal(409);
    expect((await app.current.get(`${SOURCES}?enabled=false`, admin)).body.total).to.equal(1);
    expect((await put(`${SOURCES}/${id}`, { status: 'enabled' })).status).to.equal(200);

    const deleted = await app.current.request('DELETE', `${SOURCES}/${id}`, { key: admin });
    expect(deleted.status).to.equal(200);
    expect(deleted.body.message).to.match(/kept/);
    expect((await app.current.get(`${SOURCES}/${id}`, admin)).status).to.equal(404);
    expect((await push()).status).to.equal(404);
    expect((await put(`${SOURCES}/${id}`, { name: 'again' })).status).to.equal(404);
    expect((await put(`${SOURCES}/${id}/health`, { status: 'healthy', message: 'ok', timestamp: 1 })).status).to.equal(
      404,
    );
    expect((await app.current.request('DELETE', `${SOURCES}/${id}`, { key: admin })).status).to.equal(404);
    const cis = await app.current.get('/api/v1/configuration-items', admin);
    expect(cis.body.items.map((ci: { name: string }) => ci.name)).to.deep.equal(['kept']);
    // the name is free again
    expect((await post(SOURCES, { name: 'agents', collector_type: 'universal' })).status).to.equal(201);
  });

  it('records reported health, which the collector health routes reflect', async () => {
    const a = await post(SOURCES, { name: 'a', collector_type: 'test-cluster', endpoint: 'https://10.0.0.1' });
    await post(SOURCES, { name: 'b', collector_type: 'test-cluster', endpoint: 'https://10.0.0.2' });
    const collectorId = a.body.collector_id;
    const healthy = await app.current.get(`/api/v1/collectors/${collectorId}/health`, admin);
    expect(healthy.body).to.deep.include({
      status: 'healthy',
      capabilities: { supports_universal_format: false, supports_multi_source: true },
    });
    expect(Object.keys(healthy.body.subsystems).sort()).to.deep.equal(['a', 'b']);

    const reported = await put(`${SOURCES}/${a.body.id}/health`, {
      status: 'unhealthy',
      message: 'API server unreachable',
      timestamp: 1795000000.25,
      duration: 1.5,
      consecutive_errors: 3,
    });
    expect(reported.status, reported.text).to.equal(200);
    const detail = await app.current.get(`${SOURCES}/${a.body.id}`, admin);
    expect(detail.body.health_status).to.deep.equal({
      status: 'unhealthy',
      last_check: new Date(1795000000250).toISOString(),
      details: { message: 'API server unreachable', duration: '1.5', consecutive_errors: '3' },
    });
    const degraded = await app.current.get(`/api/v1/collectors/${collectorId}/health`, admin);
    expect(degraded.body.status).to.equal('degraded');
    expect(degraded.body.subsystems.a.status).to.equal('unhealthy');
    const all = await app.current.get('/api/v1/collectors/health/all', admin);
    expect(all.body.collectors.find((c: { id: number }) => c.id === collectorId)).to.deep.include({
      status: 'degraded',
      sources_total: 2,
      sources_healthy: 1,
      sources_awaiting_data: 1,
    });
  });

  it('answers the removed collector writes with 410 and where to go instead', async () => {
    for (const [method, path] of [
      ['POST', '/api/v1/collectors'],
      ['PATCH', '/api/v1/collectors'],
      ['PUT', '/api/v1/collectors/1'],
      ['DELETE', '/api/v1/collectors/1'],
    ] as const) {
      const reply = await app.current.request(method, path, { key: admin, body: method === 'DELETE' ? undefined : {} });
      expect(reply.status, `${method} ${path}`).to.equal(410);
      expect(reply.body.error.code).to.equal('HTTP_410');
      expect(reply.body.error.details.replacement).to.include('POST /api/v1/sources');
    }
  });

  it('needs sources permissions, and access to all data to add sources', async () => {
    const readOnly = await createKey(app.current.sql, 'ro');
    expect((await app.current.get(SOURCES, readOnly)).status).to.equal(200);
    expect((await post(SOURCES, { name: 'x', collector_type: 'universal' }, readOnly)).status).to.equal(403);
    const scoped = await createKey(app.current.sql, 'svc', {
      permissions: ['sources:write', 'sources:read'],
      scopes: [],
    });
    const refused = await post(SOURCES, { name: 'x', collector_type: 'universal' }, scoped);
    expect(refused.status).to.equal(403);
    expect(refused.body.error.details).to.deep.include({ reason: 'scoped' });
    expect((await app.current.get(SOURCES)).status).to.equal(401);
  });
});
