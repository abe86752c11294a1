import type { Client } from '@opensearch-project/opensearch';
import { expect } from 'chai';
import { OutboxIndexer } from '../../../indexer/indexer.js';
import { reindex, ReindexError, type ReindexOptions } from '../../../indexer/reindex.js';
import { runningReindex } from '../../../indexer/reindex-state.js';
import type { Sql } from '../../../src/platform/db/database.js';
import { createLogger } from '../../../src/platform/observability/logger.js';
import { aliasIndices, createOpenSearchClient } from '../../../src/history/search/opensearch-index.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, ingest } from '../../support/factories.js';
import { startFakeOpenSearch, type FakeOpenSearch } from '../../support/fake-opensearch/index.js';

const ALIAS = 'cinv-changes';
const logger = createLogger('silent');

/** Collects what a progress display writes, as a terminal or as a log. */
const output = (isTTY: boolean) => {
  const written: string[] = [];
  return { isTTY, columns: 120, written, write: (text: string) => written.push(text) };
};

describe('cinv reindex against the fake OpenSearch server (a test double: no OpenSearch can run here)', function () {
  this.timeout(60_000);
  let sql: Sql;
  let fake: FakeOpenSearch;
  let client: Client;
  let clock: number;
  const settings = (overrides: Partial<ReindexOptions> = {}): ReindexOptions => ({
    alias: ALIAS,
    batchSize: 25,
    resume: false,
    deleteOld: false,
    // every run gets its own index name, a second later than the one before
    now: () => new Date(Date.UTC(2026, 10, 23, 10, 0, clock++)),
    indexer: { batchSize: 50, maxAttempts: 3, pollMs: 1000, retryDelayMs: () => 0 },
    ...overrides,
  });

  beforeEach(async () => {
    sql = (await testDatabase()).sql;
    await resetDatabase(sql);
    fake = await startFakeOpenSearch();
    client = createOpenSearchClient(fake.url);
    clock = 0;
    await ingest(
      sql,
      Array.from({ length: 120 }, (_, i) => buildPod({ name: `r${i}` })),
    );
  });

  afterEach(async () => {
    await fake.close();
  });

  it('builds a new index from PostgreSQL, verifies it, moves the alias atomically and keeps the old index (fake OpenSearch)', async () => {
    // the live indexer has indexed part of it already, into the first index
    await new OutboxIndexer(
      sql,
      client,
      { alias: ALIAS, batchSize: 50, maxAttempts: 3, pollMs: 1000, listen: false },
      logger,
    ).runOnce();
    const [first] = await aliasIndices(client, ALIAS);
    expect(fake.documents(first!).size).to.equal(50);
    const log = output(false);
    const report = await reindex(sql, client, settings(), log, logger);
    expect(report).to.include({ indexed: 120, verified: 120 });
    expect(report.previous).to.deep.equal([first]);
    expect(report.deleted).to.deep.equal([]);
    expect(await aliasIndices(client, ALIAS)).to.deep.equal([report.index]);
    expect(fake.documents(report.index).size).to.equal(120);
    expect(fake.indices()).to.include(first!);
    // one request moved the alias: removed from the old index and added to the new together
    const swaps = fake.requests.filter((r) => r.path === '/_aliases');
    expect(swaps).to.have.lengthOf(1);
    expect((swaps[0]!.body as { actions: unknown[] }).actions).to.deep.equal([
      { remove: { index: first, alias: ALIAS } },
      { add: { index: report.index, alias: ALIAS } },
    ]);
    // the outbox the live indexer had not reached yet was applied afterwards
    expect(report.drained).to.equal(70);
    expect(await sql`select 1 from outbox`).to.have.lengthOf(0);
    expect(log.written.at(-1)).to.match(/^reindex cinv-changes-v1-\S+ 120\/120 \(100\.0%\) [\d,]+\/s ETA /);
    expect(await runningReindex(sql, ALIAS)).to.equal(undefined);
  });

  it('deletes the previous index with --delete-old, and draws a progress bar on a terminal (fake OpenSearch)', async () => {
    const first = await reindex(sql, client, settings(), output(false), logger);
    const terminal = output(true);
    const second = await reindex(sql, client, settings({ deleteOld: true }), terminal, logger);
    expect(second.deleted).to.deep.equal([first.index]);
    expect(fake.indices()).to.not.include(first.index);
    expect(await aliasIndices(client, ALIAS)).to.deep.equal([second.index]);
    expect(terminal.written.join('')).to.match(/\r\[[#-]+\] reindex /);
    expect(terminal.written.at(-1)).to.match(/\n$/);
  });

  it('resumes an interrupted reindex from its last batch, retrying transient failures on the way (fake OpenSearch)', async () => {
    const ids = (await sql<{ id: string }[]>`select cr.id::text as id from change_records cr order by cr.id`).map(
      (row) => row.id,
    );
    // batch 3 holds a document OpenSearch refuses: the reindex stops there, and the alias stays
    fake.failItems([ids[60]!], { status: 400, type: 'mapper_parsing_exception', reason: 'broken' });
    fake.failNext({ kind: 'status', status: 503 }, { path: /_bulk/, times: 1 });
    let failure: unknown;
    await reindex(sql, client, settings(), output(false), logger).catch((error: unknown) => (failure = error));
    expect(failure).to.be.instanceOf(ReindexError);
    expect((failure as Error).message).to.match(/mapper_parsing_exception/);
    const interrupted = await runningReindex(sql, ALIAS);
    expect(interrupted?.last_change_id).to.equal(ids[49]);
    expect(interrupted?.indexed).to.equal(50);
    expect(await aliasIndices(client, ALIAS)).to.deep.equal([]);

    // a new reindex is refused while one waits to be resumed
    const again = await reindex(sql, client, settings(), output(false), logger).catch((error: unknown) => error);
    expect((again as Error).message).to.match(/already running .* --resume/);

    fake.clearFailures();
    const bulkRequests = fake.requests.filter((r) => r.path.endsWith('_bulk')).length;
    const report = await reindex(sql, client, settings({ resume: true }), output(false), logger);
    expect(report.index).to.equal(interrupted!.index_name);
    expect(report).to.include({ indexed: 120, verified: 120 });
    // only the remaining 70 documents were sent again (3 batches of 25), plus the final drain
    const resumedBulks = fake.requests.filter((r) => r.path.endsWith('_bulk')).slice(bulkRequests);
    const sent = resumedBulks.flatMap((r) =>
      (r.body as { index?: { _id: string; _index: string } }[])
        .filter((l) => l.index?._index === report.index)
        .map((l) => l.index!._id),
    );
    expect(sent.slice(0, 70)).to.deep.equal(ids.slice(50));
    expect(await aliasIndices(client, ALIAS)).to.deep.equal([report.index]);
    const nothing = await reindex(sql, client, settings({ resume: true }), output(false), logger).catch(
      (error: unknown) => error,
    );
    expect((nothing as Error).message).to.match(/no interrupted reindex/);
  });
});
