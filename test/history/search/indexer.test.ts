import type { Client } from '@opensearch-project/opensearch';
import { expect } from 'chai';
import { OutboxIndexer, type IndexerOptions } from '../../../indexer/indexer.js';
import { outboxState, requeueParked } from '../../../indexer/outbox.js';
import { startReindexRun } from '../../../indexer/reindex-state.js';
import type { Sql } from '../../../src/platform/db/database.js';
import { createLogger } from '../../../src/platform/observability/logger.js';
import { metricsRegistry } from '../../../src/platform/observability/metrics.js';
import { aliasIndices, createOpenSearchClient, ensureIndex } from '../../../src/history/search/opensearch-index.js';
import { OpenSearchBackend } from '../../../src/history/search/opensearch-backend.js';
import { ChangeStatistics } from '../../../src/history/records/statistics.js';
import { horizonsAt, trimChangeHistory } from '../../../src/history/records/retention.js';
import { onRealPostgres, resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, ingest } from '../../support/factories.js';
import { startFakeOpenSearch, type FakeOpenSearch } from '../../support/fake-opensearch/index.js';
import { random } from '../../support/scenario.js';

const ALIAS = 'cinv-changes';

/** The current value of a metric (summed over its labels), as /metrics would show it. */
async function metricValue(name: string): Promise<number> {
  const metric = await metricsRegistry.getSingleMetric(name)?.get();
  return (metric?.values ?? []).reduce((sum, value) => sum + value.value, 0);
}
const logger = createLogger('silent');

const options = (overrides: Partial<IndexerOptions> = {}): IndexerOptions => ({
  alias: ALIAS,
  batchSize: 50,
  maxAttempts: 3,
  pollMs: 60_000,
  listen: false,
  retryDelayMs: () => 0,
  ...overrides,
});

async function changeIds(sql: Sql): Promise<string[]> {
  return (await sql<{ id: string }[]>`select cr.id::text as id from change_records cr order by cr.id`).map(
    (row) => row.id,
  );
}

/** The ids of the documents of the index behind the alias. */
async function indexedIds(fake: FakeOpenSearch, client: Client): Promise<string[]> {
  const [index] = await aliasIndices(client, ALIAS);
  return [...fake.documents(index!).keys()].sort((a, b) => Number(a) - Number(b));
}

describe('outbox indexer against the fake OpenSearch server (a test double: no OpenSearch can run here)', function () {
  this.timeout(60_000);
  let sql: Sql;
  let fake: FakeOpenSearch;
  let client: Client;

  beforeEach(async () => {
    sql = (await testDatabase()).sql;
    await resetDatabase(sql);
    fake = await startFakeOpenSearch();
    client = createOpenSearchClient(fake.url);
  });

  afterEach(async () => {
    await fake.close();
  });

  it('indexes every change record exactly once by id through 100 injected failures (fake OpenSearch)', async () => {
    await ingest(
      sql,
      Array.from({ length: 240 }, (_, i) => buildPod({ name: `p${i}` })),
      { scopeId: 'c1' },
    );
    await ingest(
      sql,
      Array.from({ length: 240 }, (_, i) => buildPod({ name: `p${i}`, replicas: 2 })),
      { scopeId: 'c1' },
    );
    const expected = await changeIds(sql);
    expect(expected).to.have.lengthOf(480);
    const indexedBefore = await metricValue('cinv_indexer_documents_indexed_total');
    const indexer = new OutboxIndexer(sql, client, options(), logger);
    const rand = random(42);
    let injected = 0;
    for (let rounds = 0; rounds < 500; rounds++) {
      if (injected < 100) {
        const pick = rand();
        if (pick < 0.25) fake.failNext({ kind: 'reset' }, { path: /_bulk/ });
        else if (pick < 0.5) fake.failNext({ kind: 'status', status: pick < 0.4 ? 429 : 503 }, { path: /_bulk/ });
        else
          fake.failItems(
            Array.from({ length: 3 }, () => expected[Math.floor(rand() * expected.length)]!),
            { status: pick < 0.75 ? 429 : 503, type: 'es_rejected_execution_exception' },
            { times: 1 },
          );
        injected++;
      }
      const outcome = await indexer.runOnce().catch(() => ({ claimed: -1 }));
      if (outcome.claimed === 0 && injected >= 100) break;
    }
    expect(injected).to.equal(100);
    expect(await indexedIds(fake, client)).to.deep.equal(expected);
    expect(await sql`select 1 from outbox`).to.have.lengthOf(0);
    const [index] = await aliasIndices(client, ALIAS);
    const document = fake.documents(index!).get(expected[0]!)!;
    expect(document.routing).to.equal(document.source.tenant_id);
    expect(document.source).to.include({ id: expected[0], change_type: 'CREATED', ci_name: 'p0', has_changes: true });
    // retries happened: more bulk requests than the batches would need without failures
    expect(fake.requests.filter((r) => r.path.endsWith('_bulk')).length).to.be.greaterThan(480 / 50 + 10);
    expect((await metricValue('cinv_indexer_documents_indexed_total')) - indexedBefore).to.equal(480);
    expect(await metricValue('cinv_indexer_failures_total')).to.be.greaterThan(0);
  });

  it('expires the documents past the retention horizons as the sweep trims the records (fake OpenSearch)', async () => {
    const now = new Date('2026-11-20T00:00:00Z');
    const ago = (days: number) => new Date(now.getTime() - days * 86_400_000);
    const node = (name: string) => ({ ...buildPod({ name }), ci_type: 'k8s.node', external_id: `node/${name}` });
    const deployment = (name: string) => ({
      ...buildPod({ name }),
      ci_type: 'k8s.deployment',
      external_id: `deploy/${name}`,
    });
    await ingest(sql, [buildPod({ name: 'old-pod' }), node('old-node'), deployment('old-deploy')], {
      now: ago(400),
      mode: 'delta',
    });
    await ingest(sql, [buildPod({ name: 'new-pod' }), node('mid-node')], { now: ago(20), mode: 'delta' });
    await new OutboxIndexer(sql, client, options(), logger).drain();
    expect(await indexedIds(fake, client)).to.have.lengthOf(5);
    const retention = {
      defaultMs: 30 * 86_400_000,
      byType: new Map<string, number | null>([
        ['k8s.node', 10 * 86_400_000],
        ['k8s.deployment', null],
      ]),
    };
    const backend = new OpenSearchBackend(
      client,
      new ChangeStatistics(sql, { statsTimeoutMs: 10_000, now: () => now }),
      { alias: ALIAS, statsTimeoutMs: 10_000 },
    );
    expect(await backend.expire(horizonsAt(retention, now))).to.equal(3);
    await trimChangeHistory(sql, retention, now, 100);
    // what remains in the index is exactly what remains in PostgreSQL
    expect(await indexedIds(fake, client)).to.deep.equal(await changeIds(sql));
    const [index] = await aliasIndices(client, ALIAS);
    expect([...fake.documents(index!).values()].map((doc) => doc.source.ci_name).sort()).to.deep.equal([
      'new-pod',
      'old-deploy',
    ]);
    expect(await backend.expire([])).to.equal(0);
  });

  it('parks rows that keep failing permanently, with their error, and indexes them once re-queued (fake OpenSearch)', async () => {
    await ingest(
      sql,
      Array.from({ length: 20 }, (_, i) => buildPod({ name: `q${i}` })),
    );
    const ids = await changeIds(sql);
    const poisoned = ids.slice(3, 5);
    fake.failItems(poisoned, { status: 400, type: 'mapper_parsing_exception', reason: 'failed to parse field' });
    const indexer = new OutboxIndexer(sql, client, options({ maxAttempts: 3 }), logger);
    for (let i = 0; i < 10; i++) await indexer.drain();
    const parked = await sql<{ aggregate_id: string; attempts: number; last_error: string }[]>`
      select aggregate_id, attempts, last_error from outbox where parked_at is not null order by id`;
    expect(parked.map((row) => row.aggregate_id)).to.deep.equal(poisoned);
    for (const row of parked) {
      expect(row.attempts).to.equal(3);
      expect(row.last_error).to.match(/^400 mapper_parsing_exception: failed to parse field/);
    }
    expect(await outboxState(sql)).to.include({ pending: 0, parked: 2 });
    expect(await indexedIds(fake, client)).to.deep.equal(ids.filter((id) => !poisoned.includes(id)));

    fake.clearFailures();
    expect(await requeueParked(sql)).to.equal(2);
    await indexer.drain();
    expect(await indexedIds(fake, client)).to.deep.equal(ids);
    expect(await outboxState(sql)).to.include({ pending: 0, parked: 0 });
  });

  it('overwrites, never duplicates, a document indexed again (a replay, a second indexer) (fake OpenSearch)', async () => {
    await ingest(sql, [buildPod({ name: 'once' }), buildPod({ name: 'twice' })]);
    const indexer = new OutboxIndexer(sql, client, options(), logger);
    await indexer.drain();
    // the same rows again, as after a crash between indexing and deleting them
    await sql`
      insert into outbox (tenant_id, topic, aggregate_id, payload)
      select tenant_id, 'change_record', id::text, '{}'::jsonb from change_records`;
    await indexer.drain();
    const [index] = await aliasIndices(client, ALIAS);
    const documents = fake.documents(index!);
    expect(documents.size).to.equal(2);
    expect([...documents.values()].map((d) => d.version)).to.deep.equal([2, 2]);
  });

  it('writes to the new index as well while a reindex runs, and to the alias alone afterwards (fake OpenSearch)', async () => {
    await ensureIndex(client, ALIAS);
    await client.indices.create({ index: `${ALIAS}-v1-next` });
    const run = await startReindexRun(sql, ALIAS, `${ALIAS}-v1-next`);
    await ingest(sql, [buildPod({ name: 'during' })]);
    const indexer = new OutboxIndexer(sql, client, options(), logger);
    await indexer.drain();
    expect(fake.documents(`${ALIAS}-v1-next`).size).to.equal(1);
    expect((await indexedIds(fake, client)).length).to.equal(1);
    await sql`update search_reindex set status = 'completed' where id = ${run.id}`;
    await ingest(sql, [buildPod({ name: 'after' })]);
    await indexer.drain();
    expect(fake.documents(`${ALIAS}-v1-next`).size).to.equal(1);
    expect((await indexedIds(fake, client)).length).to.equal(2);
  });

  it('finishes the batch in hand when stopped, and leaves the rest for later (fake OpenSearch)', async () => {
    await ingest(
      sql,
      Array.from({ length: 30 }, (_, i) => buildPod({ name: `s${i}` })),
    );
    const indexer = new OutboxIndexer(sql, client, options({ batchSize: 10, pollMs: 10 }), logger);
    await indexer.start();
    await indexer.stop();
    const left = (await sql`select 1 from outbox`).length;
    const indexed = (await indexedIds(fake, client)).length;
    expect(indexed + left).to.equal(30);
    expect(indexed % 10).to.equal(0);
    // nothing half-done: no row is leased without its document indexed
    expect(await sql`select 1 from outbox where available_at > now()`).to.have.lengthOf(0);
  });

  it('retries a whole batch when OpenSearch cannot be reached, and indexes it once it answers (fake OpenSearch)', async () => {
    await ingest(sql, [buildPod({ name: 'later' })]);
    const indexer = new OutboxIndexer(sql, client, options(), logger);
    await indexer.runOnce();
    fake.failNext({ kind: 'status', status: 503 }, { path: /_bulk/, times: 3 });
    await sql`insert into outbox (tenant_id, topic, aggregate_id, payload) select tenant_id, 'change_record', id::text, '{}' from change_records`;
    for (let i = 0; i < 3; i++) expect(await indexer.runOnce()).to.include({ claimed: 1, retried: 1 });
    const [row] = await sql<{ last_error: string; attempts: number }[]>`select last_error, attempts from outbox`;
    expect(row!.last_error).to.match(/503/);
    expect(row!.attempts).to.equal(3);
    expect(await indexer.runOnce()).to.include({ claimed: 1, indexed: 1 });
  });

  (onRealPostgres ? describe : describe.skip)(
    'with several sessions (skipped on the embedded database: PGlite has one session)',
    () => {
      it('lets competing indexers share the outbox without indexing a record twice (fake OpenSearch)', async () => {
        await ingest(
          sql,
          Array.from({ length: 400 }, (_, i) => buildPod({ name: `c${i}` })),
        );
        const indexers = [0, 1, 2].map(() => new OutboxIndexer(sql, client, options({ batchSize: 20 }), logger));
        await Promise.all(indexers.map((indexer) => indexer.drain()));
        expect(await indexedIds(fake, client)).to.deep.equal(await changeIds(sql));
        const sent = fake.requests
          .filter((r) => r.path.endsWith('_bulk'))
          .flatMap((r) =>
            (r.body as { index?: { _id: string } }[]).filter((line) => line.index).map((line) => line.index!._id),
          );
        expect(sent).to.have.lengthOf(400);
        expect(new Set(sent).size).to.equal(400);
      });

      it('wakes on NOTIFY when a change is written, without waiting for its poll (fake OpenSearch)', async () => {
        const indexer = new OutboxIndexer(sql, client, options({ listen: true, pollMs: 60_000 }), logger);
        await indexer.start();
        try {
          await new Promise((resolve) => setTimeout(resolve, 200));
          const written = performance.now();
          await ingest(sql, [buildPod({ name: 'notified' })]);
          let ids: string[] = [];
          while (ids.length === 0 && performance.now() - written < 5000) {
            await new Promise((resolve) => setTimeout(resolve, 20));
            ids = (await aliasIndices(client, ALIAS)).length > 0 ? await indexedIds(fake, client) : [];
          }
          expect(ids).to.have.lengthOf(1);
          expect(performance.now() - written).to.be.below(2000);
        } finally {
          await indexer.stop();
        }
      });
    },
  );
});
