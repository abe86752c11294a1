import { expect } from 'chai';
import postgres from 'postgres';
import { connectServer, guardDatabase } from '../../../src/platform/db/database.js';
import { migrate } from '../../../src/platform/db/migrate.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { onRealPostgres } from '../../support/db.js';
import { buildPod, buildSource } from '../../support/factories.js';
import { createPrivateCluster, createStandby, type PrivateCluster } from '../../support/private-cluster.js';

const MAX_LAG_MS = 4000;
const SETTINGS = { poolSize: 4, acquireTimeoutMs: 1000, statementTimeoutMs: 15_000 };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// A primary and its streaming replica, both clusters of the test's own (initdb, pg_basebackup -R);
// the embedded database has no replicas.
(onRealPostgres ? describe : describe.skip)(
  'analyst reads on a streaming replica (a private primary and a pg_basebackup standby; skipped on the embedded database, which has no replicas)',
  function () {
    this.timeout(120_000);
    let primary: PrivateCluster;
    let standby: PrivateCluster;
    let app: TestApp;
    /** A connection to the standby of the test's own, to pause and resume its replay. */
    let standbySql: postgres.Sql;
    let writer: string;
    let analyst: string;
    let sourceId: string;
    let close: () => Promise<void>;
    let written = 0;

    /** Ingests one more pod through the API as `key`; its name, to look for. */
    async function write(key = writer): Promise<string> {
      const name = `pod-${++written}`;
      const reply = await app.request('POST', `/api/v1/sources/${sourceId}/ingest`, {
        key,
        body: { scope_id: name, items: [buildPod({ name })] },
      });
      expect(reply.status, reply.text).to.equal(200);
      return name;
    }

    /** The history as `key` reads it: who served it, and the CIs it names. */
    async function history(key = analyst) {
      const reply = await app.request<{ items: { ci_name: string }[] }>('GET', '/api/v1/changes?limit=1000', { key });
      expect(reply.status, reply.text).to.equal(200);
      return { servedBy: reply.headers.get('x-cinv-served-by'), names: reply.body.items.map((c) => c.ci_name) };
    }

    const replicaHealth = async () =>
      (await app.get<{ checks: { replica: { status: string; lag_seconds: number | null } } }>('/health')).body.checks
        .replica;

    async function until(what: string, done: () => Promise<boolean>, ms = 20_000): Promise<void> {
      for (const started = Date.now(); !(await done()); await sleep(100)) {
        if (Date.now() - started > ms) throw new Error(`timed out waiting until ${what}`);
      }
    }

    /** The replica has replayed everything written so far and the app knows it. */
    const caughtUp = () =>
      until(
        'the replica caught up',
        async () =>
          (await replicaHealth()).status === 'ok' &&
          (await history()).servedBy === 'replica' &&
          (await history()).names.includes(`pod-${written}`),
      );

    before(async () => {
      primary = await createPrivateCluster();
      const raw = connectServer(primary.url, SETTINGS);
      const probe = raw.connectOne();
      await migrate(raw.sql);
      standby = await createStandby(primary);
      standbySql = postgres(standby.url, { max: 1, onnotice: () => {} });
      const replica = guardDatabase(connectServer(standby.url, SETTINGS), SETTINGS);
      app = await startTestApp({ replicaMaxLagMs: MAX_LAG_MS, dbAcquireTimeoutMs: 1000 }, { raw, probe, replica });
      writer = await createKey(raw.sql, 'adm', { name: 'writer' });
      analyst = await createKey(raw.sql, 'ro', { name: 'analyst' });
      sourceId = await buildSource(raw.sql, 'replica');
      close = async () => {
        await app.close();
        await Promise.all([raw.close(), probe.end({ timeout: 1 }), standbySql.end({ timeout: 1 })]);
      };
      await write();
      await caughtUp();
    });

    after(async () => {
      await close?.();
      await standby?.destroy();
      await primary?.destroy();
    });

    it('serves search, statistics, history, CSV and the past from the replica, the inventory of now and every write from the primary', async () => {
      const name = await write();
      await caughtUp();
      const at = new Date().toISOString();
      const since = new Date(Date.now() - 3_600_000).toISOString();
      const analystPaths = [
        '/api/v1/changes',
        `/api/v1/changes?filter=ci_name:eq:${name}`,
        '/api/v1/changes/search?query=pod',
        '/api/v1/changes/stats?group_by=day',
        `/api/v1/changes/stats?group_by=hour&start_date=${since}`,
        `/api/v1/configuration-items?as_of=${at}`,
        `/api/v1/inventory/diff?from=${since}&to=${at}`,
      ];
      for (const path of analystPaths) {
        const reply = await app.get(path, analyst);
        expect(reply.status, `${path}: ${reply.text}`).to.equal(200);
        expect(reply.headers.get('x-cinv-served-by'), path).to.equal('replica');
      }
      const csv = await app.request('GET', '/api/v1/changes', { key: analyst, headers: { accept: 'text/csv' } });
      expect(csv.status).to.equal(200);
      expect(csv.headers.get('x-cinv-served-by')).to.equal('replica');
      expect(csv.text).to.include(name);
      const now = await app.get('/api/v1/configuration-items', analyst);
      expect(now.status).to.equal(200);
      expect(now.headers.get('x-cinv-served-by'), 'the inventory as it is now').to.equal(null);
      const metrics = (await app.get('/metrics', writer)).text;
      expect(metrics).to.match(/^cinv_replica_lag_seconds \d/m);
      expect(metrics).to.match(/^cinv_analyst_reads_total\{served_by="replica"\} [1-9]/m);
    });

    it('reads from the replica, not the primary: what the replica has not replayed yet is not in its answers', async () => {
      await standbySql`select pg_wal_replay_pause()`;
      try {
        const name = await write();
        const read = await history();
        expect(read.servedBy).to.equal('replica');
        expect(read.names, 'a change the paused replica has not replayed').not.to.include(name);
        expect(read.names).to.include(`pod-${written - 1}`);
      } finally {
        await standbySql`select pg_wal_replay_resume()`;
      }
      await caughtUp();
    });

    it('falls back to the primary while the replica lags more than CINV_REPLICA_MAX_LAG, and goes back once it has caught up', async () => {
      await standbySql`select pg_wal_replay_pause()`;
      let name: string;
      try {
        name = await write();
        await until('the replica lags', async () => (await replicaHealth()).status === 'lagging');
        const health = await replicaHealth();
        expect(health.lag_seconds).to.be.greaterThan(MAX_LAG_MS / 1000);
        const read = await history();
        expect(read.servedBy).to.equal('primary');
        expect(read.names).to.include(name);
      } finally {
        await standbySql`select pg_wal_replay_resume()`;
      }
      await caughtUp();
      expect((await history()).names).to.include(name);
    });

    it("reads a principal's own writes at once, whatever the replica has replayed", async () => {
      await standbySql`select pg_wal_replay_pause()`;
      try {
        for (let i = 0; i < 3; i++) {
          const name = await write();
          const own = await history(writer);
          expect(own.servedBy, 'the writer reads back at once').to.equal('primary');
          expect(own.names).to.include(name);
        }
        // another reader is not held to the writer's writes
        expect((await history(analyst)).servedBy).to.equal('replica');
      } finally {
        await standbySql`select pg_wal_replay_resume()`;
      }
      // once the replica has replayed past the write, the writer reads from it again
      await until(
        'the writer reads from the replica again',
        async () => (await history(writer)).servedBy === 'replica',
      );
      expect((await history(writer)).names).to.include(`pod-${written}`);
    });

    it('falls back to the primary while the replica is stopped, and goes back once it runs again', async () => {
      await standby.stop();
      try {
        await until('the replica is seen down', async () => (await replicaHealth()).status === 'unavailable');
        const health = await app.get<{ status: string; checks: { replica: { lag_seconds: number | null } } }>(
          '/health',
        );
        expect(health.status, 'a replica down leaves the instance healthy').to.equal(200);
        expect(health.body.checks.replica.lag_seconds).to.equal(null);
        const name = await write();
        const read = await history();
        expect(read.servedBy).to.equal('primary');
        expect(read.names).to.include(name);
      } finally {
        await standby.start();
      }
      await caughtUp();
    });
  },
);
