import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { generateApiKey } from '../../src/platform/auth/api-key-format.js';
import { runCli, startServer, stopServer, useCliEnvironment } from '../support/cli.js';
import { onRealPostgres } from '../support/db.js';
import { buildPod } from '../support/factories.js';

const ITEMS = 3000;
const CLIENTS = 10;
const PUSHED_PER_WRITE = 3;

interface Answer {
  status: number;
  body: any;
}

describe(`cinv commands beside a running server (${onRealPostgres ? 'PostgreSQL server' : 'embedded database'})`, function () {
  this.timeout(120_000);
  const env = useCliEnvironment('cinv_beside');

  it('answers every request while `cinv ingest` writes thousands of items, and both complete', async () => {
    const snapshot = path.join(env().CINV_DATA_DIR!, 'beside.json');
    const items = Array.from({ length: ITEMS }, (_, i) => buildPod({ name: `beside-${i}` }));
    writeFileSync(snapshot, JSON.stringify({ scope_id: 'cluster-cli', items }));
    const key = generateApiKey('adm');
    // Small reconcile batches: many transactions of the command for the requests to run between.
    // The scheduler polls often, so that its rounds run during the ingest too. A request that waits
    // for the database longer than CINV_DB_ACQUIRE_TIMEOUT is a 503 by design, and a busy machine
    // can take longer than the default 2 s: this test is about taking turns, not about speed. For
    // the same reason the server does not shed on event-loop lag: on a machine whose cores other
    // test runs share, the lag measures the machine, not the server.
    const settings = {
      CINV_RECONCILE_BATCH_SIZE: '500',
      CINV_RATE_LIMIT: '1000000',
      CINV_WORKER_POLL_INTERVAL: '200ms',
      CINV_DB_ACQUIRE_TIMEOUT: '30s',
      CINV_SHED_EVENT_LOOP_DELAY: 'off',
    };
    const server = await startServer({ ...env(), ...settings, CINV_BOOTSTRAP_ADMIN_KEY: key });
    try {
      const api = async (method: string, route: string, body?: unknown): Promise<Answer> => {
        const response = await fetch(`http://127.0.0.1:${server.port}${route}`, {
          method,
          headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
          body: body ? JSON.stringify(body) : undefined,
        });
        const text = await response.text();
        return { status: response.status, body: text ? JSON.parse(text) : undefined };
      };
      const totalNamed = async (prefix: string) => {
        const { status, body } = await api('GET', `/api/v1/configuration-items?limit=1&filter=name:like:${prefix}`);
        expect(status).to.equal(200);
        return body.total as number;
      };
      const pushed = await api('POST', '/api/v1/sources', { name: 'pushed', collector_type: 'universal' });
      expect(pushed.status, JSON.stringify(pushed.body)).to.equal(201);
      await api('POST', `/api/v1/sources/${pushed.body.id}/ingest`, {
        mode: 'delta',
        scope_id: 'http',
        items: [buildPod({ name: 'pushed-seed' })],
      });
      const seedId = (await api('GET', '/api/v1/configuration-items?limit=1&filter=name:eq:pushed-seed')).body.items[0]
        .ci_id as string;

      let ingesting = true;
      const ingest = runCli(['ingest', '--source', 'beside', '--file', snapshot], { ...env(), ...settings }).finally(
        () => (ingesting = false),
      );
      const failures: string[] = [];
      const totalsSeen = new Set<number>();
      let writes = 0;
      let answered = 0;
      const check = (what: string, answer: Answer) => {
        answered++;
        if (answer.status >= 500) failures.push(`${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
        return answer;
      };
      const client = async (n: number) => {
        for (let round = 0; ingesting; round++) {
          const list = check('list', await api('GET', '/api/v1/configuration-items?limit=20&filter=name:like:beside-'));
          if (list.status === 200) totalsSeen.add(list.body.total as number);
          const id = (list.body?.items?.[round % 20]?.ci_id as string | undefined) ?? seedId;
          check('detail', await api('GET', `/api/v1/configuration-items/${id}`));
          if (round % 4 === n % 4) {
            const records = Array.from({ length: PUSHED_PER_WRITE }, (_, i) =>
              buildPod({ name: `pushed-${n}-${round}-${i}` }),
            );
            const write = check(
              'ingest over HTTP',
              await api('POST', `/api/v1/sources/${pushed.body.id}/ingest`, {
                mode: 'delta',
                scope_id: 'http',
                items: records,
              }),
            );
            if (write.status === 200) writes++;
          }
        }
      };
      await Promise.all(Array.from({ length: CLIENTS }, (_, n) => client(n)));
      const result = await ingest;

      expect(failures.length, `requests answered 5xx, the first ones:\n${failures.slice(0, 5).join('\n')}`).to.equal(0);
      expect(result.code, result.stderr).to.equal(0);
      expect(JSON.parse(result.stdout)).to.deep.include({ received: ITEMS, created: ITEMS, changes: ITEMS });
      // the requests ran while the command's transactions did, not before or after them
      expect(
        [...totalsSeen].some((total) => total > 0 && total < ITEMS),
        `totals seen: ${[...totalsSeen].join(', ')}`,
      ).to.equal(true);
      expect(writes).to.be.greaterThan(0);
      expect(await totalNamed('beside-')).to.equal(ITEMS);
      expect(await totalNamed('pushed-')).to.equal(1 + writes * PUSHED_PER_WRITE);
      const log = server.output();
      expect(log).to.not.include('collection scheduling round failed');
      expect(log).to.not.include('unhandled error');
      expect(answered).to.be.greaterThan(CLIENTS * 2);
    } finally {
      expect(await stopServer(server.child)).to.equal(0);
    }
  });
});
