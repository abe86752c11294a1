import { expect } from 'chai';
import { createKey, useTestApp } from '../support/app.js';
import { buildPod, buildSource, ciIdOf, ingest } from '../support/factories.js';

/** Inputs a client can send that once reached the database unchecked; none may cause a 500. */
describe('hostile and odd input', () => {
  const app = useTestApp();
  let key: string;
  let ciId: string;
  beforeEach(async () => {
    key = await createKey(app.current.sql, 'adm');
    await ingest(app.current.sql, [buildPod({ name: 'target' })]);
    ciId = await ciIdOf(app.current.sql, 'pod/default/target');
  });

  const paths = () => [
    '/api/v1/configuration-items?filter=name:eq:%00',
    '/api/v1/configuration-items?filter=raw_data.spec.replicas:gt:1e999999',
    '/api/v1/configuration-items?filter=raw_data.spec.replicas:eq:1e999999',
    '/api/v1/configuration-items?filter=created_at:gt:2026-02-30T00:00:00Z',
    '/api/v1/configuration-items?filter=created_at:gt:2026-13-01',
    '/api/v1/configuration-items?filter=raw_data.%00:eq:x',
    '/api/v1/configuration-items?filter=name:like:%5C',
    '/api/v1/configuration-items?filter=name:in:,,,',
    '/api/v1/configuration-items?filter=ci_type:eq:' + 'x'.repeat(20000),
    '/api/v1/configuration-items?include_attributes=%00',
    '/api/v1/configuration-items?include_attributes=a..b',
    '/api/v1/configuration-items?limit=99999999999999999999',
    '/api/v1/configuration-items?offset=-1',
    '/api/v1/configuration-items?offset=1e3',
    '/api/v1/configuration-items?sort_by[]=name',
    '/api/v1/configuration-items?status=active&status=all',
    '/api/v1/configuration-items/%E0%A4%A',
    `/api/v1/configuration-items/${ciId}%00`,
    `/api/v1/configuration-items/${ciId.toUpperCase()}`,
  ];

  it('answers every odd query with a 4xx envelope or a 200, never a 500', async () => {
    for (const path of paths()) {
      const reply = await app.current.get(path, key);
      expect(reply.status, `${path.slice(0, 120)}: ${reply.text.slice(0, 300)}`).to.be.below(500);
      if (reply.status >= 400) expect(reply.body?.error?.code, `${path.slice(0, 120)}: ${reply.text.slice(0, 200)}`).to.be.a('string');
    }
  });

  it('refuses ingest bodies that PostgreSQL could not store, before writing anything', async () => {
    const sourceId = await buildSource(app.current.sql, 'odd');
    const nul = { ...buildPod({ name: 'nul' }), raw_data: { note: 'a\u0000b' } };
    const reply = await app.current.request('POST', `/api/v1/sources/${sourceId}/ingest`, { key, body: { items: [buildPod({ name: 'fine' }), nul] } });
    expect(reply.status).to.equal(422);
    expect(reply.body.error.details.errors).to.deep.equal([{ field: 'items.1', location: 'body', message: 'must not contain NUL characters (\\u0000)' }]);
    expect(await app.current.sql`select 1 from configuration_items where source_id = ${sourceId}`).to.have.lengthOf(0);

    // a bare JSON string is not a JSON document the strict parser accepts: malformed (400)
    const cases: [unknown, number][] = [
      [[], 422],
      ['text', 400],
      [{ items: 'x' }, 422],
      [{ items: [null] }, 422],
      [{ items: [{ ...buildPod(), external_id: '' }] }, 422],
      [{ items: [], extra: 1 }, 422],
    ];
    for (const [body, status] of cases) {
      const odd = await app.current.request('POST', `/api/v1/sources/${sourceId}/ingest`, { key, body });
      expect(odd.status, JSON.stringify(body)).to.equal(status);
    }
    const unknownSource = await app.current.request('POST', '/api/v1/sources/999999999999/ingest', { key, body: { items: [] } });
    expect(unknownSource.status).to.equal(404);
    const hugeId = await app.current.request('POST', '/api/v1/sources/99999999999999999999999/ingest', { key, body: { items: [] } });
    expect(hugeId.status).to.be.within(400, 499);
  });
});
