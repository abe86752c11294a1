import { readFileSync } from 'node:fs';
import type { Client } from '@opensearch-project/opensearch';
import { expect } from 'chai';
import { OutboxIndexer } from '../../../indexer/indexer.js';
import { outboxState } from '../../../indexer/outbox.js';
import { reindex } from '../../../indexer/reindex.js';
import { startReindexRun } from '../../../indexer/reindex-state.js';
import { createSearchBackend } from '../../../src/history/search/backends.js';
import {
  aliasIndices,
  createOpenSearchClient,
  ensureIndex,
  loadChangeDocuments,
} from '../../../src/history/search/opensearch-index.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, buildSource, ciIdOf, ingest } from '../../support/factories.js';
import { startFakeOpenSearch, type FakeOpenSearch } from '../../support/fake-opensearch/index.js';

/**
 * The record of a CI that moved between instances of its source (sql/0039) on the OpenSearch
 * backend: its document names the instance the CI left, and every OpenSearch read shows it only
 * to principals that may see both instances, as the PostgreSQL reads do.
 */

const ALIAS = 'cinv-changes';
const HOUR = 3_600_000;
const NOW = new Date('2026-06-15T12:00:00Z');
const ago = (hours: number) => new Date(NOW.getTime() - hours * HOUR);

/** The project's template as it was before moved_from_scope_id (mapping version 1, dynamic strict). */
function previousTemplate(): Record<string, any> {
  const template = JSON.parse(readFileSync(new URL('../../../mappings/change-records.json', import.meta.url), 'utf8'));
  delete template.template.mappings.properties.moved_from_scope_id;
  return template;
}

const pod = (name: string, label: string) =>
  buildPod({
    name,
    namespace: 'shop',
    external_id: 'pod/mover',
    raw_data: { metadata: { name, namespace: 'shop', labels: { secret: label } }, spec: { replicas: 1 } },
  });

describe("a moved CI's record on the OpenSearch backend, against the fake OpenSearch server (a test double)", function () {
  this.timeout(60_000);
  let fake: FakeOpenSearch;
  let client: Client;
  let app: TestApp;
  let indexer: OutboxIndexer;
  let sourceId: string;

  const startApp = async () => {
    app = await startTestApp({ opensearchUrl: fake.url, opensearchIndex: ALIAS });
    app.clock.now = NOW;
    app.context.search = createSearchBackend(app.context.sql, app.context.config, app.context.now, client);
    indexer = new OutboxIndexer(
      app.context.sql,
      client,
      { alias: ALIAS, batchSize: 100, maxAttempts: 3, pollMs: 1000, listen: false, retryDelayMs: () => 0 },
      app.context.logger,
    );
  };

  /** pb-secret in pb, then the CI reconciled into pa with another name and label: the move. */
  const writeMove = async () => {
    const { sql } = app;
    sourceId = await buildSource(sql, 'estate');
    await ingest(sql, [buildPod({ name: 'steady', namespace: 'shop', external_id: 'pod/steady' })], {
      source: 'estate',
      scopeId: 'pa',
      now: ago(30),
    });
    await ingest(sql, [pod('mover-in-pb', 'pb-secret')], { source: 'estate', scopeId: 'pb', now: ago(29) });
    await ingest(sql, [pod('moved-into-pa', 'pa-label')], {
      source: 'estate',
      scopeId: 'pa',
      mode: 'delta',
      now: ago(28),
    });
  };

  beforeEach(async () => {
    await resetDatabase((await testDatabase()).sql);
    fake = await startFakeOpenSearch();
    client = createOpenSearchClient(fake.url);
  });

  afterEach(async () => {
    await app?.close();
    await fake.close();
  });

  describe('reads through the fake OpenSearch', () => {
    let onlyA: string;
    let onlyB: string;
    let both: string;
    let wholeSource: string;
    let admin: string;
    let moverId: string;

    beforeEach(async () => {
      await startApp();
      await writeMove();
      const { sql } = app;
      const reader = (scopes: { sourceId: string; scopeId: string | null }[]) =>
        createKey(sql, 'svc', { permissions: ['changes:read', 'configuration_items:read'], scopes });
      onlyA = await reader([{ sourceId, scopeId: 'pa' }]);
      onlyB = await reader([{ sourceId, scopeId: 'pb' }]);
      both = await reader([
        { sourceId, scopeId: 'pa' },
        { sourceId, scopeId: 'pb' },
      ]);
      wholeSource = await reader([{ sourceId, scopeId: null }]);
      admin = await createKey(sql, 'adm');
      moverId = await ciIdOf(sql, 'pod/mover');
      expect(await indexer.drain()).to.include({ indexed: 3, parked: 0 });
    });

    const search = async (query: string, key: string) => {
      const reply = await app.get(`/api/v1/changes/search?query=${encodeURIComponent(query)}&limit=100`, key);
      expect(reply.status, reply.text).to.equal(200);
      return reply;
    };
    const found = async (query: string, key: string) =>
      ((await search(query, key)).body.items as { ci_name: string; change_type: string }[])
        .map((item) => `${item.ci_name}:${item.change_type}`)
        .sort();

    it("indexes moved_from_scope_id on the move's document only, and no such field on the others (fake OpenSearch)", async () => {
      const [index] = await aliasIndices(client, ALIAS);
      const documents = [...fake.documents(index!).values()].map((document) => document.source);
      expect(documents).to.have.lengthOf(3);
      const moves = documents.filter((document) => document.ci_id === moverId && document.change_type === 'UPDATED');
      expect(moves).to.have.lengthOf(1);
      expect(moves[0]).to.include({ scope_id: 'pa', moved_from_scope_id: 'pb', ci_name: 'moved-into-pa' });
      expect(moves[0]!.changes).to.deep.include({ field: 'scope_id', old_value: 'pb', new_value: 'pa' });
      for (const document of documents.filter((document) => document !== moves[0])) {
        expect(document, `${String(document.ci_name)} ${String(document.change_type)}`).to.not.have.property(
          'moved_from_scope_id',
        );
      }
      // as the indexer loads it from PostgreSQL: absent, not null
      const loaded = await loadChangeDocuments(
        app.sql,
        documents.map((document) => String(document.id)),
      );
      expect(
        loaded.filter((document) => 'moved_from_scope_id' in document).map((document) => document.moved_from_scope_id),
      ).to.deep.equal(['pb']);
    });

    it("finds the move's record for readers of both instances, the whole source or everything, never for a reader of one (fake OpenSearch)", async () => {
      for (const key of [both, wholeSource, admin]) {
        expect(await found('moved-into-pa', key)).to.deep.equal(['moved-into-pa:UPDATED']);
        // the old values are searchable too, for those who may see them
        expect(await found('mover-in-pb', key)).to.deep.equal(['moved-into-pa:UPDATED', 'mover-in-pb:CREATED']);
        expect(await found('pb-secret', key)).to.deep.equal(['moved-into-pa:UPDATED']);
      }
      // pb of another source is not the instance the CI left
      const otherSource = await buildSource(app.sql, 'elsewhere');
      const paAndPbElsewhere = await createKey(app.sql, 'svc', {
        permissions: ['changes:read'],
        scopes: [
          { sourceId, scopeId: 'pa' },
          { sourceId: otherSource, scopeId: 'pb' },
        ],
      });
      for (const key of [onlyA, onlyB, paAndPbElsewhere]) {
        for (const query of ['moved-into-pa', 'pb-secret']) {
          const reply = await search(query, key);
          expect(reply.body.total, query).to.equal(0);
          expect(reply.text).to.not.include('mover-in-pb');
        }
      }
      // the reader of pa sees pa's other record, the reader of pb the CI's record of pb: scopes still apply as before
      expect(await found('steady', onlyA)).to.deep.equal(['steady:CREATED']);
      expect(await found('mover-in-pb', onlyB)).to.deep.equal(['mover-in-pb:CREATED']);
      expect((await search('mover-in-pb', onlyA)).body.total).to.equal(0);
      // the filter narrows what the search counts, not only what it lists
      expect((await search('shop', onlyA)).body.total).to.equal(1);
      expect((await search('shop', both)).body.total).to.equal(3);
    });

    it("leaves the move's record out of the statistics of explicit windows and of a CI's radius for a reader of one instance (fake OpenSearch)", async () => {
      const window = `start_date=${encodeURIComponent(ago(48).toISOString())}&end_date=${encodeURIComponent(NOW.toISOString())}`;
      const stats = async (query: string, key: string) => {
        const reply = await app.get(`/api/v1/changes/stats?${query}`, key);
        expect(reply.status, reply.text).to.equal(200);
        const { time_range: _range, ...figures } = reply.body;
        return figures;
      };
      const requestsBefore = fake.requests.filter((request) => request.path.endsWith('_search')).length;
      expect(await stats(window, onlyA)).to.deep.include({
        total_changes: 1,
        affected_cis: 1,
        changes_by_type: { created: 1, updated: 0, archived: 0 },
      });
      expect(await stats(window, onlyB)).to.deep.include({
        total_changes: 1,
        affected_cis: 1,
        changes_by_type: { created: 1, updated: 0, archived: 0 },
      });
      for (const key of [both, wholeSource, admin]) {
        expect(await stats(window, key)).to.deep.include({
          total_changes: 3,
          affected_cis: 2,
          changes_by_type: { created: 2, updated: 1, archived: 0 },
        });
      }
      // the moved CI's statistics (related_to: it has no relationships, so its radius is itself)
      const radius = `related_to=${moverId}&${window}`;
      expect(await stats(radius, both)).to.deep.include({
        total_changes: 2,
        changes_by_type: { created: 1, updated: 1, archived: 0 },
      });
      const ofA = await stats(radius, onlyA);
      expect(ofA).to.deep.include({ total_changes: 0, affected_cis: 0, top_changed_ci_types: [] });
      // these answers came from the fake cluster, not from PostgreSQL
      expect(
        fake.requests.filter((request) => request.path.endsWith('_search')).length - requestsBefore,
      ).to.be.at.least(7);
    });
  });

  describe('an index made from the template before moved_from_scope_id', () => {
    beforeEach(async () => {
      await startApp();
      await client.indices.putIndexTemplate({
        name: ALIAS,
        body: { ...previousTemplate(), index_patterns: [`${ALIAS}-*`] } as never,
      });
      await client.indices.create({ index: `${ALIAS}-v1-initial`, body: { aliases: { [ALIAS]: {} } } as never });
    });

    it("refuses a move's document until ensureIndex adds the field, then indexes it (fake OpenSearch)", async () => {
      const index = `${ALIAS}-v1-initial`;
      const mappingOf = async () =>
        ((await client.indices.getMapping({ index })).body as Record<string, any>)[index].mappings;
      expect((await mappingOf()).properties).to.not.have.property('moved_from_scope_id');
      expect((await mappingOf()).dynamic).to.equal('strict');
      await writeMove();
      const [move] = await app.sql<
        { id: string }[]
      >`select id::text from change_records where moved_from_scope_id is not null`;
      const [document] = await loadChangeDocuments(app.sql, [move!.id]);
      // the old mapping is strict: the document is refused as it stands
      const refused = await client.bulk({
        body: [{ index: { _index: ALIAS, _id: move!.id, routing: document!.tenant_id } }, document] as never,
      });
      const item = (
        refused.body as { errors: boolean; items: { index: { status: number; error: { type: string } } }[] }
      ).items[0]!.index;
      expect(item.status).to.equal(400);
      expect(item.error.type).to.equal('strict_dynamic_mapping_exception');

      expect(await ensureIndex(client, ALIAS)).to.equal(index);
      const mapping = await mappingOf();
      expect(mapping.properties.moved_from_scope_id).to.deep.equal({ type: 'keyword' });
      expect(mapping.dynamic).to.equal('strict');
      // every field the index had is still mapped as it was
      const { properties } = previousTemplate().template.mappings;
      for (const [field, definition] of Object.entries(properties))
        expect(mapping.properties[field], field).to.deep.equal(definition);
      // a second start changes nothing
      expect(await ensureIndex(client, ALIAS)).to.equal(index);
      expect(await mappingOf()).to.deep.equal(mapping);

      expect(await indexer.drain()).to.include({ indexed: 3, parked: 0 });
      expect(await outboxState(app.sql)).to.include({ pending: 0, parked: 0 });
      expect(fake.documents(index).get(move!.id)!.source).to.include({ moved_from_scope_id: 'pb', scope_id: 'pa' });
      const admin = await createKey(app.sql, 'adm');
      const onlyA = await createKey(app.sql, 'svc', {
        permissions: ['changes:read'],
        scopes: [{ sourceId, scopeId: 'pa' }],
      });
      expect((await app.get('/api/v1/changes/search?query=moved-into-pa', admin)).body.total).to.equal(1);
      expect((await app.get('/api/v1/changes/search?query=moved-into-pa', onlyA)).body.total).to.equal(0);
    });

    it("starts an indexer over the old index without parking a move's document (fake OpenSearch)", async () => {
      await writeMove();
      // the indexer's first batch makes sure of the index, as a start after an upgrade does
      expect(await indexer.drain()).to.include({ indexed: 3, retried: 0, parked: 0 });
      const [index] = await aliasIndices(client, ALIAS);
      expect(index).to.equal(`${ALIAS}-v1-initial`);
      const moved = [...fake.documents(index!).values()].filter(
        (document) => document.source.moved_from_scope_id !== undefined,
      );
      expect(moved.map((document) => document.source.moved_from_scope_id)).to.deep.equal(['pb']);
    });

    /** A reindex begun before the upgrade: its index was made from the previous template. */
    const reindexBegunBefore = async () => {
      const next = `${ALIAS}-v1-next`;
      await client.indices.create({ index: next });
      await startReindexRun(app.sql, ALIAS, next);
      return next;
    };
    const moveId = async () =>
      (await app.sql<{ id: string }[]>`select id::text from change_records where moved_from_scope_id is not null`)[0]!
        .id;

    it("indexes a move's document live into the index of a reindex begun before the upgrade (fake OpenSearch)", async () => {
      const next = await reindexBegunBefore();
      await writeMove();
      // live indexing writes to both indices
      expect(await indexer.drain()).to.include({ indexed: 3, retried: 0, parked: 0 });
      expect(fake.documents(next).get(await moveId())?.source).to.include({ moved_from_scope_id: 'pb' });
      expect(fake.documents(`${ALIAS}-v1-initial`).get(await moveId())?.source).to.include({
        moved_from_scope_id: 'pb',
      });
    });

    it("resumes a reindex begun before the upgrade with a move's document to copy, and moves the alias (fake OpenSearch)", async () => {
      const next = await reindexBegunBefore();
      await writeMove();
      const report = await reindex(
        app.sql,
        client,
        {
          alias: ALIAS,
          batchSize: 10,
          resume: true,
          deleteOld: false,
          now: () => NOW,
          indexer: { batchSize: 10, maxAttempts: 3, pollMs: 1000, retryDelayMs: () => 0 },
        },
        { isTTY: false, columns: 120, write: () => undefined },
      );
      expect(report).to.include({ index: next, indexed: 3, verified: 3 });
      expect(await aliasIndices(client, ALIAS)).to.deep.equal([next]);
      const mapping = ((await client.indices.getMapping({ index: next })).body as Record<string, any>)[next].mappings;
      expect(mapping.properties.moved_from_scope_id).to.deep.equal({ type: 'keyword' });
      expect(fake.documents(next).get(await moveId())?.source).to.include({ moved_from_scope_id: 'pb' });
      expect(await outboxState(app.sql)).to.include({ pending: 0, parked: 0 });
    });
  });
});
