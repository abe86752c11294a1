import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import postgres from 'postgres';
import type { Sql } from '../../../src/platform/db/database.js';
import { migrate } from '../../../src/platform/db/migrate.js';
import { reconcile } from '../../../src/inventory/write-path/reconcile.js';
import { ensureSource } from '../../../src/collection/sources/store.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, startTestApp } from '../../support/app.js';
import { ROOT } from '../../support/cli.js';
import { countsAgainstTable } from '../../support/counts.js';
import { onRealPostgres, resetDatabase, testDatabase } from '../../support/db.js';
import {
  concurrentStep,
  conflictingStep,
  inconsistentPods,
  inventoryState,
  type Step,
} from '../../support/scenario.js';
import { createScratchDatabase } from '../../support/scratch-db.js';

const ROUNDS = 50;
const CHILD = path.join(ROOT, 'test/support/ingest-child.ts');

async function apply(sql: Sql, step: Step): Promise<void> {
  const source = await ensureSource(sql, DEFAULT_TENANT_ID, step.source, 'universal');
  await reconcile(
    sql,
    { tenantId: DEFAULT_TENANT_ID, sourceId: source.id, scopeId: step.scopeId, mode: step.mode, records: step.records },
    { batchSize: 8 },
  );
}

/** Every round's ingests one after the other, in replica order: the reference. */
async function serialRun(sql: Sql, replicas: number, shared: boolean): Promise<unknown> {
  for (let round = 0; round < ROUNDS; round++) {
    for (let replica = 0; replica < replicas; replica++)
      await apply(sql, concurrentStep(round, replica, replicas, shared));
  }
  return inventoryState(sql);
}

/** A replica process: it ingests when told to, and says when it is done. */
class Replica {
  private readonly child: ChildProcess;
  private readonly waiting = new Map<string, (line: string) => void>();
  readonly ready: Promise<void>;

  constructor(url: string, index: number, count: number, kind: 'shared' | 'own' | 'conflicting') {
    this.child = spawn(
      process.execPath,
      ['--import', 'tsx', CHILD, 'replica', url, String(index), String(count), kind],
      {
        cwd: ROOT,
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    );
    this.ready = this.expect('ready').then(() => undefined);
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const key = line.startsWith('ready') ? 'ready' : line.split(' ').slice(1, 2)[0]!;
      this.waiting.get(key)?.(line);
    });
  }

  private expect(key: string): Promise<string> {
    return new Promise((resolve) => this.waiting.set(key, resolve));
  }

  ingest(round: number): Promise<string> {
    const answer = this.expect(String(round));
    this.child.stdin!.write(`round ${round}\n`);
    return answer;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      this.child.once('exit', () => resolve());
      this.child.stdin!.end();
    });
  }
}

// Separate processes against one database: the embedded database belongs to a single process.
(onRealPostgres ? describe : describe.skip)(
  'concurrent ingests from several processes (skipped on the embedded database: PGlite has one session)',
  function () {
    this.timeout(300_000);

    for (const replicas of [2, 4]) {
      for (const shared of [true, false]) {
        it(`${replicas} processes ingesting into ${shared ? 'one source' : 'their own sources'}, ${ROUNDS} rounds: no error, the state of a serial run`, async () => {
          const concurrent = await createScratchDatabase('cinv_conc');
          const serial = await createScratchDatabase('cinv_serial');
          const concurrentSql = postgres(concurrent.url, { max: 2, onnotice: () => {} });
          const serialSql = postgres(serial.url, { max: 2, onnotice: () => {} });
          const processes: Replica[] = [];
          try {
            await Promise.all([migrate(concurrentSql), migrate(serialSql)]);
            // the sources exist before the rounds, as they would in production
            for (let replica = 0; replica < replicas; replica++) {
              await ensureSource(
                concurrentSql,
                DEFAULT_TENANT_ID,
                concurrentStep(0, replica, replicas, shared).source,
                'universal',
              );
              await ensureSource(
                serialSql,
                DEFAULT_TENANT_ID,
                concurrentStep(0, replica, replicas, shared).source,
                'universal',
              );
            }
            for (let replica = 0; replica < replicas; replica++)
              processes.push(new Replica(concurrent.url, replica, replicas, shared ? 'shared' : 'own'));
            await Promise.all(processes.map((p) => p.ready));
            const failures: string[] = [];
            for (let round = 0; round < ROUNDS; round++) {
              const answers = await Promise.all(processes.map((p) => p.ingest(round)));
              failures.push(...answers.filter((answer) => !answer.startsWith('done')));
            }
            expect(failures).to.deep.equal([]);
            const expected = (await serialRun(serialSql, replicas, shared)) as Record<string, unknown>;
            const actual = (await inventoryState(concurrentSql)) as Record<string, unknown>;
            for (const part of Object.keys(expected)) expect(actual[part], part).to.deep.equal(expected[part]);
            const { kept, counted } = await countsAgainstTable(concurrentSql);
            expect(kept).to.deep.equal(counted);
          } finally {
            await Promise.all(processes.map((p) => p.stop()));
            await Promise.all([concurrentSql.end(), serialSql.end()]);
            await concurrent.drop();
            await serial.drop();
          }
        });
      }
    }
  },
);

(onRealPostgres ? describe : describe.skip)(
  'racing versions from several processes (skipped on the embedded database: PGlite has one session)',
  function () {
    this.timeout(300_000);

    it(`4 processes pushing different versions of the same objects, ${ROUNDS} rounds: no error, no deadlock, relationships of the stored version`, async () => {
      const scratch = await createScratchDatabase('cinv_race');
      const sql = postgres(scratch.url, { max: 2, onnotice: () => {} });
      const processes: Replica[] = [];
      try {
        await migrate(sql);
        await ensureSource(sql, DEFAULT_TENANT_ID, conflictingStep(0, 0).source, 'universal');
        for (let replica = 0; replica < 4; replica++)
          processes.push(new Replica(scratch.url, replica, 4, 'conflicting'));
        await Promise.all(processes.map((p) => p.ready));
        const failures: string[] = [];
        for (let round = 0; round < ROUNDS; round++) {
          failures.push(
            ...(await Promise.all(processes.map((p) => p.ingest(round)))).filter(
              (answer) => !answer.startsWith('done'),
            ),
          );
        }
        expect(failures).to.deep.equal([]);
        expect(await inconsistentPods(sql)).to.deep.equal([]);
        const [counted] = await sql<
          { pods: number }[]
        >`select count(*)::int as pods from configuration_items where ci_type = 'k8s.pod'`;
        expect(counted!.pods).to.equal(40);
      } finally {
        await Promise.all(processes.map((p) => p.stop()));
        await sql.end();
        await scratch.drop();
      }
    });
  },
);

describe('concurrent ingests through the API of one process', function () {
  this.timeout(300_000);

  for (const shared of [true, false]) {
    it(`4 ingests at once into ${shared ? 'one source' : 'four sources'}, ${ROUNDS} rounds: no error, the state of a serial run`, async () => {
      const { sql } = await testDatabase();
      await resetDatabase(sql);
      const app = await startTestApp();
      try {
        const key = await createKey(sql, 'adm');
        const ids: string[] = [];
        for (let replica = 0; replica < 4; replica++) {
          ids.push(
            (await ensureSource(sql, DEFAULT_TENANT_ID, concurrentStep(0, replica, 4, shared).source, 'universal')).id,
          );
        }
        for (let round = 0; round < ROUNDS; round++) {
          const replies = await Promise.all(
            ids.map((id, replica) => {
              const step = concurrentStep(round, replica, 4, shared);
              return app.request('POST', `/api/v1/sources/${id}/ingest`, {
                key,
                body: { scope_id: step.scopeId, items: step.records },
              });
            }),
          );
          for (const reply of replies) expect(reply.status, reply.text).to.equal(200);
        }
        const actual = (await inventoryState(sql)) as Record<string, unknown>;
        await resetDatabase(sql);
        const expected = (await serialRun(sql, 4, shared)) as Record<string, unknown>;
        for (const part of Object.keys(expected)) expect(actual[part], part).to.deep.equal(expected[part]);
      } finally {
        await app.close();
      }
    });
  }

  it(`4 ingests at once of different versions of the same objects, ${ROUNDS} rounds: no error, relationships of the stored version`, async () => {
    const { sql } = await testDatabase();
    await resetDatabase(sql);
    const app = await startTestApp();
    try {
      const key = await createKey(sql, 'adm');
      const id = (await ensureSource(sql, DEFAULT_TENANT_ID, conflictingStep(0, 0).source, 'universal')).id;
      for (let round = 0; round < ROUNDS; round++) {
        const replies = await Promise.all(
          [0, 1, 2, 3].map((replica) => {
            const step = conflictingStep(round, replica);
            return app.request('POST', `/api/v1/sources/${id}/ingest`, {
              key,
              body: { scope_id: step.scopeId, items: step.records },
            });
          }),
        );
        for (const reply of replies) expect(reply.status, reply.text).to.equal(200);
      }
      expect(await inconsistentPods(sql)).to.deep.equal([]);
    } finally {
      await app.close();
    }
  });
});
