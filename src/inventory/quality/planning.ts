import type { AppContext } from '../../context.js';
import type { Queryable } from '../../platform/db/database.js';
import type { Expr } from '../../platform/query-language/ast.js';
import { standingMatch } from '../queries/service.js';
import { fieldOf, type CheckPlan, type PlannedPath } from './plan.js';
import { effectiveSettings, type QualitySettings } from './settings.js';
import { rulesOf, storedSettings } from './store.js';

/** A path of the settings as the match `PATH exists` (a 422 naming the path when it is not one). */
export async function pathMatch(app: AppContext, path: string): Promise<Expr> {
  return standingMatch(app, `${path} exists`);
}

async function planPaths(app: AppContext, paths: readonly string[]): Promise<PlannedPath[]> {
  return Promise.all(paths.map(async (path) => ({ path, exists: await pathMatch(app, path) })));
}

/** A tenant's settings and rules, parsed into what the checks look for. */
export async function planOf(app: AppContext, tenantId: string, settings?: QualitySettings): Promise<CheckPlan> {
  const effective = settings ?? effectiveSettings(await storedSettings(app.sql, tenantId));
  const completeness: CheckPlan['completeness'] = new Map();
  for (const [type, paths] of Object.entries(effective.completeness)) {
    completeness.set(type, {
      required: await planPaths(app, paths.required),
      recommended: await planPaths(app, paths.recommended),
    });
  }
  const relationships: CheckPlan['relationships'] = new Map();
  for (const [type, rules] of Object.entries(effective.required_relationships)) {
    relationships.set(
      type,
      await Promise.all(
        rules.map(async (rule) => ({ rule, when: rule.when ? await standingMatch(app, rule.when) : undefined })),
      ),
    );
  }
  const rules = await Promise.all(
    (await rulesOf(app.sql, tenantId)).map(async (rule) => ({
      id: rule.id,
      appliesTo: await standingMatch(app, rule.applies_to),
      requires: await standingMatch(app, rule.requires),
    })),
  );
  return {
    tenantId,
    settings: effective,
    owner: fieldOf(await pathMatch(app, effective.owner_path)),
    completeness,
    relationships,
    rules,
  };
}

/** A step found a tenant whose plan is not built, or out of date: built outside the step's transaction. */
export class PlanNeeded extends Error {
  constructor(readonly tenantId: string) {
    super(`the quality plan of tenant ${tenantId} is not built`);
  }
}

/**
 * Plans by tenant, kept until the tenant's settings or rules change: the worker checks batch
 * after batch against the same plan without parsing it again. Parsing checks patterns on a
 * connection of its own, so a plan is built outside the transaction that uses it (on the embedded
 * database there is only one).
 */
export class PlanCache {
  private readonly plans = new Map<string, { signature: string; plan: CheckPlan }>();

  constructor(private readonly app: AppContext) {}

  private async signature(sql: Queryable, tenantId: string): Promise<string> {
    const [row] = await sql<{ signature: string }[]>`
      select coalesce((select updated_at::text from quality_settings where tenant_id = ${tenantId}), '') || '/' ||
             coalesce((select count(*) || ':' || max(updated_at)::text from quality_rules where tenant_id = ${tenantId}), '')
             as signature`;
    return row?.signature ?? '';
  }

  /** The tenant's plan if built and current, read in the caller's transaction; else PlanNeeded. */
  async planFor(sql: Queryable, tenantId: string): Promise<CheckPlan> {
    const cached = this.plans.get(tenantId);
    if (cached && cached.signature === (await this.signature(sql, tenantId))) return cached.plan;
    throw new PlanNeeded(tenantId);
  }

  async build(tenantId: string): Promise<void> {
    const signature = await this.signature(this.app.sql, tenantId);
    this.plans.set(tenantId, { signature, plan: await planOf(this.app, tenantId) });
  }
}
