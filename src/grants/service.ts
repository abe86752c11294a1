import type { Context } from 'koa';
import { auditChange, type AuditEventType } from '../audit/log.js';
import { assertWithinCeiling, NO_RIGHTS, type AffectedPrincipal, type Rights } from '../auth/grant-ceiling.js';
import type { Principal, Permission } from '../auth/principal.js';
import type { AppContext } from '../context.js';
import type { Queryable } from '../db/database.js';
import { notFound, validationFailed } from '../errors.js';
import { readScopes, scopeView, type ScopeBody } from './schema.js';
import { directRights, heldRights, lockTeam, replaceGrants, replaceScopes, unknownSources, type HeldRights, type Holder } from './store.js';

/** Whose rights change, as the audit log names it. */
export interface RightsTarget {
  holder: Holder;
  type: 'user' | 'team';
  id: string;
  name: string;
}

/** Scopes must name sources of the caller's tenant: anything else is a 422 naming the source. */
export async function checkedScopes(app: AppContext, principal: Principal, body: readonly ScopeBody[]) {
  const scopes = readScopes(body);
  const missing = await unknownSources(app.sql, principal.tenantId, [...new Set(scopes.flatMap((s) => (s.sourceId ? [s.sourceId] : [])))]);
  if (missing.length > 0) {
    throw validationFailed(missing.map((id) => ({ field: 'scopes', location: 'body' as const, message: `no source ${id} in this tenant` })));
  }
  return scopes;
}

/** A user's or team's own rights, as the rights routes answer them. */
export async function presentDirectRights(app: AppContext, holder: Holder) {
  const direct = await directRights(app.sql, holder);
  return { permissions: direct.permissions, scopes: direct.scopes.map(scopeView) };
}

/** What a user can act with: nothing while deactivated. */
export const rightsOfUser = (user: Pick<HeldRights, 'superadmin' | 'active' | 'permissions' | 'scopes'>): Rights =>
  user.active ? { superadmin: user.superadmin, permissions: user.permissions, scopes: user.scopes } : NO_RIGHTS;

/** The principals whose rights follow from a user or team: the user, or the team and each member. */
async function affectedBy(tx: Queryable, tenantId: string, target: RightsTarget, lock: boolean): Promise<Map<string, Rights>> {
  const rights = new Map<string, Rights>();
  if ('teamId' in target.holder) {
    if (lock && !(await lockTeam(tx, tenantId, target.holder.teamId))) throw notFound('Team not found', { team_id: target.id });
    const own = await directRights(tx, target.holder);
    rights.set(`team ${target.name}`, own);
  }
  const who = 'teamId' in target.holder ? { teamId: target.holder.teamId } : { userIds: [target.holder.userId] };
  for (const user of await heldRights(tx, tenantId, who, lock)) rights.set(`user ${user.name} (${user.id})`, rightsOfUser(user));
  return rights;
}

export interface RightsChange {
  target: RightsTarget;
  /** Users whose rights the change also moves (a member added to the team). */
  alsoUsers?: readonly string[];
  /** The team's own rights count as handed out by this change (adding a member hands them to it). */
  handsOutTeam?: boolean;
  event: AuditEventType;
  details: Record<string, unknown>;
  apply: (tx: Queryable) => Promise<unknown>;
}

/**
 * Makes a change to rights inside one transaction: the rows it touches are locked, the change is
 * applied, the grant ceiling compares what each affected principal holds before and after with
 * the caller's rights, and the audit event is written with the change. A refusal rolls it all back.
 */
export async function changeRights(app: AppContext, ctx: Context, principal: Principal, change: RightsChange): Promise<void> {
  await app.sql.begin(async (tx) => {
    const before = await affectedBy(tx, principal.tenantId, change.target, true);
    if (change.handsOutTeam) before.set(`team ${change.target.name}`, NO_RIGHTS);
    const extra = change.alsoUsers?.length ? await heldRights(tx, principal.tenantId, { userIds: change.alsoUsers }, true) : [];
    for (const user of extra) before.set(`user ${user.name} (${user.id})`, rightsOfUser(user));
    await change.apply(tx);
    const after = await affectedBy(tx, principal.tenantId, change.target, false);
    for (const user of change.alsoUsers?.length ? await heldRights(tx, principal.tenantId, { userIds: change.alsoUsers }) : []) {
      after.set(`user ${user.name} (${user.id})`, rightsOfUser(user));
    }
    const affected: AffectedPrincipal[] = [...after].map(([subject, rights]) => ({ subject, before: before.get(subject) ?? NO_RIGHTS, after: rights }));
    assertWithinCeiling(principal, affected);
    const { type, id, name } = change.target;
    await auditChange(tx, app.audit, ctx, principal, change.event, { type, id, name }, change.details);
  });
}

/** Replaces one kind of direct right of a user or team, within the caller's ceiling; answers its direct rights. */
async function replaceRights(app: AppContext, ctx: Context, principal: Principal, target: RightsTarget, details: Record<string, unknown>, apply: (tx: Queryable) => Promise<unknown>) {
  await changeRights(app, ctx, principal, { target, event: 'grant.changed', details, apply });
  return presentDirectRights(app, target.holder);
}

/** Replaces the permission grants of a user or team, within the caller's ceiling; answers its direct rights. */
export function setPermissions(app: AppContext, ctx: Context, principal: Principal, target: RightsTarget, permissions: Permission[]) {
  return replaceRights(app, ctx, principal, target, { permissions }, (tx) => replaceGrants(tx, target.holder, permissions));
}

/** Replaces the data scopes of a user or team, within the caller's ceiling; answers its direct rights. */
export async function setScopes(app: AppContext, ctx: Context, principal: Principal, target: RightsTarget, scopes: ScopeBody[]) {
  const wanted = await checkedScopes(app, principal, scopes);
  return replaceRights(app, ctx, principal, target, { scopes }, (tx) => replaceScopes(tx, target.holder, wanted));
}
