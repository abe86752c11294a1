import { expect } from 'chai';
import { refreshStatsAggregate } from '../../../src/history/records/stats-store.js';
import { createKey, useTestApp } from '../../support/app.js';
import { buildPod, ingest } from '../../support/factories.js';

const T0 = Date.parse('2026-03-01T00:00:00Z');
const MINUTE = 60_000;
const iso = (minutes: number) => new Date(T0 + minutes * MINUTE).toISOString();

/** Totals of GET /changes, from the statistics pre-aggregate where the filters allow it. */
describe('GET /api/v1/changes totals', function () {
  this.timeout(60_000);
  const app = useTestApp();

  it('are exact for every filter on change type, CI type and time, folded into the aggregate or not, for every key', async () => {
    const { sql } = app.current;
    const admin = await createKey(sql, 'adm');
    const pods = Array.from({ length: 8 }, (_, i) => buildPod({ name: `t${i}` }));
    const nodes = Array.from({ length: 3 }, (_, i) => ({
      ...buildPod({ name: `n${i}` }),
      external_id: `node/n${i}`,
      ci_type: 'k8s.node',
    }));
    let sourceId = '';
    for (let step = 0; step < 9; step++) {
      // changes every 25 minutes, across hour boundaries, in two instances
      const now = new Date(T0 + step * 25 * MINUTE);
      const batch = [...pods, ...nodes].map((r, i) => ({ ...r, raw_data: { ...r.raw_data, step: i % (step + 1) } }));
      sourceId = (await ingest(sql, batch.slice(0, 6), { now, scopeId: 'c1' })).sourceId;
      await ingest(sql, batch.slice(6), { now, scopeId: 'c2' });
      if (step === 2) await ingest(sql, [], { now, scopeId: 'c1', mode: 'delta', deletions: [pods[0]!.external_id] });
      // the first part is folded into the pre-aggregate, the rest still queued
      if (step === 4) await refreshStatsAggregate(sql, new Date(T0 + 4 * 25 * MINUTE));
    }
    const scoped = await createKey(sql, 'svc', {
      permissions: ['changes:read'],
      scopes: [{ sourceId, scopeId: 'c1' }],
    });
    const queries = [
      '',
      'filter=change_type:eq:UPDATED',
      'filter=change_type:ne:UPDATED',
      'filter=change_type:in:CREATED,DELETED',
      'filter=ci_type:eq:k8s.node',
      'filter=ci_type:nin:k8s.node',
      'filter=ci_type:startswith:k8s.p',
      `filter=changed_at:gt:${iso(60)}`,
      `filter=changed_at:gte:${iso(60)}`,
      `filter=changed_at:lt:${iso(125)}`,
      `filter=changed_at:lte:${iso(125)}`,
      `filter=changed_at:eq:${iso(75)}`,
      `filter=changed_at:gt:${iso(50)}&filter=changed_at:lt:${iso(175)}&filter=change_type:eq:UPDATED`,
      `filter=changed_at:gte:${iso(25)}&filter=changed_at:gt:${iso(25)}`,
      `start_date=${iso(30)}&end_date=${iso(150)}`,
      `start_date=${iso(60)}&filter=changed_at:lte:${iso(60)}`,
      'start_date=2026-03-01&end_date=2026-03-01&filter=ci_type:eq:k8s.pod',
      `start_date=${iso(0)}&filter=changed_at:lt:${iso(0)}`,
      // bounds at the ends of the timestamp range, to the microsecond
      'start_date=1969-12-31T23:59:59.999999Z&end_date=9999-12-31T23:59:59.999999Z',
      'filter=changed_at:gt:0001-01-01T00:00:00.000001Z&filter=changed_at:lte:9999-12-31T23:00:00.000001Z',
      // not answerable from the aggregate: counted from the records
      'filter=ci_name:eq:t3',
      'search=k8s.node',
    ];
    for (const key of [admin, scoped]) {
      for (const query of queries) {
        const reply = await app.current.get(`/api/v1/changes?limit=1000&${query.replace(/\+/g, '%2B')}`, key);
        expect(reply.status, `${query}: ${reply.text}`).to.equal(200);
        // every match fits one page: the page is the truth the total must agree with
        expect(reply.body.items.length, query).to.be.below(1000);
        expect(
          { total: reply.body.total, exact: reply.body.total_exact },
          `${key === admin ? 'admin' : 'scoped'} ${query}`,
        ).to.deep.equal({
          total: reply.body.items.length,
          exact: true,
        });
      }
    }
  });
});
