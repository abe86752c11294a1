import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Sql } from '../../../src/platform/db/database.js';
import { reconcile } from '../../../src/inventory/write-path/reconcile.js';
import { ensureSource } from '../../../src/collection/sources/store.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, startTestApp } from '../../support/app.js';
import { ROOT } from '../../support/cli.js';
import { countsAgainstTable } from '../../support/counts.js';
import { onRealPostgres, REAL_DATABASE_URL, resetDatabase, testDatabase } from '../../support/db.js';
import {
  concurrentStep,
  conflictingStep,
  inconsistentPods,
  inventoryState,
  type Step,
} from '../../support/scenario.js';

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

const references = new Map<string, Record<string, unknown>>();

/**
 * The serial run's state, written into the emptied database once per file for each replica count
 * and kind: the processes' tests and the API's of four sources ask for the same two.
 */
async function reference(sql: Sql, replicas: number, shared: boolean): Promise<Record<string, unknown>> {
  const key = `${replicas} ${shared}`;
  let state = references.get(key);
  if (!state) {
    await resetDatabase(sql);
    // the sources exist before the rounds, as they would in production
    for (let replica = 0; replica < replicas; replica++)
      await ensureSource(sql, DEFAULT_TENANT_ID, concurrentStep(0, replica, replicas, shared).source, 'universal');
    state = (await serialRun(sql, replicas, shared)) as Record<string, unknown>;
    references.set(key, state);
  }
  return state;
}

type Kind = 'shared' | 'own' | 'conflicting';

/** A replica process: it ingests when told to, and says when it is done. */
class Replica {
  private readonly child: ChildProcess;
  private readonly waiting = new Map<string, (line: string) => void>();
  readonly ready: Promise<void>;

  constructor(url: string, index: number) {
    this.child = spawn(process.execPath, ['--import', 'tsx', CHILD, 'replica', url, String(index)], {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    this.ready = this.expect('ready').then(() => undefined);
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const key = line.startsWith('ready') ? 'ready' : line.split(' ').slice(1, 2)[0]!;
      this.waiting.get(key)?.(line);
    });
  }

  private expect(key: string): Promise<string> {
    return new Promise((resolve) => this.waiting.set(key, resolve));
  }

  ingest(round: number, count: number, kind: Kind): Promise<string> {
    const answer = this.expect(String(round));
    this.child.stdin!.write(`round ${round} ${count} ${kind}\n`);
    return answer;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => {
      this.child.once('exit', () => resolve());
      this.child.stdin!.end();
    });
  }
}

/**
 * The replica processes of a describe's tests, started at the first that needs them: each start of
 * one loads the write path through tsx, most of the processor time of a short test. A replica keeps
 * nothing between ingests but its connections, and every test resets the database before its rounds.
 */
class Replicas {
  private started: Replica[] = [];

  async take(count: number): Promise<Replica[]> {
    while (this.started.length < count) this.started.push(new Replica(REAL_DATABASE_URL!, this.started.length));
    await Promise.all(this.started.map((replica) => replica.ready));
    return this.started.slice(0, count);
  }

  async stop(): Promise<void> {
    await Promise.all(this.started.map((replica) => replica.stop()));
    this.started = [];
  }
}

// Separate processes against one database: the embedded database belongs to a single process. They
// write into the run's own database, emptied before each test, as its other tests do: a scratch
// database created and migrated for each was as slow as the rounds of the smaller tests.
(onRealPostgres ? describe : describe.skip)(
  'concurrent ingests from several processes (skipped on the embedded database: PGlite has one session)',
  function () {
    this.timeout(300_000);
    const pool = new Replicas();
    after(() => pool.stop());

    for (const replicas of [2, 4]) {
      for (const shared of [true, false]) {
        it(`${replicas} processes ingesting into ${shared ? 'one source' : 'their own sources'}, ${ROUNDS} rounds: no error, the state of a serial run`, async () => {
          const { sql } = await testDatabase();
          await resetDatabase(sql);
          // the sources exist before the rounds, as they would in production
          for (let replica = 0; replica < replicas; replica++)
            await ensureSource(
              sql,
              DEFAULT_TENANT_ID,
              concurrentStep(0, replica, replicas, shared).source,
              'universal',
            );
          const processes = await pool.take(replicas);
          const failures: string[] = [];
          for (let round = 0; round < ROUNDS; round++) {
            const answers = await Promise.all(
              processes.map((p) => p.ingest(round, replicas, shared ? 'shared' : 'own')),
            );
            failures.push(...answers.filter((answer) => !answer.startsWith('done')));
          }
          expect(failures).to.deep.equal([]);
          const actual = (await inventoryState(sql)) as Record<string, unknown>;
          const { kept, counted } = await countsAgainstTable(sql);
          expect(kept).to.deep.equal(counted);
          const expected = await reference(sql, replicas, shared);
          for (const part of Object.keys(expected)) expect(actual[part], part).to.deep.equal(expected[part]);
        });
      }
    }
  },
);

(onRealPostgres ? describe : describe.skip)(
  'racing versions from several processes (skipped on the embedded database: PGlite has one session)',
  function () {
    this.timeout(300_000);
    const pool = new Replicas();
    after(() => pool.stop());

    it(`4 processes pushing different versions of the same objects, ${ROUNDS} rounds: no error, no deadlock, relationships of the stored version`, async () => {
      const { sql } = await testDatabase();
      await resetDatabase(sql);
      await ensureSource(sql, DEFAULT_TENANT_ID, conflictingStep(0, 0).source, 'universal');
      const processes = await pool.take(4);
      const failures: string[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        failures.push(
          ...(await Promise.all(processes.map((p) => p.ingest(round, 4, 'conflicting')))).filter(
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
        const expected = await reference(sql, 4, shared);
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
