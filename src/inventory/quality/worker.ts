import type { AppContext } from '../../context.js';
import { CatchUpLoop } from '../../platform/workers.js';
import type { Sql } from '../../platform/db/database.js';
import { standingCondition } from '../queries/service.js';
import { recheck, recheckRules } from './check-store.js';
import type { CheckPlan } from './plan.js';
import { PlanCache, PlanNeeded } from './planning.js';
import { claimQueued, moveWalk, nextWalk, walkPage } from './store.js';

/** CIs checked per transaction. */
const BATCH = 500;

/** The compiler of a plan's matches for statements sent through `tx`. */
export const compilerFor =
  (tx: Sql, plan: CheckPlan, now: Date) => (e: Parameters<typeof standingCondition>[2], row: string) =>
    standingCondition(tx, plan.tenantId, e, row, now);

/**
 * One step of the quality worker, in one transaction: the next queued CIs (a CI queued twice is
 * checked once), or else a page of a walk (the whole check after a change of the settings, or one
 * rule's first pass). What it took off the queue or the walk's place moves in the same
 * transaction, so a crash repeats a step rather than losing one. Returns how many CIs it checked.
 */
export async function qualityStep(app: AppContext, plans: PlanCache, now: Date): Promise<number> {
  return app.sql.begin(async (transaction) => {
    // fragments built for the transaction are sent through it: its type lacks only the pool's members
    const tx = transaction as unknown as Sql;
    const queued = await claimQueued(tx, BATCH);
    if (queued.length > 0) {
      const byTenant = new Map<string, Set<string>>();
      for (const row of queued) byTenant.set(row.tenant_id, (byTenant.get(row.tenant_id) ?? new Set()).add(row.ci_id));
      for (const [tenantId, ids] of byTenant) {
        const plan = await plans.planFor(tx, tenantId);
        await recheck(tx, plan, [...ids], now, compilerFor(tx, plan, now));
      }
      return queued.length;
    }
    const walk = await nextWalk(tx);
    if (!walk) return 0;
    const ids = await walkPage(tx, walk.tenant_id, walk.after_ci, BATCH);
    const plan = await plans.planFor(tx, walk.tenant_id);
    const compiler = compilerFor(tx, plan, now);
    if (walk.rule_id === null) await recheck(tx, plan, ids, now, compiler);
    else {
      const rules = plan.rules.filter((rule) => rule.id === walk.rule_id);
      if (rules.length > 0) await recheckRules(tx, plan, rules, ids, compiler);
    }
    await moveWalk(tx, walk, ids.length < BATCH || ids.length === 0 ? null : ids[ids.length - 1]!);
    return Math.max(ids.length, 1);
  });
}

/** Runs steps until the queue and the walks are empty; returns the CIs checked. */
export async function catchUpQuality(app: AppContext, plans = new PlanCache(app)): Promise<number> {
  let total = 0;
  for (;;) {
    const checked = await qualityStep(app, plans, app.now()).catch(async (error: unknown) => {
      if (!(error instanceof PlanNeeded)) throw error;
      await plans.build(error.tenantId);
      return -1;
    });
    if (checked === 0) return total;
    if (checked < 0) continue;
    total += checked;
  }
}

/**
 * The quality worker: drains the queue the triggers fill every `pollMs`. The measures trail the
 * inventory by about one interval; nothing on the write path waits for them.
 */
export class QualityWorker extends CatchUpLoop {
  constructor(app: AppContext, pollMs: number) {
    // plans stay with the worker: it checks batch after batch against the same one
    const plans = new PlanCache(app);
    super(pollMs, () => catchUpQuality(app, plans), app.logger, {
      done: 'quality checked',
      failed: 'quality check failed',
    });
  }
}
