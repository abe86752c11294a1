import { expect } from 'chai';
import { createKey, startTestApp, type TestApp } from '../support/app.js';
import { connectServer } from '../../src/db/database.js';
import { onRealPostgres, REAL_DATABASE_URL, resetDatabase, testDatabase } from '../support/db.js';
import { buildPod, buildSource, ingest } from '../support/factories.js';

interface Timed {
  status: number;
  body: any;
  headers: Headers;
  ms: number;
}

async function timedGet(app: TestApp, path: string, key?: string): Promise<Timed> {
  const started = performance.now();
  const reply = await app.get(path, key);
  return { status: reply.status, body: reply.body, headers: reply.headers, ms: performance.now() - started };
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

const waitUntil = async (condition: () => boolean, ms = 5000) => {
  for (let waited = 0; !condition() && waited < ms; waited += 10) await new Promise((resolve) => setTimeout(resolve, 10));
};

// Slow requests are made by a table lock, which needs a second session: PGlite has only one.
(onRealPostgres ? describe : describe.skip)('overload (needs a PostgreSQL server: requests are held by a table lock)', function () {
  this.timeout(60_000);
  let key: string;

  beforeEach(async () => {
    const { sql } = await testDatabase();
    await resetDatabase(sql);
    await ingest(sql, [buildPod({ name: 'a' }), buildPod({ name: 'b' })]);
  });

  it('answers requests beyond CINV_MAX_IN_FLIGHT with an immediate 503 while the admitted ones complete and /health stays 200', async () => {
    const app = await startTestApp({ maxInFlight: 4, dbAcquireTimeoutMs: 10_000 });
    try {
      key = await createKey(app.sql, 'adm');
      const lock = await blockCiTable();
      const admitted = Array.from({ length: 4 }, () => timedGet(app, '/api/v1/configuration-items', key));
      await waitUntil(() => app.context.gate.busy >= 4);
      const excess = await Promise.all(Array.from({ length: 12 }, () => timedGet(app, '/api/v1/configuration-items', key)));
      for (const reply of excess) {
        expect(reply.status).to.equal(503);
        expect(reply.body.error).to.include({ code: 'HTTP_503' });
        expect(reply.body.error.details.reason).to.equal('overloaded');
        expect(reply.headers.get('retry-after')).to.equal('1');
        expect(reply.ms, 'refused at once').to.be.below(200);
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
      await app.close();
    }
  });

  it('answers 503 database_busy to requests that wait longer than the acquire timeout for a connection', async () => {
    const app = await startTestApp({ maxInFlight: 100, dbAcquireTimeoutMs: 400 });
    let lock: Awaited<ReturnType<typeof blockCiTable>> | undefined;
    try {
      key = await createKey(app.sql, 'adm');
      const capacity = app.context.gate.capacity;
      lock = await blockCiTable();
      const holding = Array.from({ length: capacity }, () => timedGet(app, '/api/v1/configuration-items/00000000-0000-4000-8000-000000000000', key));
      // every connection is stuck behind the lock (not merely busy: background writes such as the
      // audit log's take a connection for a moment too)
      for (let waited = 0; (await lock.blocked()) < capacity && waited < 5000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
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
      const ingesting = app.request('POST', `/api/v1/sources/${sourceId}/ingest`, { key, body: { items: [buildPod({ name: 'patient' })] } });
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
});
