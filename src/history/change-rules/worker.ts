import type { Sql } from 'postgres';
import type { AppContext } from '../../context.js';
import { CatchUpLoop } from '../../platform/workers.js';
import { shapeOf } from '../records/kinds.js';
import { lockStatistics } from '../records/stats-store.js';
import { moveRun, nextRun, runBatch } from './runs-store.js';
import { recount, reshape, rulesOf } from './store.js';
import { compileRules } from './compile.js';
import type { FieldChange } from '../records/diff.js';

/** Records per transaction: short enough that no writer waits on a batch for long. */
export const APPLY_BATCH = 2000;

/**
 * One batch of the oldest unfinished re-application, in one transaction: the records' shipped
 * verdicts again, then the tenant's rules as they are now; only records whose values move are
 * written (and queued for the search index, and moved in the statistics by kind). Returns the
 * records read (0: nothing to do).
 */
export async function applyStep(app: AppContext, size = APPLY_BATCH): Promise<number> {
  return app.sql.begin(async (transaction) => {
    const tx = transaction as unknown as Sql;
    const run = await nextRun(tx);
    if (!run) return 0;
    const batch = await runBatch(tx, run, size);
    const shipped = batch.map((r) => ({
      id: r.id,
      changed_at: r.changed_at,
      ...shapeOf({ ci_type: r.ci_type, change_type: r.change_type, changes: JSON.parse(r.changes) as FieldChange[] }),
    }));
    let changed = 0;
    if (shipped.length > 0) {
      const rules = compileRules(tx, run.tenant_id, await rulesOf(tx, run.tenant_id), app.now(), 's');
      const moved = await reshape(tx, run.tenant_id, rules, { shipped });
      await lockStatistics(tx);
      await recount(tx, moved);
      changed = moved.length;
    }
    await moveRun(tx, run, { last: batch.at(-1), records: batch.length, changed, finished: batch.length < size });
    return Math.max(batch.length, 1);
  });
}

/** Between batches the worker rests half as long as the batch took: writers keep two thirds of the machine. */
const REST = 0.5;

/** Runs batches until no re-application is left; returns the records read. */
export async function catchUpApplications(app: AppContext): Promise<number> {
  let total = 0;
  for (;;) {
    const started = performance.now();
    const read = await applyStep(app);
    if (read === 0) return total;
    total += read;
    if (read >= APPLY_BATCH) await new Promise((resolve) => setTimeout(resolve, (performance.now() - started) * REST));
  }
}

/** Re-applies the change rules to the windows administrators asked for, batch after batch. */
export class ChangeRulesWorker extends CatchUpLoop {
  constructor(app: AppContext, pollMs: number) {
    super(pollMs, () => catchUpApplications(app), app.logger, {
      done: 'change rules re-applied',
      failed: 'change rules re-application failed',
    });
  }
}
