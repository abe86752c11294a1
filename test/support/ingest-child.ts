// A process that runs ingests for the crash and concurrency tests, which kill it or run several
// of it side by side. Usage:
//   ingest-child.ts crash URL FROM TO BATCH_SIZE    run steps FROM..TO of crashScenario(), printing
//                                                  "begin N" and "done N" around each step
//   ingest-child.ts replica URL INDEX               for every "round R COUNT KIND" line on stdin,
//                                                  ingest concurrentStep(R, INDEX, COUNT, KIND =
//                                                  shared|own) or conflictingStep(R, INDEX) (KIND =
//                                                  conflicting) and answer "done R" or "error R
//                                                  <message>"; the lines name the test's replica
//                                                  count and kind, so that one process serves them all
import { createInterface } from 'node:readline';
import { connectServer } from '../../src/platform/db/database.js';
import { reconcile } from '../../src/inventory/write-path/reconcile.js';
import { ensureSource } from '../../src/collection/sources/store.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { concurrentStep, conflictingStep, crashScenario, type Step } from './scenario.js';

const [mode, url, ...args] = process.argv.slice(2);
if (!url) throw new Error('usage: ingest-child.ts crash|replica URL ...');
const db = connectServer(url, { poolSize: 4, acquireTimeoutMs: 10_000, statementTimeoutMs: 60_000 });

async function apply(step: Step, batchSize: number): Promise<void> {
  const source = await ensureSource(db.sql, DEFAULT_TENANT_ID, step.source, 'universal');
  await reconcile(
    db.sql,
    {
      tenantId: DEFAULT_TENANT_ID,
      sourceId: source.id,
      scopeId: step.scopeId,
      mode: step.mode,
      records: step.records,
      deletions: step.deletions,
    },
    // a PostgreSQL server's default: batches of a source's two parts in parallel lanes
    { batchSize, lanes: true },
  );
}

if (mode === 'crash') {
  const [from, to, batchSize] = args.map(Number);
  const steps = crashScenario();
  for (let index = from!; index <= Math.min(to!, steps.length - 1); index++) {
    console.log(`begin ${index}`);
    await apply(steps[index]!, batchSize!);
    console.log(`done ${index}`);
  }
  await db.close();
} else if (mode === 'replica') {
  const index = Number(args[0]);
  console.log('ready');
  for await (const line of createInterface({ input: process.stdin })) {
    const [, roundText, countText, kind] = line.split(' ');
    const round = Number(roundText);
    const count = Number(countText);
    try {
      const step =
        kind === 'conflicting' ? conflictingStep(round, index) : concurrentStep(round, index, count, kind === 'shared');
      await apply(step, 8);
      console.log(`done ${round}`);
    } catch (error) {
      console.log(`error ${round} ${(error as Error).message.replace(/\n/g, ' ')}`);
    }
  }
  await db.close();
} else {
  throw new Error(`unknown mode ${mode}`);
}
