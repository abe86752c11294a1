import { expect } from 'chai';
import { connectServer } from '../../../src/platform/db/database.js';
import { migrate } from '../../../src/platform/db/migrate.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { onRealPostgres } from '../../support/db.js';
import { buildPod, buildSource } from '../../support/factories.js';
import { createPrivateCluster, type PrivateCluster } from '../../support/private-cluster.js';

const ACQUIRE_TIMEOUT_MS = 1000;

/** Sends a request and measures how long the answer took. */
async function timed(app: TestApp, method: string, path: string, key: string, body?: unknown) {
  const started = performance.now();
  const reply = await app.request(method, path, { key, body });
  return { ...reply, ms: performance.now() - started };
}

// The outage is a PostgreSQL server of the test's own, stopped and started again; the embedded
// database lives inside the process and cannot go away on its own.
(onRealPostgres ? describe : describe.skip)(
  'database outage (a private PostgreSQL cluster the test stops and starts; skipped on the embedded database, which cannot go away)',
  function () {
    this.timeout(120_000);
    let cluster: PrivateCluster;
    let app: TestApp;
    let key: string;
    let sourceId: string;
    let close: () => Promise<void>;

    before(async () => {
      cluster = await createPrivateCluster();
      const raw = connectServer(cluster.url, {
        poolSize: 4,
        acquireTimeoutMs: ACQUIRE_TIMEOUT_MS,
        statementTimeoutMs: 15_000,
      });
      const probe = raw.connectOne();
      await migrate(raw.sql);
      app = await startTestApp({ dbAcquireTimeoutMs: ACQUIRE_TIMEOUT_MS }, { raw, probe });
      key = await createKey(raw.sql, 'adm');
      sourceId = await buildSource(raw.sql, 'outage');
      close = async () => {
        await app.close();
        await Promise.all([raw.close(), probe.end({ timeout: 1 })]);
      };
    });

    after(async () => {
      await close?.();
      await cluster?.destroy();
    });

    it('answers 503 with Retry-After within the acquire timeout while the database is down, and recovers without a restart', async () => {
      const snapshot = { scope_id: 'c1', items: [buildPod({ name: 'before-outage' })] };
      expect((await timed(app, 'POST', `/api/v1/sources/${sourceId}/ingest`, key, snapshot)).status).to.equal(200);
      expect((await timed(app, 'GET', '/api/v1/configuration-items', key)).status).to.equal(200);

      await cluster.stop();
      // requests of every kind, several at once, as under load
      const during = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          i % 3 === 2
            ? timed(app, 'POST', `/api/v1/sources/${sourceId}/ingest`, key, {
                scope_id: 'c1',
                items: [buildPod({ name: `during-${i}` })],
              })
            : timed(app, 'GET', i % 3 === 0 ? '/api/v1/configuration-items' : '/api/v1/changes', key),
        ),
      );
      for (const reply of during) {
        expect(reply.status, reply.text).to.equal(503);
        expect(reply.body.error.code).to.equal('HTTP_503');
        expect(reply.body.error.details.reason).to.be.oneOf(['database_unavailable', 'database_busy']);
        expect(Number(reply.headers.get('retry-after'))).to.be.greaterThan(0);
        expect(reply.ms, 'answered within the acquire timeout').to.be.below(ACQUIRE_TIMEOUT_MS + 500);
      }
      const health = await timed(app, 'GET', '/health', key);
      expect(health.status).to.equal(503);
      expect(health.body.checks.database.status).to.equal('unavailable');
      expect(health.ms).to.be.below(ACQUIRE_TIMEOUT_MS + 500);
      // while it is known to be down, requests are refused at once
      const refused = await timed(app, 'GET', '/api/v1/configuration-items', key);
      expect(refused.status).to.equal(503);
      expect(refused.ms).to.be.below(250);

      await cluster.start();
      let recovered = await timed(app, 'GET', '/api/v1/configuration-items', key);
      for (let waited = 0; recovered.status !== 200 && waited < 10_000; waited += 200) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        recovered = await timed(app, 'GET', '/api/v1/configuration-items', key);
      }
      expect(recovered.status, recovered.text).to.equal(200);
      expect((await timed(app, 'GET', '/health', key)).status).to.equal(200);

      // the writes refused during the outage lost nothing: sent again, they apply once
      const retried = await timed(app, 'POST', `/api/v1/sources/${sourceId}/ingest`, key, {
        scope_id: 'c1',
        items: [buildPod({ name: 'during-2' })],
      });
      expect(retried.status).to.equal(200);
      expect(retried.body.created).to.equal(1);
      const names = (
        await timed(app, 'GET', '/api/v1/configuration-items?sort_by=name&sort_order=asc', key)
      ).body.items.map((ci: { name: string }) => ci.name);
      expect(names).to.deep.equal(['before-outage', 'during-2']);
      expect(app.logs.filter((line) => line.includes('unhandled'))).to.deep.equal([]);
    });
  },
);
