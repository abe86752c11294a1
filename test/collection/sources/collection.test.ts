import { expect } from 'chai';
import { Type } from '@sinclair/typebox';
import { claimRuns } from '../../../src/collection/collectors/runs/leases.js';
import type { CollectContext } from '../../../src/collection/types/plugin.js';
import { registerCollectorType, unregisterCollectorType } from '../../../src/collection/types/registry.js';
import { CollectionWorker } from '../../../src/collection/collectors/runs/worker.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { createKey, useTestApp, type TestApp } from '../../support/app.js';
import { onRealPostgres } from '../../support/db.js';
import { buildPod } from '../../support/factories.js';

/** What each test source (by name) holds, and how its collection behaves. */
interface World {
  records: UniversalRecord[];
  failAfterFirstBatch?: boolean;
  /** Never finishes until aborted. */
  hang?: boolean;
  /** Fails the way a mistake in a collector's code does, in a part or in the whole collection. */
  bug?: 'part' | 'whole';
  /** Fails the way an unreachable endpoint does. */
  refused?: boolean;
}
const worlds = new Map<string, World>();
const collected: { source: string; at: number; credentials: unknown }[] = [];
let clockOf: () => Date = () => new Date();

async function* collect(context: CollectContext) {
  const world = worlds.get(context.source.name) ?? { records: [] };
  collected.push({ source: context.source.name, at: clockOf().getTime(), credentials: context.credentials });
  if (world.hang) {
    await new Promise((_, reject) =>
      context.signal.addEventListener('abort', () => reject(context.signal.reason as Error)),
    );
  }
  if (world.refused) throw Object.assign(new Error('connect ECONNREFUSED 10.9.0.1:443'), { code: 'ECONNREFUSED' });
  if (world.bug === 'part') {
    try {
      (undefined as unknown as { items: unknown[] }).items.length;
    } catch (error) {
      context.component('pods', error);
    }
    context.component('nodes');
  }
  // a token in the failure's text must be struck out of the log as it is of last_error
  if (world.bug === 'whole')
    throw new TypeError(
      `Cannot read properties of undefined (reading 'length') near ${JSON.stringify(context.credentials)}`,
    );
  const half = Math.ceil(world.records.length / 2);
  yield { scopeId: 'lab', records: world.records.slice(0, half) };
  if (world.failAfterFirstBatch) throw new Error('the API server went away');
  yield { scopeId: 'lab', records: world.records.slice(half) };
}

describe('scheduled and triggered collection (with a test collector type)', function () {
  this.timeout(60_000);
  const app = useTestApp({ workerLeaseMs: 300 });
  let admin: string;
  const workers: CollectionWorker[] = [];
  const worker = (current: TestApp) => {
    const created = new CollectionWorker(current.context, { concurrency: 4, leaseMs: 300, pollMs: 60_000 });
    workers.push(created);
    return created;
  };

  before(() => {
    registerCollectorType({
      type: 'test-collect',
      description: 'collects from an in-memory world (tests only)',
      configSchema: Type.Object({}),
      capabilities: {
        supports_universal_format: false,
        supports_multi_source: true,
        supports_watch: false,
        collects: true,
      },
      collectables: [],
      endpointSchemes: ['https'],
      collect,
    });
  });
  after(() => unregisterCollectorType('test-collect'));

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
    worlds.clear();
    collected.length = 0;
    clockOf = () => app.current.clock.now;
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });

  const addSource = async (name: string, schedule = { enabled: false, interval_minutes: 1 }) => {
    const reply = await app.current.request('POST', '/api/v1/sources', {
      key: admin,
      body: { name, collector_type: 'test-collect', endpoint: 'https://10.9.0.1', schedule_config: schedule },
    });
    expect(reply.status, reply.text).to.equal(201);
    return reply.body as { id: number; collector_id: number };
  };
  const trigger = (collectorId: number, query = '') =>
    app.current.request('POST', `/api/v1/collectors/${collectorId}/trigger${query}`, { key: admin });

  it('runs a triggered collection into the inventory and reports it on the run, the source and its health', async () => {
    const source = await addSource('lab-1');
    worlds.set('lab-1', { records: [buildPod({ name: 'p1' }), buildPod({ name: 'p2' }), buildPod({ name: 'p3' })] });
    await app.current.request('PUT', `/api/v1/sources/${source.id}/credentials`, {
      key: admin,
      body: { type: 'token', token: 'for-the-collector' },
    });
    const triggered = await trigger(source.collector_id);
    expect(triggered.status, triggered.text).to.equal(202);
    expect(triggered.body.status).to.equal('queued');
    expect(triggered.body.sources).to.deep.equal([
      { source_id: source.id, name: 'lab-1', run_id: triggered.body.run_id },
    ]);
    expect((await app.current.get(`/api/v1/collection-runs/${triggered.body.run_id}`, admin)).body.status).to.equal(
      'queued',
    );

    const running = worker(app.current);
    await running.tick();
    await running.idle();
    const run = await app.current.get(`/api/v1/collection-runs/${triggered.body.run_id}`, admin);
    expect(run.body).to.deep.include({
      status: 'succeeded',
      trigger: 'manual',
      source_name: 'lab-1',
      error: null,
      attempts: 1,
    });
    expect(run.body.counts).to.deep.include({ batches: 2, received: 3, created: 3 });
    expect(collected[0]!.credentials).to.deep.equal({ type: 'token', token: 'for-the-collector' });
    const cis = await app.current.get('/api/v1/configuration-items', admin);
    expect(cis.body.total).to.equal(3);
    const detail = await app.current.get(`/api/v1/sources/${source.id}`, admin);
    expect(detail.body.last_collection).to.be.a('string');
    expect(detail.body.health_status).to.deep.include({ status: 'healthy' });
    const history = await app.current.get(`/api/v1/collectors/${source.collector_id}/runs`, admin);
    expect(history.body.items.map((r: { id: string }) => r.id)).to.deep.equal([triggered.body.run_id]);
    const logs = app.current.logs.join('\n');
    expect(logs).to.not.include('for-the-collector');
    const metrics = (await app.current.get('/metrics')).text;
    expect(metrics).to.match(/cinv_collection_runs_total\{collector_type="test-collect",outcome="succeeded"\} [1-9]/);
    expect(metrics).to.match(/cinv_records_collected_total\{collector_type="test-collect"\} [3-9]/);
    expect(metrics).to.include('cinv_collection_run_duration_seconds_bucket');
    expect(metrics).to.include('cinv_collection_sources_due');
  });

  it('counts nothing as gone when a collection fails midway, records the error and backs off', async () => {
    const source = await addSource('lab-2');
    worlds.set('lab-2', { records: [buildPod({ name: 'a' }), buildPod({ name: 'b' })] });
    const running = worker(app.current);
    await trigger(source.collector_id);
    await running.tick();
    await running.idle();

    const a = buildPod({ name: 'a' });
    worlds.set('lab-2', {
      records: [{ ...a, raw_data: { ...a.raw_data, seen: 'again' } }, buildPod({ name: 'c' })],
      failAfterFirstBatch: true,
    });
    const failed = await trigger(source.collector_id);
    await running.tick();
    await running.idle();
    const run = await app.current.get(`/api/v1/collection-runs/${failed.body.run_id}`, admin);
    expect(run.body).to.deep.include({ status: 'failed', error: 'the API server went away' });
    const all = await app.current.get('/api/v1/configuration-items?status=all', admin);
    // the batch it reconciled before failing stays; nothing it did not see is counted as gone, and
    // c, in the batch it never delivered, was not written
    expect(
      all.body.items.map((ci: { name: string; status: string }) => `${ci.name}:${ci.status}`).sort(),
    ).to.deep.equal(['a:active', 'b:active']);
    const detail = await app.current.get(`/api/v1/sources/${source.id}`, admin);
    expect(detail.body.last_error).to.equal('the API server went away');
    expect(detail.body.health_status).to.deep.include({ status: 'unhealthy' });
    expect(detail.body.health_status.details.consecutive_errors).to.equal('1');
    const [row] = await app.current.sql<
      { next_run_at: Date }[]
    >`select next_run_at from sources where id = ${String(source.id)}`;
    expect(row!.next_run_at.getTime()).to.equal(app.current.clock.now.getTime() + 60_000);
    const health = await app.current.get(`/api/v1/collectors/${source.collector_id}/health`, admin);
    expect(health.body.status).to.equal('degraded');
  });

  it('shows a person what failed: a collection failure in its own words, a mistake in the code as a pointer to the log', async () => {
    const running = worker(app.current);
    const collectNow = async (name: string, world: World) => {
      const source = await addSource(name);
      await app.current.request('PUT', `/api/v1/sources/${source.id}/credentials`, {
        key: admin,
        body: { type: 'token', token: 'secret-token-of-the-source' },
      });
      worlds.set(name, world);
      const triggered = await trigger(source.collector_id, `?source_id=${source.id}`);
      await running.tick();
      await running.idle();
      const run = (await app.current.get(`/api/v1/collection-runs/${triggered.body.run_id}`, admin)).body;
      return { run, detail: (await app.current.get(`/api/v1/sources/${source.id}`, admin)).body };
    };
    const sentence = /^The collector failed unexpectedly \(internal error ([0-9a-f-]{36})\); see the server log$/;

    const crashed = await collectNow('lab-bug', { records: [buildPod({ name: 'x' })], bug: 'whole' });
    expect(crashed.run.status).to.equal('failed');
    expect(crashed.detail.last_error).to.match(sentence);
    expect(crashed.run.error).to.equal(crashed.detail.last_error);
    expect(crashed.detail.health_status.details.message).to.equal(crashed.detail.last_error);
    const id = sentence.exec(crashed.detail.last_error)![1];
    const logged = app.current.logs.map((line) => JSON.parse(line)).find((entry) => entry.errorId === id);
    expect(logged, 'the log line with the error id').to.exist;
    expect(logged).to.deep.include({ level: 50, source: 'lab-bug' });
    expect(logged.failure.type).to.equal('TypeError');
    expect(logged.failure.message).to.include("Cannot read properties of undefined (reading 'length')");
    expect(logged.failure.stack).to.include('collection.test.ts');
    expect(app.current.logs.join('\n')).to.not.include('secret-token-of-the-source');

    const part = await collectNow('lab-part', { records: [buildPod({ name: 'y' })], bug: 'part' });
    expect(part.run.status, JSON.stringify(part.run)).to.equal('partial');
    expect(part.detail.health_status.components.pods.message).to.match(sentence);
    expect(part.detail.health_status.components.nodes).to.deep.equal({ status: 'healthy' });
    expect(part.detail.last_error).to.match(
      /^pods: The collector failed unexpectedly \(internal error [0-9a-f-]{36}\); see the server log$/,
    );

    const unreachable = await collectNow('lab-down', { records: [], refused: true });
    expect(unreachable.detail.last_error).to.equal('connect ECONNREFUSED 10.9.0.1:443');
  });

  it('refuses to trigger a push-only type, and narrows a trigger to one source', async () => {
    const pushed = await app.current.request('POST', '/api/v1/sources', {
      key: admin,
      body: { name: 'agents', collector_type: 'universal' },
    });
    const refused = await trigger(pushed.body.collector_id);
    expect(refused.status).to.equal(409);
    expect(refused.body.error.message).to.include('/ingest');

    const a = await addSource('lab-a');
    await addSource('lab-b');
    const one = await trigger(a.collector_id, `?source_id=${a.id}`);
    expect(one.body.sources.map((s: { name: string }) => s.name)).to.deep.equal(['lab-a']);
    const both = await trigger(a.collector_id);
    expect(both.body.sources.map((s: { name: string }) => s.name)).to.deep.equal(['lab-a', 'lab-b']);
    // lab-a's run was queued already: the trigger keeps it
    expect(both.body.sources[0].run_id).to.equal(one.body.run_id);
    expect((await trigger(a.collector_id, '?source_id=999999')).status).to.equal(404);
  });

  it('cancels a running collection when its source is deleted, keeping what was collected before', async () => {
    const source = await addSource('lab-3');
    worlds.set('lab-3', { records: [buildPod({ name: 'kept' })] });
    const running = worker(app.current);
    await trigger(source.collector_id);
    await running.tick();
    await running.idle();
    worlds.set('lab-3', { records: [], hang: true });
    const hanging = await trigger(source.collector_id);
    await running.tick();
    await waitFor(
      async () =>
        (await app.current.get(`/api/v1/collection-runs/${hanging.body.run_id}`, admin)).body.status === 'running',
    );
    expect((await app.current.request('DELETE', `/api/v1/sources/${source.id}`, { key: admin })).status).to.equal(200);
    await running.idle();
    const run = await app.current.get(`/api/v1/collection-runs/${hanging.body.run_id}`, admin);
    expect(run.body.status).to.equal('cancelled');
    expect((await app.current.get('/api/v1/configuration-items', admin)).body.total).to.equal(1);
  });

  (onRealPostgres ? describe : describe.skip)(
    'across workers (skipped on the embedded database: leases and SKIP LOCKED need a PostgreSQL server, PGlite has one session)',
    () => {
      it("two workers collect ten sources once per interval, never one twice at once, and take over a dead worker's runs", async () => {
        const current = app.current;
        for (let i = 0; i < 10; i++) await addSource(`fleet-${i}`, { enabled: true, interval_minutes: 1 });
        const [a, b] = [worker(current), worker(current)];
        for (let minute = 0; minute < 3; minute++) {
          await Promise.all([a.tick(), b.tick()]);
          await Promise.all([a.idle(), b.idle()]);
          // a second round in the same minute finds nothing due
          await Promise.all([a.tick(), b.tick()]);
          await Promise.all([a.idle(), b.idle()]);
          current.clock.now = new Date(current.clock.now.getTime() + 60_000);
        }
        const perSource = new Map<string, number>();
        for (const c of collected) perSource.set(c.source, (perSource.get(c.source) ?? 0) + 1);
        expect([...perSource.values()]).to.deep.equal(Array(10).fill(3));
        const overlapping = await current.sql<{ n: number }[]>`
        select count(*)::int as n from collection_runs x join collection_runs y
          on x.source_id = y.source_id and x.id < y.id and x.started_at < y.finished_at and y.started_at < x.finished_at`;
        expect(overlapping[0]!.n).to.equal(0);

        // a worker that claims runs and dies: after its lease expires, another takes them over
        collected.length = 0;
        const claimed = await claimRuns(current.sql, 'dead-worker', 10, current.clock.now, 300);
        const queued = await current.sql<
          { n: number }[]
        >`select count(*)::int as n from collection_runs where status = 'queued'`;
        expect(claimed.length + queued[0]!.n).to.be.at.most(10);
        await current.sql`
        insert into collection_runs (id, tenant_id, collector_id, source_id, status, trigger, queued_at)
        select gen_random_uuid(), tenant_id, collector_id, id, 'queued', 'manual', ${current.clock.now} from sources s
        where name like 'fleet-%' and not exists (select 1 from collection_runs r where r.source_id = s.id and r.status in ('queued', 'running'))`;
        const taken = await claimRuns(current.sql, 'dead-worker', 10, current.clock.now, 300);
        expect(claimed.length + taken.length).to.equal(10);
        await b.tick();
        await b.idle();
        expect(collected).to.have.length(0);
        current.clock.now = new Date(current.clock.now.getTime() + 1000);
        await b.tick();
        await b.idle();
        await b.tick();
        await b.idle();
        await b.tick();
        await b.idle();
        const takenOver = await current.sql<{ attempts: number; status: string }[]>`
        select attempts, status from collection_runs where trigger = 'manual' or started_at >= ${new Date(current.clock.now.getTime() - 1000)}`;
        expect(new Set(collected.map((c) => c.source)).size).to.equal(10);
        expect(takenOver.every((r) => r.status === 'succeeded')).to.equal(true);
        expect(takenOver.some((r) => r.attempts === 2)).to.equal(true);
      });
    },
  );
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
