import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { generateApiKey } from '../../../src/platform/auth/api-key-format.js';
import { migrate } from '../../../src/platform/db/migrate.js';
import { reconcile } from '../../../src/inventory/write-path/reconcile.js';
import { ensureSource } from '../../../src/collection/sources/store.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { TEST_MASTER_KEY } from '../../support/app.js';
import { startServer } from '../../support/cli.js';
import { onRealPostgres } from '../../support/db.js';
import { buildPod } from '../../support/factories.js';
import { createScratchDatabase } from '../../support/scratch-db.js';

const SECRET = 'crash-test-secret-crash-test-secret-0123';

(onRealPostgres ? describe : describe.skip)(
  'change subscriptions through kill -9 of the delivering process (skipped on the embedded database: it needs processes sharing a server)',
  function () {
    this.timeout(240_000);
    let scratch: { url: string; drop(): Promise<void> };
    let sql: postgres.Sql;
    let receiver: Server;
    /** Every message received: its webhook-id and the records in it. */
    const received: { id: string; records: { id: string; ci_id: string }[] }[] = [];

    before(async () => {
      scratch = await createScratchDatabase('cinv_sub_crash');
      sql = postgres(scratch.url, { max: 4, onnotice: () => {} });
      await migrate(sql);
      receiver = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          if (body.type === 'cinv.changes')
            received.push({ id: String(req.headers['webhook-id']), records: body.data.records });
          // a receiver that takes a moment: kills land while batches are in flight too
          setTimeout(() => res.end(), Math.floor(Math.random() * 30));
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    });
    after(async () => {
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
      await sql.end();
      await scratch.drop();
    });

    it('loses nothing and repeats a record only under the webhook-id it first came with, in order per CI', async () => {
      const key = generateApiKey('adm');
      const env = {
        DATABASE_URL: scratch.url,
        CINV_SECRET: SECRET,
        CINV_MASTER_KEY: TEST_MASTER_KEY,
        CINV_BOOTSTRAP_ADMIN_KEY: key,
        CINV_SUBSCRIPTION_POLL: '20ms',
        CINV_SUBSCRIPTION_LEASE: '1s',
        CINV_SUBSCRIPTION_BATCH_RECORDS: '7',
        LOG_LEVEL: 'info',
      };
      let server = await startServer(env);
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const made = await fetch(`http://127.0.0.1:${server.port}/api/v1/subscriptions`, {
        method: 'POST',
        headers: { 'x-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'crash', sink: { type: 'webhook', url } }),
      });
      expect(made.status, await made.clone().text()).to.equal(201);

      const source = await ensureSource(sql, DEFAULT_TENANT_ID, 'crash-source', 'universal');
      const pods = Array.from({ length: 12 }, (_, i) => `crash-pod-${i}`);
      let writing = true;
      const writer = (async () => {
        for (let round = 0; round < 25; round++) {
          const records = pods
            .filter((_, i) => (i + round) % 3 !== 0)
            .map((name) => buildPod({ name, replicas: round + 1, external_id: `pod/${name}` }));
          await reconcile(sql, {
            tenantId: DEFAULT_TENANT_ID,
            sourceId: source.id,
            scopeId: null,
            mode: 'delta',
            records,
          });
          await sleep(40);
        }
        writing = false;
      })();
      const servers: ChildProcess[] = [];
      for (let kill = 0; kill < 4; kill++) {
        await sleep(150 + Math.floor(Math.random() * 300));
        server.child.kill('SIGKILL');
        servers.push(server.child);
        server = await startServer(env);
      }
      await writer;
      expect(writing).to.equal(false);

      const written = await sql<
        { id: string; ci_id: string }[]
      >`select id::text, ci_id from change_records where changes <> '[]'::jsonb order by id`;
      const deadline = Date.now() + 60_000;
      const seen = () => new Set(received.flatMap((m) => m.records.map((r) => r.id)));
      while (seen().size < written.length && Date.now() < deadline) await sleep(100);
      server.child.kill('SIGTERM');

      expect(seen().size, 'records received').to.equal(written.length);
      expect([...seen()].sort()).to.deep.equal(written.map((r) => r.id).sort());
      // a record that came twice came under the same id both times
      const firstId = new Map<string, string>();
      for (const message of received) {
        for (const record of message.records) {
          const before = firstId.get(record.id);
          if (before === undefined) firstId.set(record.id, message.id);
          else expect(message.id, `record ${record.id} again`).to.equal(before);
        }
      }
      // each CI's records first arrived in the order they were written
      const order = new Map<string, string[]>();
      const first = new Set<string>();
      for (const message of received) {
        for (const record of message.records) {
          if (first.has(record.id)) continue;
          first.add(record.id);
          order.set(record.ci_id, [...(order.get(record.ci_id) ?? []), record.id]);
        }
      }
      for (const [ciId, ids] of order) expect(ids, ciId).to.deep.equal([...ids].sort((a, b) => Number(a) - Number(b)));
    });
  },
);
