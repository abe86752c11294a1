import type { Client } from '@opensearch-project/opensearch';
import type { Sql } from 'postgres';
import type { Logger } from '../src/platform/observability/logger.js';
import {
  addTemplateFields,
  aliasIndices,
  bulkBody,
  installTemplate,
  loadChangeDocuments,
  newIndexName,
} from '../src/history/search/opensearch-index.js';
import { backoffMs, OutboxIndexer, type IndexerOptions } from './indexer.js';
import { Progress, type ProgressOutput } from '../src/platform/progress.js';
import { finishReindexRun, recordProgress, runningReindex, startReindexRun, type ReindexRun } from './reindex-state.js';

export interface ReindexOptions {
  alias: string;
  batchSize: number;
  /** Continue the interrupted reindex of the alias instead of starting a new one. */
  resume: boolean;
  /** Delete the indices the alias pointed to before, once it points at the new one. */
  deleteOld: boolean;
  now: () => Date;
  /** Settings for the final drain of the outbox. */
  indexer: Omit<IndexerOptions, 'alias' | 'listen'>;
}

export interface ReindexReport {
  index: string;
  previous: string[];
  deleted: string[];
  indexed: number;
  verified: number;
  drained: number;
}

export class ReindexError extends Error {}

const MAX_BATCH_ATTEMPTS = 8;

/** The ids of the next batch after `after`, in id order. */
async function nextIds(sql: Sql, after: string, limit: number): Promise<string[]> {
  // ordered by the bigint column, not by its text (which would put 10 before 9)
  const rows = await sql<{ id: string }[]>`
    select cr.id::text as id from change_records cr where cr.id > ${after}::bigint order by cr.id limit ${limit}`;
  return rows.map((row) => row.id);
}

/** Indexes one batch into the new index, retrying transient failures; a permanent one stops the reindex. */
async function indexBatch(
  client: Client,
  sql: Sql,
  index: string,
  ids: string[],
  logger: Logger | undefined,
): Promise<number> {
  const documents = await loadChangeDocuments(sql, ids);
  for (let attempt = 1; ; attempt++) {
    try {
      const { body } = await client.bulk({ body: bulkBody(index, documents) as never });
      const failed = (
        body as { items: Record<string, { status: number; error?: { type?: string; reason?: string } }>[] }
      ).items
        .map((item) => Object.values(item)[0]!)
        .filter((item) => item.status >= 300);
      if (failed.length === 0) return documents.length;
      const permanent = failed.find((item) => item.status !== 429 && item.status < 500);
      if (permanent)
        throw new ReindexError(
          `OpenSearch refused a document: ${permanent.status} ${permanent.error?.type}: ${permanent.error?.reason}`,
        );
      throw new Error(`${failed.length} documents failed with ${failed[0]!.status}`);
    } catch (error) {
      if (error instanceof ReindexError || attempt >= MAX_BATCH_ATTEMPTS) throw error;
      logger?.warn({ attempt, err: error }, 'reindex batch failed; retrying');
      await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt)));
    }
  }
}

/** Documents of the new index with ids up to `lastId`, against the same count in PostgreSQL. */
async function verify(client: Client, sql: Sql, index: string, lastId: string): Promise<number> {
  await client.indices.refresh({ index });
  const [row] = await sql<
    { count: number }[]
  >`select count(*)::int as count from change_records where id <= ${lastId}::bigint`;
  const expected = row!.count;
  const { body } = await client.count({ index, body: { query: { range: { id: { lte: lastId } } } } as never });
  const actual = (body as { count: number }).count;
  if (actual !== expected) {
    throw new ReindexError(
      `the new index ${index} holds ${actual} documents up to change ${lastId}, PostgreSQL ${expected}; the alias was not moved (run again with --resume)`,
    );
  }
  return actual;
}

/**
 * Rebuilds the change-record index from PostgreSQL: a new index (from the template), filled in
 * keyset batches with progress, verified against PostgreSQL, then the alias moved to it in one
 * atomic request. The old index stays unless `deleteOld`. While it runs, live indexing writes to
 * the new index too; afterwards the outbox is drained once, so nothing written meanwhile is lost.
 * An interrupted reindex continues from its last batch with `resume`.
 */
export async function reindex(
  sql: Sql,
  client: Client,
  options: ReindexOptions,
  out: ProgressOutput,
  logger?: Logger,
): Promise<ReindexReport> {
  await installTemplate(client, options.alias);
  let run: ReindexRun;
  const running = await runningReindex(sql, options.alias);
  if (options.resume) {
    if (!running) throw new ReindexError(`no interrupted reindex of ${options.alias} to resume`);
    if (!(await client.indices.exists({ index: running.index_name })).body) {
      throw new ReindexError(`the index ${running.index_name} of the interrupted reindex is gone; start a new reindex`);
    }
    // begun by an earlier version, its index may lack fields of the template
    await addTemplateFields(client, [running.index_name]);
    run = running;
  } else {
    if (running)
      throw new ReindexError(
        `a reindex of ${options.alias} into ${running.index_name} is already running (since ${running.started_at.toISOString()}); use --resume to continue it`,
      );
    const index = newIndexName(options.alias, options.now());
    await client.indices.create({ index });
    run = await startReindexRun(sql, options.alias, index);
  }
  const [left] = await sql<
    { count: number }[]
  >`select count(*)::int as count from change_records where id > ${run.last_change_id}::bigint`;
  const total = run.indexed + left!.count;
  let indexed = run.indexed;
  let last = run.last_change_id;
  const progress = new Progress(`reindex ${run.index_name}`, total, out);
  try {
    for (;;) {
      const ids = await nextIds(sql, last, options.batchSize);
      if (ids.length === 0) break;
      indexed += await indexBatch(client, sql, run.index_name, ids, logger);
      last = ids.at(-1)!;
      await recordProgress(sql, run.id, last, indexed, Math.max(total, indexed));
      progress.update(indexed);
    }
    progress.finish(indexed);
    const verified = await verify(client, sql, run.index_name, last);
    const previous = (await aliasIndices(client, options.alias)).filter((index) => index !== run.index_name);
    await client.indices.updateAliases({
      body: {
        actions: [
          ...previous.map((index) => ({ remove: { index, alias: options.alias } })),
          { add: { index: run.index_name, alias: options.alias } },
        ],
      },
    });
    await finishReindexRun(sql, run.id, 'completed');
    const deleted: string[] = [];
    if (options.deleteOld) {
      for (const index of previous) {
        await client.indices.delete({ index });
        deleted.push(index);
      }
    }
    // whatever the outbox still holds (nobody indexing meanwhile) goes to the new index now
    const drained = await new OutboxIndexer(
      sql,
      client,
      { ...options.indexer, alias: options.alias, listen: false },
      logger ?? silentLogger,
    ).drain();
    return { index: run.index_name, previous, deleted, indexed, verified, drained: drained.indexed };
  } catch (error) {
    progress.finish(indexed);
    throw error;
  }
}

const silentLogger = { warn: () => undefined, error: () => undefined, info: () => undefined } as unknown as Logger;
