import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import postgres from 'postgres';
import { migrate } from '../../../src/platform/db/migrate.js';
import { reconcile } from '../../../src/inventory/write-path/reconcile.js';
import { ensureSource } from '../../../src/collection/sources/store.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { ROOT } from '../../support/cli.js';
import { countsAgainstTable } from '../../support/counts.js';
import { onRealPostgres } from '../../support/db.js';
import { crashScenario, inventoryState, random } from '../../support/scenario.js';
import { createScratchDatabase } from '../../support/scratch-db.js';

const CHILD = path.join(ROOT, 'test/support/ingest-child.ts');
const BATCH_SIZE = 16;
const KILLS_PER_STEP = 3;

interface Run {
  child: ChildProcess;
  /** Resolves with the step being worked on when the first "begin" line arrives. */
  begun: Promise<number>;
  /** Resolves with the last step reported done (or -1) once the process has exited. */
  exited: Promise<{ lastDone: number; code: number | null; signal: NodeJS.Signals | null; output: string }>;
}

function startChild(url: string, from: number, to: number): Run {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', CHILD, 'crash', url, String(from), String(to), String(BATCH_SIZE)],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  let lastDone = -1;
  let onBegin!: (step: number) => void;
  const begun = new Promise<number>((resolve) => (onBegin = resolve));
  child.stdout!.on('data', (chunk: Buffer) => {
    output += chunk;
    for (const match of String(chunk).matchAll(/^(begin|done) (\d+)$/gm)) {
      if (match[1] === 'begin') onBegin(Number(match[2]));
      else lastDone = Number(match[2]);
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk));
  const exited = new Promise<{ lastDone: number; code: number | null; signal: NodeJS.Signals | null; output: string }>(
    (resolve) => child.once('exit', (code, signal) => resolve({ lastDone, code, signal, output })),
  );
  return { child, begun, exited };
}

/** Applies the scenario in this process, without interruption: the state every crash run must reach. */
async function cleanRun(url: string): Promise<{ state: unknown; stepMs: number[] }> {
  const sql = postgres(url, { max: 4, onnotice: () => {} });
  try {
    await migrate(sql);
    const stepMs: number[] = [];
    for (const step of crashScenario()) {
      const source = await ensureSource(sql, DEFAULT_TENANT_ID, step.source, 'universal');
      const started = performance.now();
      await reconcile(
        sql,
        {
          tenantId: DEFAULT_TENANT_ID,
          sourceId: source.id,
          scopeId: step.scopeId,
          mode: step.mode,
          records: step.records,
          deletions: step.deletions,
        },
        { batchSize: BATCH_SIZE },
      );
      stepMs.push(performance.now() - started);
    }
    return { state: await inventoryState(sql), stepMs };
  } finally {
    await sql.end();
  }
}

// kill -9 needs a database outside the killed process: the embedded one dies with it.
(onRealPostgres ? describe : describe.skip)(
  'crash safety of the write path (kill -9 of an ingesting process; skipped on the embedded database, which lives inside one process)',
  function () {
    this.timeout(600_000);

    it('reaches the same inventory, relationships and change history as an uninterrupted run after kills at random points', async () => {
      const clean = await createScratchDatabase('cinv_clean');
      const crashed = await createScratchDatabase('cinv_crash');
      try {
        const reference = await cleanRun(clean.url);
        const migrating = postgres(crashed.url, { max: 1, onnotice: () => {} });
        await migrate(migrating);
        await migrating.end();

        const rand = random(7);
        const steps = crashScenario().length;
        const killedAt: { step: number; afterMs: number; records: number }[] = [];
        const probe = postgres(crashed.url, { max: 1, onnotice: () => {} });
        // every step is killed KILLS_PER_STEP times at random points, then run to its end
        for (let step = 0; step < steps; step++) {
          let kills = 0;
          let window = reference.stepMs[step]! * 1.2;
          while (kills < KILLS_PER_STEP) {
            const run = startChild(crashed.url, step, step);
            await Promise.race([run.begun, run.exited.then(({ output }) => Promise.reject(new Error(output)))]);
            // anywhere in the step (inside a batch's statements, between batches, in the deletions),
            // each kill in its own share of the step: random times alone often put two kills of a
            // step before its first commit
            const afterMs = ((kills + rand()) / KILLS_PER_STEP) * window;
            await new Promise((resolve) => setTimeout(resolve, afterMs));
            run.child.kill('SIGKILL');
            const result = await run.exited;
            if (result.signal !== 'SIGKILL' || result.lastDone >= step) {
              // the step was over before the kill: a narrower window, so that the shares fit the step
              window *= 0.8;
              continue;
            }
            const [counted] = await probe<{ n: number }[]>`select count(*)::int as n from change_records`;
            killedAt.push({ step, afterMs: Math.round(afterMs), records: counted!.n });
            kills++;
          }
          const finish = startChild(crashed.url, step, step);
          const result = await finish.exited;
          expect(result.code, result.output).to.equal(0);
          expect(result.lastDone).to.equal(step);
        }
        await probe.end();

        expect(killedAt.length, JSON.stringify(killedAt)).to.be.at.least(20);
        // the kills landed at many different points of the work, not always at the same place
        expect(new Set(killedAt.map((k) => k.records)).size).to.be.at.least(10);

        const sql = postgres(crashed.url, { max: 4, onnotice: () => {} });
        try {
          const state = (await inventoryState(sql)) as Record<string, unknown>;
          const expected = reference.state as Record<string, unknown>;
          for (const part of Object.keys(expected)) expect(state[part], part).to.deep.equal(expected[part]);
          // the CI counts were written in the same transactions: no kill leaves them apart
          const { kept, counted } = await countsAgainstTable(sql);
          expect(kept).to.deep.equal(counted);
        } finally {
          await sql.end();
        }
      } finally {
        await clean.drop();
        await crashed.drop();
      }
    });
  },
);
