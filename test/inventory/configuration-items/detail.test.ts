import { expect } from 'chai';
import { createKey, useTestApp } from '../../support/app.js';
import { buildPod, ciIdOf, ingest } from '../../support/factories.js';

describe('GET and DELETE /api/v1/configuration-items/{ci_id}', () => {
  const app = useTestApp();
  let admin: string;
  let ciId: string;
  const pod = buildPod({ name: 'detail-pod', replicas: 4 });

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
    await ingest(app.current.sql, [pod], { now: new Date('2026-02-01T10:00:00Z') });
    ciId = await ciIdOf(app.current.sql, pod.external_id);
  });

  it('returns every field of the CI with its nested raw_data, its type data, source and instance', async () => {
    const reply = await app.current.get(`/api/v1/configuration-items/${ciId}`, admin);
    const [source] = await app.current.sql<
      { id: number }[]
    >`select s.id::int as id from sources s join configuration_items ci on ci.source_id = s.id where ci.ci_id = ${ciId}`;
    expect(reply.status).to.equal(200);
    expect(reply.body).to.deep.equal({
      ci_id: ciId,
      name: 'detail-pod',
      namespace: 'default',
      ci_type: 'k8s.pod',
      status: 'active',
      status_updated_at: null,
      last_seen: '2026-02-01T10:00:00.000Z',
      created_at: '2026-02-01T10:00:00.000Z',
      updated_at: '2026-02-01T10:00:00.000Z',
      raw_data: pod.raw_data,
      type_data: { phase: 'Running', restarts: 0 },
      source: { id: source!.id, name: 'k8s-prod', collector_type: 'kubernetes' },
      scope_id: null,
      // a pod observes no host
      identity: null,
      identities: [],
    });
    expect(reply.body.raw_data.spec.containers[0]).to.deep.equal({ name: 'app', image: 'nginx:1.25' });
  });

  it('writes the detail and the list as JSON with no space before a colon', async () => {
    const detail = await app.current.get(`/api/v1/configuration-items/${ciId}`, admin);
    const list = await app.current.get('/api/v1/configuration-items', admin);
    for (const reply of [detail, list]) {
      expect(reply.status).to.equal(200);
      expect(reply.text).to.not.match(/" :/);
    }
    expect(detail.text).to.match(
      new RegExp(`^\\{"ci_id":"${ciId}","name":"detail-pod","namespace":"default","ci_type":"k8s.pod",`),
    );
    expect(detail.text).to.match(
      /,"source":\{"id":\d+,"name":"k8s-prod","collector_type":"kubernetes"\},"scope_id":null,"identity":null,"identities":\[\]\}$/,
    );
    expect(list.text).to.match(new RegExp(`^\\{"items":\\[\\{"ci_id":"${ciId}","name":"detail-pod",`));
    expect(list.body.items[0]).to.deep.include({
      ci_id: ciId,
      namespace: 'default',
      status_updated_at: null,
      scope_id: null,
    });
  });

  it('answers an unknown CI with 404 HTTP_404 and a malformed id with 422 VALIDATION_ERROR', async () => {
    const missing = await app.current.get('/api/v1/configuration-items/0190a8e0-0000-7000-8000-000000000000', admin);
    expect(missing.status).to.equal(404);
    expect(missing.body.error).to.include({
      code: 'HTTP_404',
      method: 'GET',
      path: '/api/v1/configuration-items/0190a8e0-0000-7000-8000-000000000000',
    });
    const malformed = await app.current.get('/api/v1/configuration-items/not-a-uuid', admin);
    expect(malformed.status).to.equal(422);
    expect(malformed.body.error.code).to.equal('VALIDATION_ERROR');
    expect(malformed.body.error.details.errors).to.deep.equal([
      { field: 'ci_id', location: 'path', message: 'must match format "uuid"' },
    ]);
  });

  it('archives on DELETE, sets status_updated_at and records a DELETED change', async () => {
    app.current.clock.now = new Date('2026-02-02T08:30:00Z');
    const reply = await app.current.request('DELETE', `/api/v1/configuration-items/${ciId}`, { key: admin });
    expect(reply.status).to.equal(200);
    expect(reply.body).to.deep.equal({
      message: 'Configuration item archived',
      ci_id: ciId,
      status: 'archived',
      status_updated_at: '2026-02-02T08:30:00.000Z',
    });
    const detail = await app.current.get(`/api/v1/configuration-items/${ciId}`, admin);
    expect(detail.body).to.include({ status: 'archived', status_updated_at: '2026-02-02T08:30:00.000Z' });
    const changes = await app.current
      .sql`select change_type, changes, changed_at from change_records where ci_id = ${ciId} order by id`;
    expect(changes.map((c) => c.change_type)).to.deep.equal(['CREATED', 'DELETED']);
    expect(changes[1]!.changes).to.deep.equal([{ field: 'status', old_value: 'active', new_value: 'archived' }]);
    expect(changes[1]!.changed_at.toISOString()).to.equal('2026-02-02T08:30:00.000Z');
    expect(await app.current.sql`select 1 from outbox`).to.have.lengthOf(2);

    const list = await app.current.get('/api/v1/configuration-items', admin);
    expect(list.body.total).to.equal(0);

    app.current.clock.now = new Date('2026-02-03T00:00:00Z');
    const again = await app.current.request('DELETE', `/api/v1/configuration-items/${ciId}`, { key: admin });
    expect(again.status).to.equal(200);
    expect(again.body).to.include({ status: 'archived', status_updated_at: '2026-02-02T08:30:00.000Z' });
    expect(await app.current.sql`select 1 from change_records where ci_id = ${ciId}`).to.have.lengthOf(2);
  });

  it('answers DELETE of an unknown CI with 404', async () => {
    const reply = await app.current.request(
      'DELETE',
      '/api/v1/configuration-items/0190a8e0-0000-7000-8000-000000000000',
      { key: admin },
    );
    expect(reply.status).to.equal(404);
    expect(reply.body.error.code).to.equal('HTTP_404');
  });
});
