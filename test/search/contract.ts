import { expect } from 'chai';
import type { Config } from '../../src/config/config.js';
import { createKey, type TestApp } from '../support/app.js';
import { resetDatabase, testDatabase } from '../support/db.js';
import { buildPod, buildSource, ingest } from '../support/factories.js';

/** A backend under test: an app whose search backend it is, and how to let writes reach it. */
export interface ContractTarget {
  app: TestApp;
  /** Makes everything written so far searchable (OpenSearch: index the outbox, refresh). */
  sync(): Promise<void>;
  close(): Promise<void>;
}

export type TargetFactory = (overrides: Partial<Config>) => Promise<ContractTarget>;

const NOW = new Date('2026-06-15T12:00:00Z');
const DAY = 86_400_000;
const ago = (days: number, hours = 0) => new Date(NOW.getTime() - days * DAY + hours * 3_600_000);

interface ListedChange {
  id: string;
  ci_id: string;
  ci_type: string;
  change_type: 'CREATED' | 'UPDATED' | 'DELETED';
  changed_at: string;
}

const TYPE_KEY = { CREATED: 'created', UPDATED: 'updated', DELETED: 'archived' } as const;

function bucketStart(at: string, groupBy: 'hour' | 'day' | 'week'): string {
  const d = new Date(at);
  d.setUTCMinutes(0, 0, 0);
  if (groupBy !== 'hour') d.setUTCHours(0);
  if (groupBy === 'week') d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 6) % 7));
  return d.toISOString();
}

/** The statistics spec §2.3 describes, computed from listed change records. */
function statsOf(changes: ListedChange[], groupBy: 'hour' | 'day' | 'week') {
  const byType = { created: 0, updated: 0, archived: 0 };
  const types = new Map<string, number>();
  const series = new Map<string, { bucket_start: string; created: number; updated: number; archived: number }>();
  for (const change of changes) {
    byType[TYPE_KEY[change.change_type]]++;
    types.set(change.ci_type, (types.get(change.ci_type) ?? 0) + 1);
    const start = bucketStart(change.changed_at, groupBy);
    const bucket = series.get(start) ?? { bucket_start: start, created: 0, updated: 0, archived: 0 };
    bucket[TYPE_KEY[change.change_type]]++;
    series.set(start, bucket);
  }
  return {
    total_changes: changes.length,
    affected_cis: new Set(changes.map((c) => c.ci_id)).size,
    changes_by_type: byType,
    top_changed_ci_types: [...types].map(([ci_type, count]) => ({ ci_type, count })).sort((a, b) => b.count - a.count || (a.ci_type < b.ci_type ? -1 : 1)).slice(0, 10),
    series: [...series.values()].sort((a, b) => (a.bucket_start < b.bucket_start ? -1 : 1)),
  };
}

/**
 * The behaviour of change search and statistics, the same on every backend (ranking aside).
 * `target` builds an app over the run's database with the backend under test.
 */
export function searchContract(title: string, target: TargetFactory): void {
  describe(title, function () {
    this.timeout(120_000);
    let t: ContractTarget;
    let admin: string;
    let scoped: string;
    let sourceA: string;

    before(async () => {
      const { sql } = await testDatabase();
      await resetDatabase(sql);
      t = await target({});
      t.app.clock.now = NOW;
      admin = await createKey(sql, 'adm');
      sourceA = await buildSource(sql, 'k8s-a');
      await buildSource(sql, 'prom-b', 'prometheus');
      scoped = await createKey(sql, 'svc', { permissions: ['changes:read', 'changes:write'], scopes: [{ sourceId: sourceA, scopeId: 'c1' }] });

      const app0 = buildPod({ name: 'app-0-7c9f0-0x0', namespace: 'default' });
      const withImage = (image: string, ip?: string) => ({
        ...app0,
        raw_data: { ...app0.raw_data, spec: { containers: [{ name: 'app', image }] }, status: { phase: 'Running', ...(ip ? { podIP: ip } : {}) } },
      });
      const node = { ...buildPod({ name: 'db-1.prod.example', namespace: null }), external_id: 'node/db-1', ci_type: 'k8s.node' };
      const staging = buildPod({ name: 'web-staging', namespace: 'staging' });
      const promTarget = { ...buildPod({ name: 'prom-target-1', namespace: 'monitoring' }), external_id: 'target/1', ci_type: 'prom.target' };
      // outside the default window
      await ingest(sql, [buildPod({ name: 'ancient' })], { source: 'k8s-a', scopeId: 'c1', now: ago(100) });
      await ingest(sql, [withImage('nginx:1.24'), staging], { source: 'k8s-a', scopeId: 'c1', now: ago(10, 10) });
      await ingest(sql, [node], { source: 'k8s-a', scopeId: 'c2', now: ago(10, 10) });
      await ingest(sql, [promTarget], { source: 'prom-b', now: ago(9, 3) });
      await ingest(sql, [withImage('nginx:1.25', '10.0.0.7')], { source: 'k8s-a', scopeId: 'c1', now: ago(10, 11) });
      await ingest(sql, [], { source: 'k8s-a', scopeId: 'c2', mode: 'delta', deletions: ['node/db-1'], now: ago(3) });
      await ingest(sql, [{ ...promTarget, raw_data: { ...promTarget.raw_data, labels: { env: 'CrashLoopBackOff' } } }], { source: 'prom-b', now: ago(2, 5) });
      await t.sync();
    });

    after(async () => {
      await t?.close();
    });

    const search = async (query: string, key = admin, extra = '') => {
      const reply = await t.app.get(`/api/v1/changes/search?query=${encodeURIComponent(query)}${extra}`, key);
      expect(reply.status, `${query}: ${reply.text}`).to.equal(200);
      return reply.body as { items: any[]; total: number; total_exact: boolean; took_ms: number; query: string; offset: number; limit: number };
    };
    const names = (body: { items: { ci_name: string; change_type: string }[] }) => body.items.map((i) => `${i.ci_name}:${i.change_type}`).sort();

    it('finds records by name, whole or by part, without expanding short parts', async () => {
      expect(names(await search('app-0-7c9f0-0x0'))).to.deep.equal(['app-0-7c9f0-0x0:CREATED', 'app-0-7c9f0-0x0:UPDATED']);
      expect(names(await search('7c9f0'))).to.deep.equal(['app-0-7c9f0-0x0:CREATED', 'app-0-7c9f0-0x0:UPDATED']);
      expect(names(await search('db-1.prod.example'))).to.deep.equal(['db-1.prod.example:CREATED', 'db-1.prod.example:DELETED']);
      expect(names(await search('prod'))).to.deep.equal(['db-1.prod.example:CREATED', 'db-1.prod.example:DELETED']);
      expect(names(await search('db-1.prod'))).to.deep.equal(['db-1.prod.example:CREATED', 'db-1.prod.example:DELETED']);
      // "app" is a prefix of the name and its first part: it matches, but "ap-0" is no name's prefix
      expect(names(await search('ap-0'))).to.deep.equal([]);
    });

    it('finds records by namespace, type, field path and old or new value', async () => {
      expect(names(await search('monitoring'))).to.deep.equal(['prom-target-1:CREATED', 'prom-target-1:UPDATED']);
      expect(names(await search('prom.target'))).to.deep.equal(['prom-target-1:CREATED', 'prom-target-1:UPDATED']);
      expect(names(await search('raw_data.spec'))).to.deep.equal(['app-0-7c9f0-0x0:UPDATED']);
      expect(names(await search('containers'))).to.deep.equal(['app-0-7c9f0-0x0:UPDATED']);
      const image = await search('nginx:1.25');
      expect(names(image)).to.deep.equal(['app-0-7c9f0-0x0:UPDATED']);
      expect(image.items[0].matched).to.deep.include({ in: 'new_value', field: 'raw_data.spec.containers', excerpt: '<em>nginx:1.25</em>' });
      expect(names(await search('nginx:1.24'))).to.deep.equal(['app-0-7c9f0-0x0:UPDATED']);
      expect(names(await search('10.0.0.7'))).to.deep.equal(['app-0-7c9f0-0x0:UPDATED']);
      expect(names(await search('crashloopbackoff'))).to.deep.equal(['prom-target-1:UPDATED']);
      const named = await search('web-staging');
      expect(named.items[0].matched[0]).to.deep.equal({ in: 'name', excerpt: '<em>web-staging</em>' });
    });

    it('combines words, or, -exclusions and "quoted" exact tokens', async () => {
      expect(names(await search('app-0-7c9f0-0x0 nginx'))).to.deep.equal(['app-0-7c9f0-0x0:UPDATED']);
      expect(names(await search('app-0-7c9f0-0x0 -nginx'))).to.deep.equal(['app-0-7c9f0-0x0:CREATED']);
      expect(names(await search('prom-target-1 or db-1.prod.example')).length).to.equal(4);
      expect(names(await search('"nginx"'))).to.deep.equal(['app-0-7c9f0-0x0:UPDATED']);
      expect(names(await search('"ngin"'))).to.deep.equal([]);
      expect(names(await search('ngin'))).to.deep.equal(['app-0-7c9f0-0x0:UPDATED']);
      expect(names(await search('staging -"web-staging"'))).to.deep.equal([]);
    });

    it('applies filters, dates and data scopes with the query, and reports total, took_ms and the query', async () => {
      const filtered = await search('default', admin, `&filter=${encodeURIComponent('change_type:eq:UPDATED')}`);
      expect(names(filtered)).to.deep.equal(['app-0-7c9f0-0x0:UPDATED']);
      const dated = await search('prom-target-1', admin, `&start_date=${ago(5).toISOString()}`);
      expect(names(dated)).to.deep.equal(['prom-target-1:UPDATED']);
      const everything = await search('k8s or prom', admin, '&limit=2');
      expect(everything.items).to.have.lengthOf(2);
      expect(everything).to.include({ total: 8, total_exact: true, offset: 0, limit: 2, query: 'k8s or prom' });
      expect(everything.took_ms).to.be.a('number').and.at.least(0);
      const next = await search('k8s or prom', admin, '&limit=2&offset=2');
      expect(next.items.map((i) => i.id)).to.not.have.members(everything.items.map((i) => i.id));
      // the scoped key sees its instance only
      expect(names(await search('k8s or prom', scoped, '&limit=50'))).to.deep.equal([
        'ancient:CREATED', 'app-0-7c9f0-0x0:CREATED', 'app-0-7c9f0-0x0:UPDATED', 'web-staging:CREATED',
      ]);
      expect((await search('db-1.prod.example', scoped)).total).to.equal(0);
    });

    it('refuses queries under 2 characters, with nothing to find, or beyond the result window', async () => {
      for (const query of ['a', '  b  ', '-word', '']) {
        const reply = await t.app.get(`/api/v1/changes/search?query=${encodeURIComponent(query)}`, admin);
        expect(reply.status, query).to.equal(422);
        expect(reply.body.error.code).to.equal('VALIDATION_ERROR');
        expect(reply.body.error.details.errors[0].field).to.equal('query');
      }
      const missing = await t.app.get('/api/v1/changes/search', admin);
      expect(missing.status).to.equal(422);
      const deep = await t.app.get('/api/v1/changes/search?query=pod&offset=9990&limit=20', admin);
      expect(deep.status).to.equal(422);
      expect(deep.body.error.details.errors[0].field).to.equal('offset');
      expect((await t.app.get('/api/v1/changes/search?query=pod&limit=501', admin)).status).to.equal(422);
      expect((await t.app.get('/api/v1/changes/search?query=pod&filter=nope:eq:1', admin)).status).to.equal(400);
    });

    const listAll = async (key: string, query: string): Promise<ListedChange[]> => {
      const reply = await t.app.get(`/api/v1/changes?limit=1000&${query}`, key);
      expect(reply.status).to.equal(200);
      return reply.body.items;
    };

    for (const groupBy of ['hour', 'day', 'week'] as const) {
      it(`answers default-window statistics by ${groupBy} as listing the same window shows, for an admin and a scoped key`, async () => {
        await t.app.request('POST', '/api/v1/changes/refresh-stats', { key: admin });
        for (const key of [admin, scoped]) {
          const reply = await t.app.get(`/api/v1/changes/stats?group_by=${groupBy}`, key);
          expect(reply.status, reply.text).to.equal(200);
          const start = reply.body.time_range.start as string;
          expect(Date.parse(start)).to.equal(Math.floor((NOW.getTime() - 90 * DAY) / 3_600_000) * 3_600_000);
          expect(Date.parse(reply.body.time_range.end)).to.be.at.least(Date.parse(start));
          const listed = await listAll(key, `start_date=${encodeURIComponent(start)}`);
          const { time_range: _range, ...figures } = reply.body;
          expect(figures).to.deep.equal(statsOf(listed, groupBy));
        }
      });
    }

    it('answers explicit windows from the full history, with known figures', async () => {
      const start = ago(11).toISOString();
      const end = ago(8).toISOString();
      const reply = await t.app.get(`/api/v1/changes/stats?start_date=${encodeURIComponent(start)}&end_date=${encodeURIComponent(end)}&group_by=day`, admin);
      expect(reply.status, reply.text).to.equal(200);
      expect(reply.body.time_range).to.deep.equal({ start, end });
      // app, web-staging and db-1 created, app updated, prom-target-1 created
      expect(reply.body).to.deep.include({ total_changes: 5, affected_cis: 4, changes_by_type: { created: 4, updated: 1, archived: 0 } });
      expect(reply.body.top_changed_ci_types).to.deep.equal([{ ci_type: 'k8s.pod', count: 3 }, { ci_type: 'k8s.node', count: 1 }, { ci_type: 'prom.target', count: 1 }]);
      const listed = await listAll(admin, `start_date=${encodeURIComponent(start)}&end_date=${encodeURIComponent(end)}`);
      const { time_range: _range, ...figures } = reply.body;
      expect(figures).to.deep.equal(statsOf(listed, 'day'));
      const scopedReply = await t.app.get(`/api/v1/changes/stats?start_date=${encodeURIComponent(ago(120).toISOString())}&group_by=week`, scoped);
      const scopedListed = await listAll(scoped, `start_date=${encodeURIComponent(ago(120).toISOString())}`);
      const { time_range: _r, ...scopedFigures } = scopedReply.body;
      expect(scopedFigures).to.deep.equal(statsOf(scopedListed, 'week'));
      expect(scopedFigures.total_changes).to.equal(4);
    });

    it('refreshes idempotently: a second refresh folds nothing in and changes no figure', async () => {
      const first = await t.app.request('POST', '/api/v1/changes/refresh-stats', { key: admin });
      expect(first.status).to.equal(200);
      const before = (await t.app.get('/api/v1/changes/stats', admin)).body;
      const again = await t.app.request('POST', '/api/v1/changes/refresh-stats', { key: admin });
      expect(again.body).to.include({ refreshed: true, rows: 0 });
      expect(again.body.window.start).to.equal(before.time_range.start);
      const after = (await t.app.get('/api/v1/changes/stats', admin)).body;
      expect({ ...after, time_range: undefined }).to.deep.equal({ ...before, time_range: undefined });
      expect((await t.app.request('POST', '/api/v1/changes/refresh-stats', { key: await createKey(t.app.sql, 'ro') })).status).to.equal(403);
    });

    it('validates statistics parameters', async () => {
      expect((await t.app.get('/api/v1/changes/stats?group_by=month', admin)).status).to.equal(422);
      expect((await t.app.get('/api/v1/changes/stats?start_date=2026-02-30', admin)).status).to.equal(422);
      const reversed = await t.app.get('/api/v1/changes/stats?start_date=2026-06-10&end_date=2026-06-01', admin);
      expect(reversed.status).to.equal(422);
      expect(reversed.body.error.details.errors[0].field).to.equal('end_date');
      // a start after now (the default end), or an end before 90 days ago (the default start)
      const future = await t.app.get(`/api/v1/changes/stats?start_date=${encodeURIComponent('9999-12-31T23:59:59.999999Z')}`, admin);
      expect(future.status, future.text).to.equal(422);
      expect(future.body.error.details.errors[0].field).to.equal('start_date');
      const ancient = await t.app.get('/api/v1/changes/stats?end_date=0001-01-01', admin);
      expect(ancient.status).to.equal(422);
      expect(ancient.body.error.details.errors[0].field).to.equal('end_date');
      // the last day timestamps can name bounds nothing
      const open = await t.app.get('/api/v1/changes/stats?start_date=2026-01-01&end_date=9999-12-31', admin);
      expect(open.status, open.text).to.equal(200);
      expect(open.body.total_changes).to.be.greaterThan(0);
      expect((await search('k8s', admin, '&end_date=9999-12-31')).total).to.be.greaterThan(0);
    });
  });
}
