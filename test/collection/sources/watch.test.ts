import { expect } from 'chai';
import { Type } from '@sinclair/typebox';
import {
  WatchExpired,
  type CollectContext,
  type WatchBatch,
  type WatchContext,
} from '../../../src/collection/types/plugin.js';
import { registerCollectorType, unregisterCollectorType } from '../../../src/collection/types/registry.js';
import { CollectionWorker, type WorkerOptions } from '../../../src/collection/collectors/runs/worker.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { createKey, useTestApp, type TestApp } from '../../support/app.js';
import { buildPod } from '../../support/factories.js';

/**
 * A source's watch as the test drives it: batches, errors and ends are queued by the test and
 * read by the collector's `watch`, which honours its signal as a real one must.
 */
class Feed {
  readonly opened: { from: Record<string, string> }[] = [];
  readonly signals: AbortSignal[] = [];
  private readonly queue: (WatchBatch | Error | 'end')[] = [];
  private wake: (() => void) | undefined;

  push(item: WatchBatch | Error | 'end'): void {
    this.queue.push(item);
    this.wake?.();
  }

  async *watch(context: WatchContext): AsyncGenerator<WatchBatch> {
    this.opened.push({ from: { ...context.from } });
    this.signals.push(context.signal);
    for (;;) {
      while (this.queue.length === 0) {
        context.signal.throwIfAborted();
        await new Promise<void>((resolve, reject) => {
          this.wake = resolve;
          context.signal.addEventListener('abort', () => reject(context.signal.reason as Error), { once: true });
        });
      }
      const item = this.queue.shift()!;
      if (item === 'end') return;
      if (item instanceof Error) throw item;
      yield item;
    }
  }
}

/** What each source lists, and the version its list ends at. */
const lists = new Map<string, { records: UniversalRecord[]; version: number }>();
const feeds = new Map<string, Feed>();
const listed: string[] = [];

async function* collect(context: CollectContext) {
  listed.push(context.source.name);
  const list = lists.get(context.source.name) ?? { records: [], version: 1 };
  yield { scopeId: 'lab', records: list.records, resume: { key: 'pods', version: String(list.version) } };
}

const feedOf = (name: string) => {
  let feed = feeds.get(name);
  if (!feed) feeds.set(name, (feed = new Feed()));
  return feed;
};

const changed = (name: string, replicas: number) => buildPod({ name, replicas });

describe('hybrid collection: a list, then a watch written as deltas (with a test collector type)', function () {
  this.timeout(60_000);
  const app = useTestApp({ workerLeaseMs: 300 });
  let admin: string;
  const workers: CollectionWorker[] = [];
  const worker = (current: TestApp, options: Partial<WorkerOptions> = {}) => {
    const created = new CollectionWorker(current.context, {
      concurrency: 2,
      leaseMs: 300,
      pollMs: 60_000,
      watchBatchWaitMs: 150,
      watchRetryMs: 20,
      ...options,
    });
    workers.push(created);
    return created;
  };

  before(() => {
    registerCollectorType({
      type: 'test-watch',
      description: 'lists and watches an in-memory world (tests only)',
      configSchema: Type.Object({}),
      capabilities: {
        supports_universal_format: false,
        supports_multi_source: true,
        supports_watch: true,
        collects: true,
      },
      collectables: [],
      endpointSchemes: ['https'],
      collect,
      watch: (context) => feedOf(context.source.name).watch(context),
    });
  });
  after(() => unregisterCollectorType('test-watch'));

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
    lists.clear();
    feeds.clear();
    listed.length = 0;
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });

  const run = async (id: string) => (await app.current.get(`/api/v1/collection-runs/${id}`, admin)).body;
  const ci = async (name: string) => {
    const found = await app.current.get(`/api/v1/configuration-items?status=all&filter=name:eq:${name}`, admin);
    return found.body.items[0] as
      { ci_id: string; status: string; raw_data: { spec: { replicas: number } } } | undefined;
  };

  /** Adds a hybrid source, triggers it and waits until its run lists and starts watching. */
  const watching = async (name: string, records: UniversalRecord[], options: Partial<WorkerOptions> = {}) => {
    lists.set(name, { records, version: 10 });
    const added = await app.current.request('POST', '/api/v1/sources', {
      key: admin,
      body: {
        name,
        collector_type: 'test-watch',
        endpoint: 'https://10.9.0.1',
        config: { collection_mode: 'hybrid' },
        schedule_config: { enabled: false, interval_minutes: 1 },
      },
    });
    expect(added.status, added.text).to.equal(201);
    const triggered = await app.current.request(
      'POST',
      `/api/v1/collectors/${added.body.collector_id}/trigger?source_id=${added.body.id}`,
      { key: admin },
    );
    const running = worker(app.current, options);
    await running.tick();
    await waitFor(async () => (await run(triggered.body.run_id)).watching_since !== null);
    return {
      source: added.body as { id: number; collector_id: number },
      runId: triggered.body.run_id as string,
      running,
    };
  };

  it("writes a watch's changes as merged deltas after the list, and shows the run watching", async () => {
    const { source, runId, running } = await watching('hy-1', [buildPod({ name: 'a' }), buildPod({ name: 'b' })]);
    expect(running.watching).to.equal(1);
    const feed = feedOf('hy-1');
    expect(feed.opened).to.deep.equal([{ from: { pods: '10' } }]);
    const detail = await app.current.get(`/api/v1/sources/${source.id}`, admin);
    expect(detail.body.last_collection, 'the list is recorded on the source before the watch ends').to.be.a('string');

    // thirty modifications of one pod arrive at once: one update is written, with the last value
    for (let i = 1; i <= 30; i++)
      feed.push({
        scopeId: 'lab',
        upserts: [changed('a', i)],
        deletions: [],
        resume: { key: 'pods', version: String(10 + i) },
      });
    feed.push({
      scopeId: 'lab',
      upserts: [buildPod({ name: 'c' })],
      deletions: ['pod/default/b'],
      resume: { key: 'pods', version: '41' },
    });
    // a delta's upserts and its deletions are written in batches of their own: both are waited for
    await waitFor(async () => (await ci('c')) !== undefined && (await ci('b'))?.status === 'archived');
    expect((await ci('b'))!.status).to.equal('archived');
    const a = (await ci('a'))!;
    const history = await app.current.get(`/api/v1/ci-changes/${a.ci_id}`, admin);
    const updates = history.body.items.filter((c: { change_type: string }) => c.change_type === 'UPDATED');
    expect(updates, 'the merged batch writes one update').to.have.length(1);
    expect(updates[0].changes).to.deep.include({ field: 'raw_data.spec.replicas', old_value: 1, new_value: 30 });

    await waitFor(async () => (await run(runId)).counts?.watch_events === 32);
    const current = await run(runId);
    expect(current.status).to.equal('running');
    expect(current.counts).to.deep.include({ lists: 1, created: 3, archived: 1 });
    const metrics = (await app.current.get('/metrics')).text;
    expect(metrics).to.match(
      /cinv_collection_watch_events_total\{collector_type="test-watch"\} (3[2-9]|[4-9]\d|\d{3,})/,
    );
    expect(metrics).to.match(/cinv_collection_watches [1-9]/);
  });

  it('reconnects a dropped watch from where it was, and lists again when its start point expired or a trigger asks', async () => {
    const { source, runId } = await watching('hy-2', [buildPod({ name: 'x' })]);
    const feed = feedOf('hy-2');
    feed.push({ scopeId: 'lab', upserts: [changed('x', 2)], deletions: [], resume: { key: 'pods', version: '11' } });
    await waitFor(async () => (await ci('x'))?.raw_data.spec.replicas === 2);
    feed.push(new Error('connection reset by peer'));
    await waitFor(async () => feed.opened.length === 2);
    expect(feed.opened[1]).to.deep.equal({ from: { pods: '11' } }, 'the reconnect starts after the last written event');

    lists.set('hy-2', { records: [buildPod({ name: 'x' }), buildPod({ name: 'y' })], version: 50 });
    feed.push(new WatchExpired());
    await waitFor(async () => feed.opened.length === 3);
    expect(listed.filter((n) => n === 'hy-2')).to.have.length(2);
    expect(feed.opened[2]).to.deep.equal({ from: { pods: '50' } });
    expect(await ci('y')).to.not.equal(undefined);

    const again = await app.current.request(
      'POST',
      `/api/v1/collectors/${source.collector_id}/trigger?source_id=${source.id}`,
      { key: admin },
    );
    expect(again.body.run_id, 'the watching run is the one that lists again').to.equal(runId);
    await waitFor(async () => feed.opened.length === 4);
    expect(listed.filter((n) => n === 'hy-2')).to.have.length(3);
    expect(feed.signals[2]!.aborted, 'the watch the trigger replaced was stopped').to.equal(true);
    await waitFor(async () => (await run(runId)).counts?.lists === 3);
    expect((await run(runId)).counts.watch_reconnects).to.be.at.least(1);
  });

  it('waits longer before each reconnect of a watch that keeps failing without delivering', async () => {
    await watching('hy-3', []);
    const feed = feedOf('hy-3');
    for (let i = 0; i < 4; i++) feed.push(new Error('refused'));
    const started = Date.now();
    await waitFor(async () => feed.opened.length === 5);
    // waits of 20, 40, 80 and 160 ms between the five attempts
    expect(Date.now() - started).to.be.at.least(280);
  });

  it('ends the run when its interval is over, and a deleted source cancels its watching run', async () => {
    const { runId } = await watching('hy-4', [buildPod({ name: 'm' })]);
    feedOf('hy-4').push({
      scopeId: 'lab',
      upserts: [changed('m', 5)],
      deletions: [],
      resume: { key: 'pods', version: '12' },
    });
    await waitFor(async () => (await run(runId)).counts?.watch_events === 1);
    app.current.clock.now = new Date(app.current.clock.now.getTime() + 61_000);
    await waitFor(async () => (await run(runId)).status !== 'running');
    const ended = await run(runId);
    expect(ended).to.deep.include({ status: 'succeeded', error: null });
    expect(ended.counts).to.deep.include({ lists: 1, watch_events: 1, created: 1, updated: 1 });
    expect(feedOf('hy-4').signals[0]!.aborted).to.equal(true);

    const other = await watching('hy-5', []);
    expect((await app.current.request('DELETE', `/api/v1/sources/${other.source.id}`, { key: admin })).status).to.equal(
      200,
    );
    // the run is cancelled at once; its worker notices at its next lease renewal
    await other.running.idle();
    expect(
      (await app.current.sql<{ status: string }[]>`select status from collection_runs where id = ${other.runId}`)[0]!
        .status,
    ).to.equal('cancelled');
    expect(feedOf('hy-5').signals[0]!.aborted).to.equal(true);
  });

  it('lists only, once a worker watches as many sources as it may; a stopping worker leaves its sources due', async () => {
    const { source, runId, running } = await watching('hy-6', []);
    await running.stop();
    expect((await run(runId)).status).to.equal('cancelled');
    const [due] = await app.current.sql<
      { next_run_at: Date }[]
    >`select next_run_at from sources where id = ${String(source.id)}`;
    expect(due!.next_run_at.getTime(), 'another worker takes the source up at once').to.be.at.most(
      app.current.clock.now.getTime(),
    );

    lists.set('hy-7', { records: [buildPod({ name: 'only-listed' })], version: 3 });
    const added = await app.current.request('POST', '/api/v1/sources', {
      key: admin,
      body: {
        name: 'hy-7',
        collector_type: 'test-watch',
        endpoint: 'https://10.9.0.1',
        config: { collection_mode: 'hybrid' },
      },
    });
    const triggered = await app.current.request(
      'POST',
      `/api/v1/collectors/${added.body.collector_id}/trigger?source_id=${added.body.id}`,
      { key: admin },
    );
    const full = worker(app.current, { watches: 0 });
    await full.tick();
    await full.idle();
    expect(await run(triggered.body.run_id)).to.deep.include({ status: 'succeeded', watching_since: null });
    expect(feedOf('hy-7').opened).to.have.length(0);
    expect(await ci('only-listed')).to.not.equal(undefined);
  });
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
