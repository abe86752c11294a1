import { readFileSync } from 'node:fs';
import type { Client } from '@opensearch-project/opensearch';
import { expect } from 'chai';
import type { Config } from '../../../src/platform/config/config.js';
import { aliasIndices, ensureIndex, loadChangeDocuments } from '../../../src/history/search/opensearch-index.js';
import { createKey, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, buildSource, ciIdOf, ingest } from '../../support/factories.js';

/** A backend under test: an app whose search backend it is, and how to let writes reach it. */
export interface ContractTarget {
  app: TestApp;
  /** Makes everything written so far searchable (OpenSearch: index the outbox, refresh). */
  sync(): Promise<void>;
  close(): Promise<void>;
  /** On the OpenSearch backend: a client of its cluster and the alias the app searches. */
  opensearch?: { client: Client; alias: string };
}

/** The project's index template as it was before moved_from_scope_id (mapping version 1, dynamic strict). */
function previousTemplate(): Record<string, any> {
  const template = JSON.parse(readFileSync(new URL('../../../mappings/change-records.json', import.meta.url), 'utf8'));
  delete template.template.mappings.properties.moved_from_scope_id;
  return template;
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
  kind: string | null;
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
  const kinds = new Map<string, number>();
  const series = new Map<string, { bucket_start: string; created: number; updated: number; archived: number }>();
  for (const change of changes) {
    byType[TYPE_KEY[change.change_type]]++;
    types.set(change.ci_type, (types.get(change.ci_type) ?? 0) + 1);
    kinds.set(change.kind ?? 'other', (kinds.get(change.kind ?? 'other') ?? 0) + 1);
    const start = bucketStart(change.changed_at, groupBy);
    const bucket = series.get(start) ?? { bucket_start: start, created: 0, updated: 0, archived: 0 };
    bucket[TYPE_KEY[change.change_type]]++;
    series.set(start, bucket);
  }
  return {
    total_changes: changes.length,
    affected_cis: new Set(changes.map((c) => c.ci_id)).size,
    changes_by_type: byType,
    top_changed_ci_types: [...types]
      .map(([ci_type, count]) => ({ ci_type, count }))
      .sort((a, b) => b.count - a.count || (a.ci_type < b.ci_type ? -1 : 1))
      .slice(0, 10),
    changes_by_kind: [...kinds]
      .map(([kind, count]) => ({ kind, count }))
      .sort((a, b) => b.count - a.count || (a.kind < b.kind ? -1 : 1)),
    series: [...series.values()].sort((a, b) => (a.bucket_start < b.bucket_start ? -1 : 1)),
  };
}

/**
 * The behaviour of change search and statistics, the same on every backend (ranking aside).
 * `target` builds an app over the run's database with the backend under test.
 */
export function searchContract(title: string, target: TargetFactory, backend: 'postgres' | 'opensearch'): void {
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
      scoped = await createKey(sql, 'svc', {
        permissions: ['changes:read', 'changes:write'],
        scopes: [{ sourceId: sourceA, scopeId: 'c1' }],
      });

      const app0 = buildPod({ name: 'app-0-7c9f0-0x0', namespace: 'default' });
      const withImage = (image: string, ip?: string) => ({
        ...app0,
        raw_data: {
          ...app0.raw_data,
          spec: { containers: [{ name: 'app', image }] },
          status: { phase: 'Running', ...(ip ? { podIP: ip } : {}) },
        },
      });
      const node = {
        ...buildPod({ name: 'db-1.prod.example', namespace: null }),
        external_id: 'node/db-1',
        ci_type: 'k8s.node',
      };
      const staging = buildPod({ name: 'web-staging', namespace: 'staging' });
      const promTarget = {
        ...buildPod({ name: 'prom-target-1', namespace: 'monitoring' }),
        external_id: 'target/1',
        ci_type: 'prom.target',
      };
      // outside the default window
      await ingest(sql, [buildPod({ name: 'ancient' })], { source: 'k8s-a', scopeId: 'c1', now: ago(100) });
      await ingest(sql, [withImage('nginx:1.24'), staging], { source: 'k8s-a', scopeId: 'c1', now: ago(10, 10) });
      await ingest(sql, [node], { source: 'k8s-a', scopeId: 'c2', now: ago(10, 10) });
      await ingest(sql, [promTarget], { source: 'prom-b', now: ago(9, 3) });
      await ingest(sql, [withImage('nginx:1.25', '10.0.0.7')], { source: 'k8s-a', scopeId: 'c1', now: ago(10, 11) });
      await ingest(sql, [], { source: 'k8s-a', scopeId: 'c2', mode: 'delta', deletions: ['node/db-1'], now: ago(3) });
      await ingest(
        sql,
        [{ ...promTarget, raw_data: { ...promTarget.raw_data, labels: { env: 'CrashLoopBackOff' } } }],
        { source: 'prom-b', now: ago(2, 5) },
      );
      await t.sync();
    });

    after(async () => {
      await t?.close();
    });

    const search = async (query: string, key = admin, extra = '') => {
      const reply = await t.app.get(`/api/v1/changes/search?query=${encodeURIComponent(query)}${extra}`, key);
      expect(reply.status, `${query}: ${reply.text}`).to.equal(200);
      return reply.body as {
        items: any[];
        total: number;
        total_exact: boolean;
        took_ms: number;
        query: string;
        offset: number;
        limit: number;
      };
    };
    const names = (body: { items: { ci_name: string; change_type: string }[] }) =>
      body.items.map((i) => `${i.ci_name}:${i.change_type}`).sort();

    it('finds records by name, whole or by part, without expanding short parts', async () => {
      expect(names(await search('app-0-7c9f0-0x0'))).to.deep.equal([
        'app-0-7c9f0-0x0:CREATED',
        'app-0-7c9f0-0x0:UPDATED',
      ]);
      expect(names(await search('7c9f0'))).to.deep.equal(['app-0-7c9f0-0x0:CREATED', 'app-0-7c9f0-0x0:UPDATED']);
      expect(names(await search('db-1.prod.example'))).to.deep.equal([
        'db-1.prod.example:CREATED',
        'db-1.prod.example:DELETED',
      ]);
      expect(names(await search('prod'))).to.deep.equal(['db-1.prod.example:CREATED', 'db-1.prod.example:DELETED']);
      expect(names(await search('db-1.prod'))).to.deep.equal([
        'db-1.prod.example:CREATED',
        'db-1.prod.example:DELETED',
      ]);
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
      expect(image.items[0].matched).to.deep.include({
        in: 'new_value',
        field: 'raw_data.spec.containers',
        excerpt: '<em>nginx:1.25</em>',
      });
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
        'ancient:CREATED',
        'app-0-7c9f0-0x0:CREATED',
        'app-0-7c9f0-0x0:UPDATED',
        'web-staging:CREATED',
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
      const reply = await t.app.get(
        `/api/v1/changes/stats?start_date=${encodeURIComponent(start)}&end_date=${encodeURIComponent(end)}&group_by=day`,
        admin,
      );
      expect(reply.status, reply.text).to.equal(200);
      expect(reply.body.time_range).to.deep.equal({ start, end });
      // app, web-staging and db-1 created, app updated, prom-target-1 created
      expect(reply.body).to.deep.include({
        total_changes: 5,
        affected_cis: 4,
        changes_by_type: { created: 4, updated: 1, archived: 0 },
      });
      expect(reply.body.top_changed_ci_types).to.deep.equal([
        { ci_type: 'k8s.pod', count: 3 },
        { ci_type: 'k8s.node', count: 1 },
        { ci_type: 'prom.target', count: 1 },
      ]);
      const listed = await listAll(
        admin,
        `start_date=${encodeURIComponent(start)}&end_date=${encodeURIComponent(end)}`,
      );
      const { time_range: _range, ...figures } = reply.body;
      expect(figures).to.deep.equal(statsOf(listed, 'day'));
      const scopedReply = await t.app.get(
        `/api/v1/changes/stats?start_date=${encodeURIComponent(ago(120).toISOString())}&group_by=week`,
        scoped,
      );
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
      expect(
        (await t.app.request('POST', '/api/v1/changes/refresh-stats', { key: await createKey(t.app.sql, 'ro') }))
          .status,
      ).to.equal(403);
    });

    it('validates statistics parameters', async () => {
      expect((await t.app.get('/api/v1/changes/stats?group_by=month', admin)).status).to.equal(422);
      expect((await t.app.get('/api/v1/changes/stats?start_date=2026-02-30', admin)).status).to.equal(422);
      const reversed = await t.app.get('/api/v1/changes/stats?start_date=2026-06-10&end_date=2026-06-01', admin);
      expect(reversed.status).to.equal(422);
      expect(reversed.body.error.details.errors[0].field).to.equal('end_date');
      // a start after now (the default end), or an end before 90 days ago (the default start)
      const future = await t.app.get(
        `/api/v1/changes/stats?start_date=${encodeURIComponent('9999-12-31T23:59:59.999999Z')}`,
        admin,
      );
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

    // after the cases above, which count the records written in `before`
    describe('a CI moved between instances of its source', () => {
      let sourceEstate: string;
      let onlyA: string;
      let both: string;
      let paAndPbElsewhere: string;
      let moverId: string;

      before(async () => {
        const { sql } = t.app;
        sourceEstate = await buildSource(sql, 'estate');
        const mover = (name: string, label: string) =>
          buildPod({
            name,
            namespace: 'shop',
            external_id: 'pod/mover',
            raw_data: { metadata: { name, namespace: 'shop', labels: { tier: label } } },
          });
        await ingest(sql, [mover('mover-of-pb', 'pb-only-label')], { source: 'estate', scopeId: 'pb', now: ago(4) });
        await ingest(sql, [mover('mover-now-in-pa', 'pa-label')], {
          source: 'estate',
          scopeId: 'pa',
          mode: 'delta',
          now: ago(3),
        });
        await t.sync();
        moverId = await ciIdOf(sql, 'pod/mover');
        const reader = (scopes: { sourceId: string; scopeId: string }[]) =>
          createKey(sql, 'svc', { permissions: ['changes:read', 'configuration_items:read'], scopes });
        onlyA = await reader([{ sourceId: sourceEstate, scopeId: 'pa' }]);
        both = await reader([
          { sourceId: sourceEstate, scopeId: 'pa' },
          { sourceId: sourceEstate, scopeId: 'pb' },
        ]);
        // pb of another source is not the instance the CI left
        paAndPbElsewhere = await reader([
          { sourceId: sourceEstate, scopeId: 'pa' },
          { sourceId: sourceA, scopeId: 'pb' },
        ]);
      });

      it("finds the move's record, old values and all, only for readers of both instances", async () => {
        for (const key of [admin, both]) {
          expect(names(await search('mover-now-in-pa', key))).to.deep.equal(['mover-now-in-pa:UPDATED']);
          expect(names(await search('pb-only-label', key))).to.deep.equal(['mover-now-in-pa:UPDATED']);
        }
        for (const key of [onlyA, paAndPbElsewhere]) {
          for (const query of ['mover-now-in-pa', 'pb-only-label', 'mover-of-pb', 'shop']) {
            const seen = await search(query, key);
            expect(seen.total, query).to.equal(0);
            expect(seen.items, query).to.deep.equal([]);
          }
        }
      });

      it("leaves the move's record out of the moved CI's statistics for a reader of one instance", async () => {
        const window = `start_date=${encodeURIComponent(ago(5).toISOString())}&end_date=${encodeURIComponent(ago(1).toISOString())}`;
        const stats = async (key: string) => {
          const reply = await t.app.get(`/api/v1/changes/stats?related_to=${moverId}&${window}`, key);
          expect(reply.status, reply.text).to.equal(200);
          return reply.body;
        };
        expect(await stats(both)).to.deep.include({
          total_changes: 2,
          affected_cis: 1,
          changes_by_type: { created: 1, updated: 1, archived: 0 },
        });
        expect(await stats(onlyA)).to.deep.include({
          total_changes: 0,
          affected_cis: 0,
          changes_by_type: { created: 0, updated: 0, archived: 0 },
        });
      });
    });

    // declared for the OpenSearch backend only: the PostgreSQL backend has no index mapping
    (backend === 'opensearch' ? describe : () => undefined)('the index mapping (OpenSearch only)', () => {
      /** An alias of its own beside the app's, whose indices the app's template does not match. */
      const scratch = () => `prev-${t.opensearch!.alias}`;
      const mappingOf = async (index: string): Promise<any> =>
        ((await t.opensearch!.client.indices.getMapping({ index })).body as any)[index].mappings;
      const cleanUp = async () => {
        const { client } = t.opensearch!;
        for (const index of await aliasIndices(client, scratch())) await client.indices.delete({ index });
        await client.indices.deleteIndexTemplate({ name: scratch() }).catch(() => undefined);
      };

      beforeEach(async () => {
        await cleanUp();
        const { client } = t.opensearch!;
        await client.indices.putIndexTemplate({
          name: scratch(),
          body: { ...previousTemplate(), index_patterns: [`${scratch()}-*`] } as never,
        });
        await client.indices.create({
          index: `${scratch()}-v1-initial`,
          body: { aliases: { [scratch()]: {} } } as never,
        });
      });

      afterEach(async () => {
        if (t.opensearch) await cleanUp();
      });

      it("gives an index made from the previous template the new field at ensureIndex, and then takes a move's document", async () => {
        const { client } = t.opensearch!;
        const index = `${scratch()}-v1-initial`;
        const [move] = await t.app.sql<
          { id: string }[]
        >`select id::text from change_records where moved_from_scope_id is not null limit 1`;
        const [document] = await loadChangeDocuments(t.app.sql, [move!.id]);
        expect(document!.moved_from_scope_id).to.equal('pb');
        // as the indexer writes: one bulk request, the item's result telling
        const put = async () => {
          const { body } = await client.bulk({
            refresh: true,
            body: [{ index: { _index: scratch(), _id: move!.id, routing: document!.tenant_id } }, document] as never,
          });
          return (body as { items: { index: { status: number; error?: { type: string } } }[] }).items[0]!.index;
        };
        const refused = await put();
        expect(refused.status).to.equal(400);
        expect(refused.error?.type).to.equal('strict_dynamic_mapping_exception');

        const before = await mappingOf(index);
        expect(await ensureIndex(client, scratch())).to.equal(index);
        const after = await mappingOf(index);
        expect(after.properties.moved_from_scope_id).to.deep.equal({ type: 'keyword' });
        expect({ ...after.properties, moved_from_scope_id: undefined }).to.deep.equal({
          ...before.properties,
          moved_from_scope_id: undefined,
        });
        expect(after.dynamic).to.equal('strict');
        // a second start changes nothing
        await ensureIndex(client, scratch());
        expect(await mappingOf(index)).to.deep.equal(after);

        expect(await put()).to.deep.include({ status: 201 });
        const found = await client.search({
          index: scratch(),
          routing: document!.tenant_id,
          body: { query: { term: { moved_from_scope_id: 'pb' } } } as never,
        });
        expect((found.body.hits.hits as { _id: string }[]).map((hit) => hit._id)).to.deep.equal([move!.id]);
      });

      it("adds a field with PUT _mapping, and refuses to change a mapped field's type (400 illegal_argument_exception)", async () => {
        const { client } = t.opensearch!;
        const index = `${scratch()}-v1-initial`;
        const added = await client.indices.putMapping({
          index: scratch(),
          body: {
            properties: {
              moved_from_scope_id: { type: 'keyword' },
              tokens: { properties: { extra: { type: 'keyword' } } },
            },
          } as never,
        });
        expect(added.body).to.deep.include({ acknowledged: true });
        const mapped = await mappingOf(index);
        expect(mapped.properties.moved_from_scope_id).to.deep.equal({ type: 'keyword' });
        expect(mapped.properties.tokens.properties).to.deep.include({
          extra: { type: 'keyword' },
          name: { type: 'keyword' },
        });
        for (const properties of [
          { scope_id: { type: 'long' } },
          { tokens: { properties: { name: { type: 'text' } } } },
        ]) {
          const refused = await client.indices.putMapping({ index, body: { properties } as never }).then(
            () => undefined,
            (error: { meta: { statusCode: number; body: { error: { type: string; reason: string } } } }) => error.meta,
          );
          expect(refused?.statusCode, JSON.stringify(properties)).to.equal(400);
          expect(refused?.body.error.type).to.equal('illegal_argument_exception');
          expect(refused?.body.error.reason).to.match(/cannot be changed from type \[keyword\] to \[(long|text)\]/);
          expect(await mappingOf(index)).to.deep.equal(mapped);
        }
      });
    });
  });
}
