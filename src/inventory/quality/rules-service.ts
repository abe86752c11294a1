import type { Context } from 'koa';
import { uuidv7 } from 'uuidv7';
import type { AppContext } from '../../context.js';
import { actorOf, auditChange, type AuditEventType } from '../../platform/audit/log.js';
import type { Principal } from '../../platform/auth/principal.js';
import { mayShapeScores } from './access.js';
import { and, columnsOf, visibleTo } from '../../platform/auth/scope.js';
import { conflict, notFound } from '../../platform/errors.js';
import { standingCondition, standingMatch } from '../queries/service.js';
import { ruleCounts } from './counts-store.js';
import {
  deleteRule,
  insertRule,
  ruleById,
  rulesOf,
  startWalk,
  updateRule,
  type RuleRow,
  type RuleWrite,
} from './store.js';

export interface RuleBody {
  name: string;
  description?: string | null;
  applies_to: string;
  requires: string;
}

const rate = (applies: number, passes: number) => (applies > 0 ? Math.round((1000 * passes) / applies) / 10 : null);

function present(rule: RuleRow, counted: { applies: number; passes: number } | undefined) {
  const applies = counted?.applies ?? 0;
  const passes = counted?.passes ?? 0;
  return {
    id: rule.id,
    name: rule.name,
    description: rule.description,
    applies_to: rule.applies_to,
    requires: rule.requires,
    created_by: rule.created_by,
    created_at: new Date(rule.created_at).toISOString(),
    updated_at: new Date(rule.updated_at).toISOString(),
    checking: rule.walk_after !== null,
    applies,
    passes,
    pass_rate: rate(applies, passes),
  };
}

/** Each rule's counted applications and passes, among the CIs the principal may see. */
async function countedByRule(app: AppContext, principal: Principal) {
  const byRule = new Map<string, { applies: number; passes: number }>();
  for (const row of await ruleCounts(app.sql, principal, {})) {
    const entry = byRule.get(row.rule_id) ?? { applies: 0, passes: 0 };
    entry.applies += row.applies;
    entry.passes += row.passes;
    byRule.set(row.rule_id, entry);
  }
  return byRule;
}

export async function listRules(app: AppContext, principal: Principal) {
  const counted = await countedByRule(app, principal);
  return { items: (await rulesOf(app.sql, principal.tenantId)).map((rule) => present(rule, counted.get(rule.id))) };
}

export async function ruleOf(app: AppContext, principal: Principal, id: string) {
  const rule = await ruleById(app.sql, principal.tenantId, id);
  if (!rule) throw notFound('No quality rule with this id');
  return present(rule, (await countedByRule(app, principal)).get(id));
}

async function checked(app: AppContext, body: RuleBody): Promise<RuleWrite> {
  await standingMatch(app, body.applies_to);
  await standingMatch(app, body.requires);
  return {
    name: body.name,
    description: body.description ?? null,
    applies_to: body.applies_to,
    requires: body.requires,
  };
}

async function audited(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  type: AuditEventType,
  id: string,
  write: (tx: AppContext['sql']) => Promise<void>,
  name: string,
) {
  await app.sql.begin(async (transaction) => {
    const tx = transaction as unknown as AppContext['sql'];
    await write(tx);
    await auditChange(tx, app.audit, ctx, principal, type, { type: 'quality_rule', id, name });
  });
}

/** A new rule: checked at once against the stored CIs by the worker (`checking` until done). Audited. */
export async function createRule(app: AppContext, ctx: Context, principal: Principal, body: RuleBody) {
  mayShapeScores(principal, 'rules');
  const rule = await checked(app, body);
  const id = uuidv7();
  const now = app.now();
  await audited(
    app,
    ctx,
    principal,
    'quality.rule_created',
    id,
    async (tx) => {
      if (!(await insertRule(tx, id, principal.tenantId, rule, actorOf(principal), now)))
        throw conflict(`A quality rule named "${rule.name}" exists already`);
      await startWalk(tx, principal.tenantId, id, now);
    },
    rule.name,
  );
  return ruleOf(app, principal, id);
}

/** Rewrites a rule; its verdicts are checked again from the start. Audited. */
export async function changeRule(app: AppContext, ctx: Context, principal: Principal, id: string, body: RuleBody) {
  mayShapeScores(principal, 'rules');
  const rule = await checked(app, body);
  const now = app.now();
  await audited(
    app,
    ctx,
    principal,
    'quality.rule_changed',
    id,
    async (tx) => {
      const outcome = await updateRule(tx, principal.tenantId, id, rule, now);
      if (outcome === undefined) throw notFound('No quality rule with this id');
      if (outcome === 'taken') throw conflict(`A quality rule named "${rule.name}" exists already`);
      await startWalk(tx, principal.tenantId, id, now);
    },
    rule.name,
  );
  return ruleOf(app, principal, id);
}

export async function removeRule(app: AppContext, ctx: Context, principal: Principal, id: string) {
  mayShapeScores(principal, 'rules');
  const rule = await ruleById(app.sql, principal.tenantId, id);
  if (!rule) throw notFound('No quality rule with this id');
  await audited(
    app,
    ctx,
    principal,
    'quality.rule_deleted',
    id,
    async (tx) => {
      await deleteRule(tx, principal.tenantId, id);
    },
    rule.name,
  );
}

const SAMPLE = 20;

/**
 * What a rule would say now over the active CIs the principal may see, without saving it: how
 * many it applies to and pass, and some that fail. Reads the CIs `applies_to` selects (the rule
 * editor's preview); the query language's indexes serve it as they serve a query.
 */
export async function previewRule(app: AppContext, principal: Principal, body: Omit<RuleBody, 'name'>) {
  const appliesTo = await standingMatch(app, body.applies_to);
  const requires = await standingMatch(app, body.requires);
  const started = performance.now();
  const { sql } = app;
  const now = app.now();
  const where = and(sql, [
    visibleTo(sql, principal, columnsOf('ci')),
    sql`ci.status = 'active'`,
    // bare, not wrapped: the match's indexes serve it (a null is no match in a where clause either)
    standingCondition(sql, principal.tenantId, appliesTo, 'ci', now),
  ]);
  const passes = sql`coalesce(${standingCondition(sql, principal.tenantId, requires, 'ci', now)}, false)`;
  const [counted] = await sql<{ applies: number; passes: number }[]>`
    select count(*)::float8 as applies, count(*) filter (where ${passes})::float8 as passes
    from configuration_items ci where ${where}`;
  const failing = await sql<{ ci_id: string; name: string; ci_type: string; namespace: string | null }[]>`
    select ci.ci_id, ci.name, ci.ci_type, ci.namespace from configuration_items ci
    where ${where} and not ${passes} order by ci.ci_id limit ${SAMPLE}`;
  const applies = counted?.applies ?? 0;
  const passed = counted?.passes ?? 0;
  return {
    applies,
    passes: passed,
    pass_rate: rate(applies, passed),
    failing,
    took_ms: Math.round(performance.now() - started),
  };
}
