import { expect } from 'chai';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { connectServer } from '../../../src/platform/db/database.js';
import { onRealPostgres, REAL_DATABASE_URL, resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, buildSource, ingest } from '../../support/factories.js';
import type { DatabaseGate } from '../../../src/platform/db/gate.js';

interface Timed {
  status: number;
  body: any;
  text: string;
  headers: Headers;
  ms: number;
}

async function timedGet(
  app: TestApp,
  path: string,
  key?: string,
  headers: Record<string, string> = {},
): Promise<Timed> {
  const started = performance.now();
  const reply = await app.request('GET', path, { key, headers });
  return {
    status: reply.status,
    body: reply.body,
    text: reply.text,
    headers: reply.headers,
    ms: performance.now() - started,
  };
}

/**
 * Holds an exclusive lock on the CI table from a connection outside the app's pool, so that
 * every list request blocks in the database until `release` (the stand-in for slow queries).
 */
async function blockCiTable(): Promise<{ release(): Promise<void>; blocked(): Promise<number> }> {
  const holder = (await testDatabase()).connectOne();
  await holder`begin`;
  await holder`lock table configuration_items in access exclusive mode`;
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      await holder`rollback`;
      await holder.end();
    },
    /** Statements waiting for the lock now. */
    async blocked() {
      const [row] = await holder<{ n: number }[]>`
        select count(*)::int as n from pg_locks where relation = 'configuration_items'::regclass and not granted`;
      return row!.n;
    },
  };
}

/**
 * "At once": far below the 10 s acquire timeout a queued request would wait, and loose enough for a
 * machine busy with other work.
 */
const AT_ONCE_MS = 1000;

const waitUntil = async (condition: () => boolean, ms = 5000) => {
  for (let waited = 0; !condition() && waited < ms; waited += 10)
    await new Promise((resolve) => setTimeout(resolve, 10));
};

// Slow requests are made by a table lock, which needs a second session: PGlite has only one.
(onRealPostgres ? describe : describe.skip)(
  'overload (skipped on the embedded database: requests are held by a table lock, which needs a PostgreSQL server)',
  function () {
    this.timeout(60_000);
    let key: string;

    beforeEach(async () => {
      const { sql } = await testDatabase();
      await resetDatabase(sql);
      await ingest(sql, [buildPod({ name: 'a' }), buildPod({ name: 'b' })]);
    });

    it('answers requests beyond CINV_MAX_IN_FLIGHT with an immediate 503 while the admitted ones complete and /health stays 200', async () => {
      const app = await startTestApp({ maxInFlight: 4, dbAcquireTimeoutMs: 10_000 });
      let lock: Awaited<ReturnType<typeof blockCiTable>> | undefined;
      try {
        key = await createKey(app.sql, 'adm');
        lock = await blockCiTable();
        const admitted = Array.from({ length: 4 }, () => timedGet(app, '/api/v1/configuration-items', key));
        await waitUntil(() => app.context.gate.busy >= 4);
        const excess = await Promise.all(
          Array.from({ length: 12 }, () => timedGet(app, '/api/v1/configuration-items', key)),
        );
        for (const reply of excess) {
          expect(reply.status).to.equal(503);
          expect(reply.body.error).to.include({ code: 'HTTP_503' });
          expect(reply.body.error.details.reason).to.equal('overloaded');
          expect(reply.headers.get('retry-after')).to.equal('1');
          expect(reply.ms, 'refused at once').to.be.below(AT_ONCE_MS);
        }
        const health = await timedGet(app, '/health');
        expect(health.status).to.equal(200);
        expect(health.body.checks.database.status).to.equal('ok');
        const ready = await timedGet(app, '/health/ready');
        expect(ready.status).to.equal(503);
        expect(ready.body.status).to.equal('saturated');
        expect(ready.body.checks.load).to.include({ in_flight: 4, max_in_flight: 4 });
        expect((await timedGet(app, '/metrics')).status).to.equal(200);

        await lock.release();
        for (const reply of await Promise.all(admitted)) {
          expect(reply.status).to.equal(200);
          expect(reply.body.total).to.equal(2);
        }
        await waitUntil(() => app.context.gate.busy === 0);
        expect((await timedGet(app, '/health/ready')).body.status).to.equal('ready');
        expect((await timedGet(app, '/api/v1/configuration-items', key)).status).to.equal(200);
      } finally {
        // a failed expectation must not leave the admitted requests (and the app's close) waiting
        await lock?.release();
        await app.close();
      }
    });

    it('answers 503 database_busy to requests that wait longer than the acquire timeout for a connection', async () => {
      // the acquire timeout alone: requests already waiting must not make the next ones shed at once
      const app = await startTestApp({ maxInFlight: 100, dbAcquireTimeoutMs: 400, shedDatabaseWaitMs: 0 });
      let lock: Awaited<ReturnType<typeof blockCiTable>> | undefined;
      try {
        key = await createKey(app.sql, 'adm');
        const capacity = app.context.gate.capacity;
        lock = await blockCiTable();
        const holding = Array.from({ length: capacity }, () =>
          timedGet(app, '/api/v1/configuration-items/00000000-0000-4000-8000-000000000000', key),
        );
        // every connection is stuck behind the lock (not merely busy: background writes such as the
        // audit log's take a connection for a moment too)
        for (let waited = 0; (await lock.blocked()) < capacity && waited < 5000; waited += 20)
          await new Promise((resolve) => setTimeout(resolve, 20));
        await waitUntil(() => app.context.gate.busy >= capacity);
        const waiting = await Promise.all(Array.from({ length: 3 }, () => timedGet(app, '/api/v1/changes', key)));
        for (const reply of waiting) {
          expect(reply.status).to.equal(503);
          expect(reply.body.error.details.reason).to.equal('database_busy');
          expect(reply.ms).to.be.within(350, 1500);
        }
        // the liveness check has a connection of its own and still answers
        expect((await timedGet(app, '/health')).status).to.equal(200);
        await lock.release();
        for (const reply of await Promise.all(holding)) expect(reply.status).to.equal(404);
        expect((await timedGet(app, '/api/v1/changes', key)).status).to.equal(200);
      } finally {
        // a failed expectation must not leave the table locked for the suites after this one
        await lock?.release();
        await app.close();
      }
    });

    it('ends request statements at CINV_STATEMENT_TIMEOUT with a 503, while ingests get the longer bulk timeout', async () => {
      const raw = connectServer(REAL_DATABASE_URL!, { poolSize: 4, acquireTimeoutMs: 5000, statementTimeoutMs: 300 });
      const probe = raw.connectOne();
      const app = await startTestApp({ statementTimeoutMs: 300, bulkStatementTimeoutMs: 10_000 }, { raw, probe });
      try {
        key = await createKey(app.sql, 'adm');
        const sourceId = await buildSource(app.sql, 'slow');
        let lock = await blockCiTable();
        const started = performance.now();
        const list = await app.get('/api/v1/configuration-items', key);
        expect(list.status).to.equal(503);
        expect(list.body.error.details.reason).to.equal('statement_timeout');
        expect(performance.now() - started).to.be.below(2000);
        await lock.release();

        lock = await blockCiTable();
        const ingesting = app.request('POST', `/api/v1/sources/${sourceId}/ingest`, {
          key,
          body: { items: [buildPod({ name: 'patient' })] },
        });
        await new Promise((resolve) => setTimeout(resolve, 1000));
        await lock.release();
        const ingested = await ingesting;
        expect(ingested.status, ingested.text).to.equal(200);
        expect(ingested.body.created).to.equal(1);
      } finally {
        await app.close();
        await Promise.all([raw.close(), probe.end({ timeout: 1 })]);
      }
    });
  },
);

/** Takes every connection of the app's pool through its gate, as busy requests would. */
async function holdGate(gate: DatabaseGate): Promise<{ release(): void }> {
  for (let i = 0; i < gate.capacity; i++) await gate.acquire();
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      for (let i = 0; i < gate.capacity; i++) gate.release();
    },
  };
}

/**
 * Keeps the event loop busy in turns of `turnMs`, yielding to I/O between turns, as CPU-bound work
 * such as formatting many exports at once does: every timer fires some `turnMs` late.
 */
function hogEventLoop(turnMs: number): { stop(): void } {
  let running = true;
  const turn = () => {
    if (!running) return;
    const until = performance.now() + turnMs;
    while (performance.now() < until) {
      // busy on purpose
    }
    setImmediate(turn);
  };
  setImmediate(turn);
  return {
    stop() {
      running = false;
    },
  };
}

async function eventually(condition: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  for (const until = performance.now() + ms; performance.now() < until;) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`not within ${ms} ms: ${what}`);
}

/** The shed counter of one reason, as /metrics shows it. */
async function shedCount(app: TestApp, reason: string): Promise<number> {
  const metrics = (await app.get('/metrics')).text;
  const match = new RegExp(`^cinv_http_requests_shed_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(metrics);
  return match ? Number(match[1]) : NaN;
}

function expectShed(reply: Timed, reason: string, retryAfter: string): void {
  expect(reply.status, JSON.stringify(reply.body)).to.equal(503);
  expect(reply.body.error).to.include({ code: 'HTTP_503' });
  expect(reply.body.error.id).to.be.a('string');
  expect(reply.body.error.details.reason).to.equal(reason);
  expect(reply.headers.get('retry-after')).to.equal(retryAfter);
}

const CSV = { accept: 'text/csv' };

// Saturation is made by the test itself (connections taken, the event loop kept busy), so these
// run on both databases.
describe('load shedding: bulk limits and saturation', function () {
  this.timeout(30_000);
  let app: TestApp | undefined;
  let key: string;

  beforeEach(async () => {
    const { sql } = await testDatabase();
    await resetDatabase(sql);
    await ingest(sql, [buildPod({ name: 'a' }), buildPod({ name: 'b' })]);
    await ingest(sql, [buildPod({ name: 'a', replicas: 2 }), buildPod({ name: 'b', replicas: 3 })]);
  });

  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('refuses a CSV export beyond CINV_MAX_EXPORTS at once with 503 exports_busy, while the admitted ones complete', async () => {
    app = await startTestApp({ maxExports: 2, dbAcquireTimeoutMs: 10_000, shedDatabaseWaitMs: 0 });
    key = await createKey(app.sql, 'adm');
    const shedBefore = await shedCount(app, 'exports');
    // the two admitted exports wait for a connection, so both are still streaming when the third comes
    const held = await holdGate(app.context.gate);
    try {
      const admitted = [0, 1].map(() => timedGet(app!, '/api/v1/changes', key, CSV));
      await waitUntil(() => app!.context.gate.queue.waiting >= 2);

      const third = await timedGet(app, '/api/v1/changes?filter=ci_type:eq:k8s.pod', key, CSV);
      expectShed(third, 'exports_busy', '5');
      expect(third.body.error).to.include({ path: '/api/v1/changes', method: 'GET' });
      expect(third.ms, 'refused at once').to.be.below(AT_ONCE_MS);
      // the audit log's export shares the limit
      expectShed(await timedGet(app, '/api/v1/audit-events', key, CSV), 'exports_busy', '5');

      held.release();
      for (const reply of await Promise.all(admitted)) {
        expect(reply.status).to.equal(200);
        expect(reply.headers.get('content-type')).to.match(/^text\/csv/);
        expect(reply.text.split('\n')[0]).to.match(/^change_id,/);
        expect(reply.text.split('\n').length).to.be.above(2);
      }
    } finally {
      held.release();
    }
    expect(await shedCount(app, 'exports')).to.equal(shedBefore + 2);
    // the slots are given back: exports, and pages of the same route (never an export), are served
    await waitUntil(() => app!.context.gate.busy === 0);
    expect((await timedGet(app, '/api/v1/changes', key, CSV)).status).to.equal(200);
    expect((await timedGet(app, '/api/v1/changes', key)).status).to.equal(200);
  });

  it('sheds every request at once while callers have waited beyond CINV_SHED_DB_WAIT for a connection, serves /health, and admits again once the wait clears', async () => {
    app = await startTestApp({ shedDatabaseWaitMs: 100, dbAcquireTimeoutMs: 10_000 });
    key = await createKey(app.sql, 'adm');
    const gate = app.context.gate;
    const held = await holdGate(gate);
    let waiting: Promise<Timed> | undefined;
    try {
      waiting = timedGet(app, '/api/v1/configuration-items', key);
      await waitUntil(() => gate.queue.oldestWaitMs > 100);

      const shed = await Promise.all(
        Array.from({ length: 3 }, () => timedGet(app!, '/api/v1/configuration-items', key)),
      );
      for (const reply of shed) {
        expectShed(reply, 'overloaded', '1');
        expect(reply.ms, 'refused at once').to.be.below(AT_ONCE_MS);
      }
      expect((await timedGet(app, '/health', key)).status).to.equal(200);
      const ready = await timedGet(app, '/health/ready', key);
      expect(ready.status).to.equal(503);
      expect(ready.body.status).to.equal('saturated');
      expect((await timedGet(app, '/metrics', key)).status).to.equal(200);
      expect(await shedCount(app, 'database_wait')).to.be.at.least(3);
    } finally {
      held.release();
    }
    expect((await waiting).status, 'the request that was already waiting is served').to.equal(200);
    await waitUntil(() => gate.queue.waiting === 0);
    expect((await timedGet(app, '/api/v1/configuration-items', key)).status).to.equal(200);
    expect((await timedGet(app, '/health/ready', key)).body.status).to.equal('ready');
  });

  it('sheds requests at once while the event loop lags beyond CINV_SHED_EVENT_LOOP_DELAY with work in flight, and admits again once it catches up', async () => {
    app = await startTestApp({ shedEventLoopDelayMs: 50, shedDatabaseWaitMs: 0, dbAcquireTimeoutMs: 10_000 });
    key = await createKey(app.sql, 'adm');
    const gate = app.context.gate;
    const shedBefore = await shedCount(app, 'event_loop_delay');
    const hog = hogEventLoop(100);
    let held: { release(): void } | undefined;
    let waiting: Promise<Timed> | undefined;
    try {
      await eventually(
        async () => (await app!.get('/health/ready')).body.status === 'saturated',
        'readiness reports the lagging loop',
      );
      // with nothing else in flight, refusing a request would relieve nothing: it is served (here
      // up to its missing credentials)
      expect((await timedGet(app, '/api/v1/configuration-items')).status).to.equal(401);

      // work in flight: a request waiting for a connection the test holds
      held = await holdGate(gate);
      waiting = timedGet(app, '/api/v1/configuration-items', key);
      await waitUntil(() => gate.queue.waiting >= 1);
      const refused = await timedGet(app, '/api/v1/configuration-items', key);
      expectShed(refused, 'overloaded', '1');
      expect(refused.body.error.message).to.match(/event loop/);
      expect((await timedGet(app, '/health', key)).status, '/health is always served').to.equal(200);
      expect((await timedGet(app, '/metrics', key)).status).to.equal(200);
      expect(await shedCount(app, 'event_loop_delay')).to.be.at.least(shedBefore + 1);
    } finally {
      hog.stop();
      held?.release();
    }
    expect((await waiting!).status, 'the request in flight is served').to.equal(200);
    await eventually(async () => (await app!.get('/health/ready')).body.status === 'ready', 'the loop catches up');
    expect((await timedGet(app, '/api/v1/configuration-items', key)).status).to.equal(200);
  });
});
