import type { Context } from 'koa';
import type { Sql } from 'postgres';
import { uuidv7 } from 'uuidv7';
import type { AppContext } from '../../context.js';
import { actorOf, auditChange, type AuditEventType } from '../../platform/audit/log.js';
import { seesAllData, type Principal } from '../../platform/auth/principal.js';
import { conflict, forbidden, notFound, validationFailed } from '../../platform/errors.js';
import { standingMatch } from '../../inventory/queries/service.js';
import { checkChangeFields, isChangeField } from './match.js';
import { startRun, runById, type RunRow } from './runs-store.js';
import {
  deleteRule,
  insertRule,
  ruleById,
  rulesOf,
  updateRule,
  type RuleAction,
  type RuleRow,
  type RuleWrite,
} from './store.js';

export { installChangeRules } from './compile.js';
export { ChangeRulesWorker, catchUpApplications } from './worker.js';
import { foldWindowOf, writeFoldWindow } from './settings-store.js';

export interface RuleBody {
  name: string;
  match: string;
  action: RuleAction;
  kind?: string | null;
  severity?: string | null;
  position?: number;
}

/** Rules shape every reader's history in the tenant: only a principal holding all its data changes them (403 `scoped`). */
function mayShape(principal: Principal): void {
  if (!seesAllData(principal))
    throw forbidden('Change rules apply to the whole tenant: only a principal holding all its data changes them', {
      reason: 'scoped',
    });
}

export function presentRule(rule: RuleRow) {
  return {
    id: rule.id,
    name: rule.name,
    match: rule.match,
    action: rule.action,
    kind: rule.kind,
    severity: rule.severity,
    position: rule.position,
    created_at: new Date(rule.created_at).toISOString(),
    updated_at: new Date(rule.updated_at).toISOString(),
  };
}

/** A rule body checked: its match (the query language over the CI, `change.*` over the change) and what its action needs. */
async function checked(app: AppContext, body: RuleBody): Promise<RuleWrite> {
  const match = await standingMatch(app, body.match, { foreign: isChangeField });
  checkChangeFields(body.match, match);
  const kind = body.kind ?? null;
  const severity = body.severity ?? null;
  if (body.action === 'classify' && kind === null && severity === null)
    throw validationFailed([
      { field: 'kind', location: 'body', message: 'a classify rule sets kind, severity or both' },
    ]);
  if (body.action !== 'classify' && (kind !== null || severity !== null))
    throw validationFailed([
      { field: kind !== null ? 'kind' : 'severity', location: 'body', message: 'only a classify rule sets it' },
    ]);
  return { name: body.name, match: body.match, action: body.action, kind, severity, position: body.position };
}

async function audited(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  type: AuditEventType,
  target: { type: string; id: string; name?: string | null },
  write: (tx: Sql) => Promise<void>,
  details: Record<string, unknown> = {},
) {
  await app.sql.begin(async (transaction) => {
    const tx = transaction as unknown as Sql;
    await write(tx);
    await auditChange(tx, app.audit, ctx, principal, type, target, details);
  });
}

export async function listRules(app: AppContext, principal: Principal) {
  return { items: (await rulesOf(app.sql, principal.tenantId)).map(presentRule) };
}

export async function ruleOf(app: AppContext, principal: Principal, id: string) {
  const rule = await ruleById(app.sql, principal.tenantId, id);
  if (!rule) throw notFound('No change rule with this id', { rule_id: id });
  return presentRule(rule);
}

/** A new rule: it shapes records written from now on (`POST /change-rules/apply` takes it back over history). Audited. */
export async function createRule(app: AppContext, ctx: Context, principal: Principal, body: RuleBody) {
  mayShape(principal);
  const rule = await checked(app, body);
  const id = uuidv7();
  await audited(
    app,
    ctx,
    principal,
    'change_rule.created',
    { type: 'change_rule', id, name: rule.name },
    async (tx) => {
      if (!(await insertRule(tx, principal.tenantId, id, rule, app.now())))
        throw conflict(`A change rule named "${rule.name}" exists already`);
    },
  );
  return ruleOf(app, principal, id);
}

export async function changeRule(app: AppContext, ctx: Context, principal: Principal, id: string, body: RuleBody) {
  mayShape(principal);
  const rule = await checked(app, body);
  await audited(
    app,
    ctx,
    principal,
    'change_rule.changed',
    { type: 'change_rule', id, name: rule.name },
    async (tx) => {
      const outcome = await updateRule(tx, principal.tenantId, id, rule, app.now());
      if (outcome === undefined) throw notFound('No change rule with this id', { rule_id: id });
      if (outcome === 'taken') throw conflict(`A change rule named "${rule.name}" exists already`);
    },
  );
  return ruleOf(app, principal, id);
}

export async function removeRule(app: AppContext, ctx: Context, principal: Principal, id: string): Promise<void> {
  mayShape(principal);
  await audited(app, ctx, principal, 'change_rule.deleted', { type: 'change_rule', id }, async (tx) => {
    if (!(await deleteRule(tx, principal.tenantId, id))) throw notFound('No change rule with this id', { rule_id: id });
  });
}

export interface ApplyBody {
  from: string;
  until: string;
}

const DAY_MS = 86_400_000;
/** The longest window one application takes: a quarter of history is about a night's batches. */
const MAX_APPLY_DAYS = 92;

/** Starts a re-application of the shipped rules and the tenant's rules to a window of history; the worker does it in batches. Audited. */
export async function applyRules(app: AppContext, ctx: Context, principal: Principal, body: ApplyBody) {
  mayShape(principal);
  const from = Date.parse(body.from);
  const until = Date.parse(body.until);
  if (!(until > from))
    throw validationFailed([{ field: 'until', location: 'body', message: 'must be later than from' }]);
  if (until - from > MAX_APPLY_DAYS * DAY_MS)
    throw validationFailed([
      { field: 'until', location: 'body', message: `a window spans ${MAX_APPLY_DAYS} days at most: apply in parts` },
    ]);
  const id = uuidv7();
  await audited(
    app,
    ctx,
    principal,
    'change_rule.applied',
    { type: 'change_rule_run', id },
    (tx) =>
      startRun(tx, {
        id,
        tenantId: principal.tenantId,
        from: body.from,
        until: body.until,
        by: actorOf(principal).name ?? principal.id,
      }),
    { from: body.from, until: body.until },
  );
  return runOf(app, principal, id);
}

// the upgrade's application of the rules covers all of history, from -infinity to infinity
const bound = (at: Date) => (Number.isFinite(at.getTime()) ? at.toISOString() : null);

export function presentRun(run: RunRow) {
  return {
    id: run.id,
    from: bound(new Date(run.from_at)),
    until: bound(new Date(run.until_at)),
    records: Number(run.records),
    changed: Number(run.changed),
    done: run.finished_at !== null,
    created_at: new Date(run.created_at).toISOString(),
    finished_at: run.finished_at === null ? null : new Date(run.finished_at).toISOString(),
  };
}

export async function runOf(app: AppContext, principal: Principal, id: string) {
  const run = await runById(app.sql, principal.tenantId, id);
  if (!run) throw notFound('No application of the change rules with this id', { run_id: id });
  return presentRun(run);
}

export async function changeSettings(app: AppContext, principal: Principal) {
  return { fold_window_seconds: await foldWindowOf(app.sql, principal.tenantId) };
}

/** Sets the fold window: folds opened from now on use it (folds already made stay). Audited. */
export async function replaceChangeSettings(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  body: { fold_window_seconds: number },
) {
  mayShape(principal);
  await audited(
    app,
    ctx,
    principal,
    'change_settings.changed',
    { type: 'change_settings', id: principal.tenantId },
    (tx) => writeFoldWindow(tx, principal.tenantId, body.fold_window_seconds, app.now()),
    { fold_window_seconds: body.fold_window_seconds },
  );
  return changeSettings(app, principal);
}
