import type { Client } from '@opensearch-project/opensearch';
import type { Sql } from 'postgres';
import { OUTBOX_CHANNEL } from '../src/history/records/writer.js';
import type { Logger } from '../src/platform/observability/logger.js';
import {
  addTemplateFields,
  bulkBody,
  ensureIndex,
  loadChangeDocuments,
  type ChangeDocument,
} from '../src/history/search/opensearch-index.js';
import { indexerFailures, documentsIndexed, outboxLag, outboxParked, outboxPending } from './metrics.js';
import { claimBatch, completeRows, outboxState, parkRows, retryRows, type ClaimedRow } from './outbox.js';
import { runningReindex } from './reindex-state.js';

export interface IndexerOptions {
  alias: string;
  batchSize: number;
  /** Attempts after which a row failing permanently (a mapping error) is parked. */
  maxAttempts: number;
  pollMs: number;
  /** How long a claimed row stays invisible to other indexers. */
  leaseMs?: number;
  /** Wake on NOTIFY (a PostgreSQL server); the embedded database is polled. */
  listen: boolean;
  /** Delay before a failed row is tried again (default: exponential backoff with jitter). */
  retryDelayMs?: (attempts: number) => number;
}

export interface BatchOutcome {
  claimed: number;
  indexed: number;
  retried: number;
  parked: number;
}

const MAX_BACKOFF_MS = 5 * 60_000;
const STATE_EVERY_MS = 10_000;

/** Exponential backoff with jitter: about 1 s, 2 s, 4 s ... up to 5 minutes. */
export const backoffMs = (attempts: number): number =>
  Math.round(Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.max(0, attempts - 1)) * (0.5 + Math.random() / 2));

interface ItemResult {
  status: number;
  error?: { type?: string; reason?: string };
}

/** A failure OpenSearch may get over by itself (overload, restart) rather than one in the data. */
const transientStatus = (status: number): boolean => status === 429 || status >= 500;

function requestFailure(error: unknown): string {
  const meta = (error as { meta?: { statusCode?: number } }).meta;
  return `${(error as Error).name ?? 'Error'}${meta?.statusCode ? ` ${meta.statusCode}` : ''}: ${(error as Error).message}`.slice(
    0,
    500,
  );
}

/**
 * The outbox consumer that mirrors change records into OpenSearch. It claims due rows with SKIP
 * LOCKED leases (so several indexers share the work), reads the records from PostgreSQL, and
 * bulk-indexes them by change id (replays and competing indexers overwrite, never duplicate).
 * Indexed rows are deleted; transient failures (connection, 429, 5xx) retry with backoff and
 * jitter; permanent ones (a mapping error) are parked after `maxAttempts`. While a reindex runs,
 * every document also goes to its new index, so nothing written meanwhile is missing after the
 * swap.
 */
export class OutboxIndexer {
  private running: Promise<void> | undefined;
  private stopping = false;
  private wakeUp: (() => void) | undefined;
  /** A notification arrived while a batch was running: the next wait ends at once. */
  private woken = false;
  private unlisten: (() => Promise<void>) | undefined;
  private stateAt = 0;
  private indexReady = false;
  /** The index of a running reindex given the template's fields already. */
  private reindexReady: string | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly client: Client,
    private readonly options: IndexerOptions,
    private readonly logger: Logger,
  ) {}

  private retryDelay(attempts: number): number {
    return (this.options.retryDelayMs ?? backoffMs)(attempts);
  }

  /** Claims and indexes one batch; returns what happened to its rows. */
  async runOnce(): Promise<BatchOutcome> {
    if (!this.indexReady) {
      await ensureIndex(this.client, this.options.alias);
      this.indexReady = true;
    }
    const rows = await claimBatch(this.sql, this.options.batchSize, this.options.leaseMs ?? 60_000);
    const outcome: BatchOutcome = { claimed: rows.length, indexed: 0, retried: 0, parked: 0 };
    if (rows.length === 0) return outcome;
    const documents = await loadChangeDocuments(
      this.sql,
      rows.map((row) => row.change_id),
    );
    const byId = new Map(documents.map((document) => [document.id, document]));
    // a row whose record is gone has nothing left to index
    const gone = rows.filter((row) => !byId.has(row.change_id));
    const live = rows.filter((row) => byId.has(row.change_id));
    await completeRows(
      this.sql,
      gone.map((row) => row.id),
    );

    const targets = [this.options.alias];
    const reindex = await runningReindex(this.sql, this.options.alias);
    if (reindex) targets.push(reindex.index_name);
    let results: Map<string, ItemResult>;
    try {
      if (reindex) await this.prepareReindexIndex(reindex.index_name);
      results = await this.bulk(
        targets,
        live.map((row) => byId.get(row.change_id)!),
      );
    } catch (error) {
      indexerFailures.inc({ kind: 'request' }, live.length);
      const reason = requestFailure(error);
      this.logger.warn({ rows: live.length, reason }, 'indexing request failed; the batch is retried');
      await retryRows(
        this.sql,
        live.map((row) => ({ id: row.id, delayMs: this.retryDelay(row.attempts), error: reason })),
      );
      outcome.retried = live.length;
      return outcome;
    }
    await this.settle(live, results, outcome);
    return outcome;
  }

  /**
   * The index of a reindex begun by an earlier version may lack fields the template has gained
   * since; its strict mapping would refuse the documents that carry them. Once per index.
   */
  private async prepareReindexIndex(index: string): Promise<void> {
    if (this.reindexReady === index) return;
    try {
      await addTemplateFields(this.client, [index]);
    } catch (error) {
      // gone: the bulk request makes it again, from the template
      if ((error as { meta?: { statusCode?: number } }).meta?.statusCode !== 404) throw error;
    }
    this.reindexReady = index;
  }

  /** One bulk request for all targets; per change id, the worst item result across them. */
  private async bulk(targets: string[], documents: ChangeDocument[]): Promise<Map<string, ItemResult>> {
    const results = new Map<string, ItemResult>();
    if (documents.length === 0) return results;
    const { body } = await this.client.bulk({
      body: targets.flatMap((target) => bulkBody(target, documents)) as never,
    });
    const items = (body as { items: Record<string, ItemResult & { _id: string }>[] }).items;
    for (const item of items) {
      const result = Object.values(item)[0]!;
      const previous = results.get(result._id);
      if (!previous || previous.status < 300) results.set(result._id, { status: result.status, error: result.error });
    }
    return results;
  }

  private async settle(rows: ClaimedRow[], results: Map<string, ItemResult>, outcome: BatchOutcome): Promise<void> {
    const done: string[] = [];
    const retry: { id: string; delayMs: number; error: string }[] = [];
    const park: { id: string; error: string }[] = [];
    for (const row of rows) {
      const result = results.get(row.change_id) ?? {
        status: 500,
        error: { type: 'missing_item', reason: 'no result for this document' },
      };
      if (result.status < 300) {
        done.push(row.id);
        continue;
      }
      const reason = `${result.status} ${result.error?.type ?? 'error'}: ${result.error?.reason ?? ''}`;
      if (!transientStatus(result.status) && row.attempts >= this.options.maxAttempts) {
        park.push({ id: row.id, error: reason });
      } else {
        retry.push({ id: row.id, delayMs: this.retryDelay(row.attempts), error: reason });
      }
      indexerFailures.inc({ kind: transientStatus(result.status) ? 'transient' : 'permanent' });
    }
    await completeRows(this.sql, done);
    await retryRows(this.sql, retry);
    await parkRows(this.sql, park);
    if (park.length > 0)
      this.logger.error(
        { parked: park.length, first: park[0]!.error },
        'outbox rows parked after repeated permanent failures',
      );
    documentsIndexed.inc(done.length);
    outcome.indexed = done.length;
    outcome.retried = retry.length;
    outcome.parked = park.length;
  }

  /** Runs batches until nothing is due (what is waiting for a backoff stays); for tests and reindex. */
  async drain(): Promise<BatchOutcome> {
    const total: BatchOutcome = { claimed: 0, indexed: 0, retried: 0, parked: 0 };
    for (;;) {
      const outcome = await this.runOnce();
      total.claimed += outcome.claimed;
      total.indexed += outcome.indexed;
      total.retried += outcome.retried;
      total.parked += outcome.parked;
      if (outcome.claimed === 0) return total;
    }
  }

  private async refreshState(): Promise<void> {
    if (Date.now() - this.stateAt < STATE_EVERY_MS) return;
    this.stateAt = Date.now();
    const state = await outboxState(this.sql);
    outboxPending.set(state.pending);
    outboxLag.set(state.lagSeconds);
    outboxParked.set(state.parked);
  }

  private wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        this.woken = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeUp = done;
      if (this.woken || this.stopping) done();
    });
  }

  /** Starts the loop: batches while there is work, then waits for a notification or the poll. */
  async start(): Promise<void> {
    if (this.running) return;
    if (this.options.listen) {
      const listener = await this.sql.listen(OUTBOX_CHANNEL, () => this.wake());
      this.unlisten = () => listener.unlisten();
    }
    let failures = 0;
    this.running = (async () => {
      while (!this.stopping) {
        try {
          const outcome = await this.runOnce();
          await this.refreshState();
          failures = 0;
          if (outcome.claimed < this.options.batchSize) await this.sleep(this.options.pollMs);
        } catch (error) {
          failures++;
          this.indexReady = false;
          this.logger.warn({ err: error }, 'indexer batch failed; backing off');
          await this.sleep(backoffMs(failures));
        }
      }
    })();
  }

  /** Finishes the batch in hand and stops. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    await this.running;
    await this.unlisten?.();
  }
}
