import { expect } from 'chai';
import { createKey, useTestApp } from '../../support/app.js';

/**
 * Metadata about sources (collector counts, health, audit rows naming a source) follows the
 * caller's data scopes like the sources themselves.
 */
describe('metadata of sources outside a scoped key', () => {
  const app = useTestApp();

  it('counts only visible sources in /collectors and /collectors/health/all, and hides audit rows about other sources', async () => {
    const admin = await createKey(app.current.sql, 'adm');
    const create = async (name: string) => {
      const created = await app.current.request('POST', '/api/v1/sources', {
        key: admin,
        body: { name, collector_type: 'universal', collector_name: 'shared' },
      });
      expect(created.status, created.text).to.equal(201);
      return { id: String(created.body.id), collectorId: created.body.collector_id as number };
    };
    const mine = await create('mine');
    const theirs = await create('theirs');
    expect(mine.collectorId).to.equal(theirs.collectorId);
    const document = { type: 'basic', username: 'collector', password: 'pa55-w0rd' };
    for (const source of [mine, theirs]) {
      expect(
        (await app.current.request('PUT', `/api/v1/sources/${source.id}/credentials`, { key: admin, body: document }))
          .status,
      ).to.equal(204);
      expect((await app.current.get(`/api/v1/sources/${source.id}/credentials/reveal`, admin)).status).to.equal(200);
    }
    const scoped = await createKey(app.current.sql, 'svc', {
      permissions: ['collectors:read', 'sources:read', 'audit:read'],
      scopes: [{ sourceId: mine.id, scopeId: 'cluster-a' }],
    });

    const collectors = await app.current.get('/api/v1/collectors', scoped);
    expect(collectors.body.items.map((c: { sources_total: number }) => c.sources_total)).to.deep.equal([1]);
    const everything = await app.current.get('/api/v1/collectors', admin);
    expect(everything.body.items.map((c: { sources_total: number }) => c.sources_total)).to.deep.equal([2]);
    const health = await app.current.get('/api/v1/collectors/health/all', scoped);
    expect(
      health.body.collectors.map((c: { sources_total: number; sources_healthy: number }) => [
        c.sources_total,
        c.sources_healthy,
      ]),
    ).to.deep.equal([[1, 1]]);
    const one = await app.current.get(`/api/v1/collectors/${mine.collectorId}/health`, scoped);
    expect(Object.keys(one.body.subsystems)).to.deep.equal(['mine']);

    const reveals = await app.current.get('/api/v1/audit-events?event_type=credentials.revealed', scoped);
    expect(reveals.status).to.equal(200);
    expect(reveals.body.items.map((e: { target: { id: string } }) => e.target.id)).to.deep.equal([mine.id]);
    const csv = await app.current.request('GET', '/api/v1/audit-events?event_type=credentials.revealed', {
      key: scoped,
      headers: { accept: 'text/csv' },
    });
    expect(csv.text).to.include(',mine,');
    expect(csv.text).to.not.include('theirs');
    const all = await app.current.get('/api/v1/audit-events?event_type=credentials.revealed', admin);
    expect(all.body.items).to.have.length(2);
  });
});
