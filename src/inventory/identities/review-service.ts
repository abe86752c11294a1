import type { Context } from 'koa';
import { uuidv7 } from 'uuidv7';
import type { AppContext } from '../../context.js';
import { actorOf, auditChange } from '../../platform/audit/log.js';
import { coversScope, seesAllData, type Principal } from '../../platform/auth/principal.js';
import { forbidden, notFound, unprocessable, validationFailed } from '../../platform/errors.js';
import { decodeCursor, encodeCursor } from '../../platform/http/cursor.js';
import { resolveIdentities } from './resolve.js';
import { cisById } from './resolve-store.js';
import {
  conflictById,
  conflictPage,
  decisionById,
  decisionPage,
  insertDecision,
  membersOf,
  saveRules,
  settleConflict,
  storedRules,
  tenantObservingAfter,
  undoDecision,
  type ConflictRow,
  type DecisionRow,
} from './review-store.js';
import { KIND_FIELDS, KIND_KEYS, KINDS, rulesInForce, type IdentityKind, type IdentityRules } from './rules.js';
import type { IdentityRulesBody, NewDecision } from './schema.js';

const iso = (d: Date | string) => new Date(d).toISOString();

const RULE_WORDS: Record<string, string> = {
  'machine-id': 'the same machine id',
  'product-uuid': 'the same product UUID',
  'hostname-and-address': 'the same host name and an address in common',
  hostname: 'the same host name',
  address: 'an address in common',
  'server-uuid': 'the same server UUID',
  'port-on-machine-id': 'a port on the same machine id',
  'port-on-product-uuid': 'a port on the same product UUID',
  'port-on-hostname-and-address': 'a port on the same host name and address',
  'port-on-hostname': 'a port on the same host name',
  'port-on-address': 'a port on an address in common',
};

/** Why a rule's match was not applied, for people. */
function explain(row: ConflictRow): string {
  const what = (Object.hasOwn(RULE_WORDS, row.rule) ? RULE_WORDS[row.rule] : undefined) ?? `rule ${row.rule}`;
  return (
    `Rule ${row.rule} matched ${row.groups.length} identities that share ${what} (${row.shared_values.join(', ')}), ` +
    'but stronger evidence keeps at least two of them apart (different machine ids or product UUIDs, a decision to ' +
    'keep them apart, or an earlier conflict over them), so none was merged. Merge them, keep them apart, or fix the source.'
  );
}

async function presentConflicts(app: AppContext, rows: readonly ConflictRow[]) {
  const members = new Map<string, Awaited<ReturnType<typeof membersOf>>[number]>();
  for (const kind of new Set(rows.map((r) => r.kind))) {
    const ids = [...new Set(rows.filter((r) => r.kind === kind).flatMap((r) => r.ci_ids))];
    for (const m of await membersOf(app.sql, ids, kind)) members.set(`${kind} ${m.ci_id}`, m);
  }
  return rows.map((row) => ({
    id: row.id,
    kind: row.kind,
    rule: row.rule,
    shared_values: row.shared_values,
    explanation: explain(row),
    groups: row.groups.map((group) =>
      group.flatMap((ci) => {
        const m = members.get(`${row.kind} ${ci}`);
        return m
          ? [{ ci_id: ci, name: m.name, ci_type: m.ci_type, source_id: m.source_id, identity_id: m.identity_id }]
          : [];
      }),
    ),
    status: row.status,
    raised_at: iso(row.raised_at),
    closed_at: row.closed_at ? iso(row.closed_at) : null,
    decision_id: row.decision_id,
  }));
}

/** The review queue: conflicts the principal sees every observation of, oldest first. */
export async function listConflicts(
  app: AppContext,
  principal: Principal,
  query: { status: 'open' | 'settled' | 'gone' | 'all'; limit: number; cursor?: string },
) {
  const binding = {
    tenantId: principal.tenantId,
    reader: principal,
    scope: 'identity-conflicts',
    sort: null,
    filters: { status: query.status },
  };
  const after = query.cursor ? (decodeCursor(app.config.secret, query.cursor, binding).key as [string, string]) : null;
  const rows = await conflictPage(app.sql, principal, query.status, query.limit, after);
  const page = rows.slice(0, query.limit);
  const last = page[page.length - 1];
  return {
    items: await presentConflicts(app, page),
    has_more: rows.length > query.limit,
    next_cursor:
      rows.length > query.limit && last
        ? encodeCursor(app.config.secret, binding, [iso(last.raised_at), last.id])
        : null,
  };
}

export const presentDecision = (d: DecisionRow) => ({
  ...d,
  made_at: iso(d.made_at),
  undone_at: d.undone_at ? iso(d.undone_at) : null,
});

/**
 * The CIs a decision names, each one the principal may see (404 otherwise, as if absent) and write
 * into (403): a decision moves what identities show, so it is a write on every CI it names.
 */
async function decidable(app: AppContext, principal: Principal, ids: readonly string[], kind: IdentityKind) {
  const members = (await membersOf(app.sql, ids, kind)).filter(
    (m) => m.tenant_id === principal.tenantId && coversScope(principal, m.source_id, m.scope_id),
  );
  const missing = ids.filter((id) => !members.some((m) => m.ci_id === id));
  if (missing.length > 0) throw notFound('Configuration item not found', { ci_ids: missing });
  return members;
}

function checkShape(body: NewDecision, kind: IdentityKind, members: Awaited<ReturnType<typeof decidable>>) {
  if (body.action !== 'pin') {
    if (body.ci_ids.length < 2)
      throw validationFailed([
        { field: 'ci_ids', location: 'body', message: `${body.action} needs at least two observations` },
      ]);
    if (body.field !== undefined || body.source_id !== undefined)
      throw validationFailed([{ field: 'field', location: 'body', message: 'field and source_id belong to pin only' }]);
    return;
  }
  if (!body.field || !body.source_id)
    throw validationFailed([{ field: 'field', location: 'body', message: 'pin needs field and source_id' }]);
  const fields = KIND_FIELDS[kind];
  if (!fields.includes(body.field))
    throw validationFailed([{ field: 'field', location: 'body', message: `must be one of ${fields.join(', ')}` }]);
  if (members.some((m) => m.identity_id === null))
    throw unprocessable('A pin names observations of an identity', { reason: 'not_observing' });
}

/** The conflict a decision settles: open, over CIs the principal sees all of, and named by the decision. */
async function settleable(app: AppContext, principal: Principal, body: NewDecision) {
  const conflict = await conflictById(app.sql, principal.tenantId, body.conflict_id!);
  // a conflict is the principal's to settle only when it sees all it is about
  const visible =
    conflict &&
    (await decidable(app, principal, conflict.ci_ids, conflict.kind).then(
      () => true,
      () => false,
    ));
  if (!conflict || !visible) throw notFound('Conflict not found', { conflict_id: body.conflict_id });
  if (conflict.status !== 'open')
    throw unprocessable('The conflict is not open any more', { conflict_id: conflict.id, status: conflict.status });
  if (!body.ci_ids.some((ci) => conflict.ci_ids.includes(ci)))
    throw unprocessable('The decision names none of the conflict’s observations', { conflict_id: conflict.id });
  if (body.kind !== undefined && body.kind !== conflict.kind)
    throw unprocessable('The decision’s kind is not the conflict’s', { conflict_id: conflict.id, kind: conflict.kind });
  return conflict;
}

/** Records a person's decision, settles the conflict it names, and resolves what it concerns again; audited. */
export async function decide(app: AppContext, ctx: Context, principal: Principal, body: NewDecision) {
  const conflict = body.conflict_id ? await settleable(app, principal, body) : undefined;
  const kind = conflict?.kind ?? body.kind ?? 'host';
  const members = await decidable(app, principal, body.ci_ids, kind);
  checkShape(body, kind, members);
  const now = app.now();
  const id = uuidv7();
  const decision: Omit<DecisionRow, 'undone_at' | 'undone_by'> = {
    id,
    kind,
    action: body.action,
    ci_ids: [...body.ci_ids].sort(),
    field: body.field ?? null,
    source_id: body.source_id ?? null,
    conflict_id: body.conflict_id ?? null,
    reason: body.reason ?? null,
    made_by: actorOf(principal),
    made_at: now,
  };
  await app.sql.begin(async (tx) => {
    if (body.conflict_id && !(await settleConflict(tx, body.conflict_id, id, now)))
      throw unprocessable('The conflict is not open any more', { conflict_id: body.conflict_id });
    await insertDecision(tx, principal.tenantId, decision);
    await resolveIdentities(tx, principal.tenantId, await cisById(tx, body.ci_ids), [], now);
    await auditChange(
      tx,
      app.audit,
      ctx,
      principal,
      'identity.decided',
      { type: 'identity_decision', id },
      {
        action: body.action,
        kind,
        ci_ids: decision.ci_ids,
        ...(body.field ? { field: body.field, source_id: body.source_id } : {}),
        ...(body.conflict_id ? { conflict_id: body.conflict_id } : {}),
      },
    );
  });
  return presentDecision({ ...decision, undone_at: null, undone_by: null });
}

/** Undoes a decision: the identities are resolved again as if it had never been made; audited. */
export async function undo(app: AppContext, ctx: Context, principal: Principal, decisionId: string) {
  const found = await decisionById(app.sql, principal.tenantId, decisionId);
  if (!found) throw notFound('Decision not found', { decision_id: decisionId });
  await decidable(app, principal, found.ci_ids, found.kind);
  const now = app.now();
  await app.sql.begin(async (tx) => {
    if (!(await undoDecision(tx, decisionId, actorOf(principal), now))) return;
    await resolveIdentities(tx, principal.tenantId, await cisById(tx, found.ci_ids), [], now);
    await auditChange(
      tx,
      app.audit,
      ctx,
      principal,
      'identity.decision_undone',
      { type: 'identity_decision', id: decisionId },
      {
        action: found.action,
        ci_ids: found.ci_ids,
      },
    );
  });
  return presentDecision((await decisionById(app.sql, principal.tenantId, decisionId))!);
}

export async function listDecisions(
  app: AppContext,
  principal: Principal,
  query: { include_undone: boolean; limit: number; cursor?: string },
) {
  const binding = {
    tenantId: principal.tenantId,
    reader: principal,
    scope: 'identity-decisions',
    sort: null,
    filters: { include_undone: query.include_undone },
  };
  const after = query.cursor ? (decodeCursor(app.config.secret, query.cursor, binding).key as [string, string]) : null;
  const rows = await decisionPage(app.sql, principal, query.include_undone, query.limit, after);
  const page = rows.slice(0, query.limit);
  const last = page[page.length - 1];
  return {
    items: page.map(presentDecision),
    has_more: rows.length > query.limit,
    next_cursor:
      rows.length > query.limit && last ? encodeCursor(app.config.secret, binding, [iso(last.made_at), last.id]) : null,
  };
}

export async function identityRules(app: AppContext, principal: Principal) {
  const stored = await storedRules(app.sql, principal.tenantId);
  return {
    rules: rulesInForce(stored?.rules as Partial<IdentityRules> | undefined),
    shipped: !stored,
    updated_at: stored ? iso(stored.updated_at) : null,
  };
}

/** Each kind's rules name each rule once, and only keys that kind's observations carry. */
function checkRules(body: IdentityRulesBody) {
  for (const kind of KINDS) {
    const rules = body[kind];
    if (!rules) continue;
    const names = rules.identification.map((r) => r.name);
    if (new Set(names).size !== names.length)
      throw validationFailed([
        { field: `${kind}.identification`, location: 'body', message: 'rule names must be unique' },
      ]);
    const foreign = rules.identification.flatMap((r) => r.keys).filter((k) => !KIND_KEYS[kind].includes(k));
    if (foreign.length > 0)
      throw validationFailed([
        {
          field: `${kind}.identification`,
          location: 'body',
          message: `a ${kind} has no key ${foreign[0]}; its keys are ${KIND_KEYS[kind].join(', ')}`,
        },
      ]);
  }
}

/**
 * Replaces the tenant's rules and resolves its host observations again under them, page by page,
 * before answering (they are its nodes, hosts and servers, not every CI). Only a principal that
 * sees all the tenant's data may: the rules shape what everyone's identities are.
 */
export async function replaceRules(app: AppContext, ctx: Context, principal: Principal, body: IdentityRulesBody) {
  if (!seesAllData(principal))
    throw forbidden('Identification rules apply to the whole tenant: only a principal holding all its data sets them', {
      reason: 'scoped',
    });
  checkRules(body);
  const now = app.now();
  await app.sql.begin(async (tx) => {
    const stored = (await storedRules(tx, principal.tenantId))?.rules as Partial<IdentityRules> | undefined;
    await saveRules(tx, principal.tenantId, { ...stored, ...body }, now);
    await auditChange(
      tx,
      app.audit,
      ctx,
      principal,
      'identity.rules_changed',
      { type: 'identity_rules', id: principal.tenantId },
      Object.fromEntries(Object.entries(body).map(([kind, rules]) => [kind, rules!.identification.map((r) => r.name)])),
    );
  });
  let after = '00000000-0000-0000-0000-000000000000';
  for (;;) {
    const page = await tenantObservingAfter(app.sql, principal.tenantId, after, 500);
    if (page.length === 0) break;
    await app.sql.begin(async (tx) => resolveIdentities(tx, principal.tenantId, await cisById(tx, page), [], now));
    after = page[page.length - 1]!;
  }
  return identityRules(app, principal);
}
