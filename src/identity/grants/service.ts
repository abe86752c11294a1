import type { Context } from 'koa';
import { auditChange, type AuditEventType } from '../../platform/audit/log.js';
import {
  assertCovers,
  assertWithinCeiling,
  NO_RIGHTS,
  type AffectedPrincipal,
  type Rights,
} from '../../platform/auth/grant-ceiling.js';
import type { Principal, Permission } from '../../platform/auth/principal.js';
import type { AppContext } from '../../context.js';
import type { Queryable } from '../../platform/db/database.js';
import { notFound, validationFailed } from '../../platform/errors.js';
import { readScopes, scopeView, type ScopeBody } from './schema.js';
import {
  directRights,
  heldRights,
  lockTeam,
  replaceGrants,
  replaceScopes,
  unknownSources,
  type HeldRights,
  type Holder,
} from './store.js';

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
  const missing = await unknownSources(app.sql, principal.tenantId, [
    ...new Set(scopes.flatMap((s) => (s.sourceId ? [s.sourceId] : []))),
  ]);
  if (missing.length > 0) {
    throw validationFailed(
      missing.map((id) => ({ field: 'scopes', location: 'body' as const, message: `no source ${id} in this tenant` })),
    );
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

/** What a user is granted, whether active or not: what acting on it requires holding. */
const grantedTo = (user: HeldRights): Rights => ({
  superadmin: user.superadmin,
  permissions: user.permissions,
  scopes: user.scopes,
});

const userSubject = (user: HeldRights) => `user ${user.name} (${user.id})`;

/** What one principal a change touches holds: what it acts with now, and what it is granted. */
interface Holding {
  rights: Rights;
  granted: Rights;
}

/** The principals whose rights follow from a user or team: the user, or the team and each member. */
async function affectedBy(
  tx: Queryable,
  tenantId: string,
  target: RightsTarget,
  lock: boolean,
): Promise<Map<string, Holding>> {
  const held = new Map<string, Holding>();
  if ('teamId' in target.holder) {
    if (lock && !(await lockTeam(tx, tenantId, target.holder.teamId)))
      throw notFound('Team not found', { team_id: target.id });
    const own = await directRights(tx, target.holder);
    held.set(`team ${target.name}`, { rights: own, granted: own });
  }
  const who = 'teamId' in target.holder ? { teamId: target.holder.teamId } : { userIds: [target.holder.userId] };
  for (const user of await heldRights(tx, tenantId, who, lock))
    held.set(userSubject(user), { rights: rightsOfUser(user), granted: grantedTo(user) });
  return held;
}

const coverageOf = (held: Map<string, Holding>) =>
  [...held].map(([subject, { granted }]) => ({ subject, rights: granted }));

/**
 * Refuses (403) to act on a user or team unless the caller covers what it and each principal whose
 * rights follow from it hold (the team's members), locking them for the transaction: removing a
 * member or a team, and everything `changeRights` does, act on them.
 */
export async function assertActsOn(tx: Queryable, principal: Principal, target: RightsTarget): Promise<void> {
  assertCovers(principal, coverageOf(await affectedBy(tx, principal.tenantId, target, true)));
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
 * Makes a change to rights inside one transaction: the rows it touches are locked, the caller must
 * cover what each principal it touches holds beforehand (nobody acts on a principal holding more
 * than they do, not even to narrow it), the change is applied, the grant ceiling compares what each
 * affected principal holds before and after with the caller's rights, and the audit event is
 * written with the change. A refusal rolls it all back.
 */
export async function changeRights(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  change: RightsChange,
): Promise<void> {
  await app.sql.begin(async (tx) => {
    const held = await affectedBy(tx, principal.tenantId, change.target, true);
    const extra = change.alsoUsers?.length
      ? await heldRights(tx, principal.tenantId, { userIds: change.alsoUsers }, true)
      : [];
    // a member added is acted on with the team; the other members' rights do not move
    const actedOn =
      extra.length > 0
        ? new Map([...held].filter(([subject]) => subject === `team ${change.target.name}`))
        : new Map(held);
    for (const user of extra) {
      const holding = { rights: rightsOfUser(user), granted: grantedTo(user) };
      held.set(userSubject(user), holding);
      actedOn.set(userSubject(user), holding);
    }
    assertCovers(principal, coverageOf(actedOn));
    const before = new Map([...held].map(([subject, { rights }]) => [subject, rights]));
    if (change.handsOutTeam) before.set(`team ${change.target.name}`, NO_RIGHTS);
    await change.apply(tx);
    const after = new Map(
      [...(await affectedBy(tx, principal.tenantId, change.target, false))].map(([subject, { rights }]) => [
        subject,
        rights,
      ]),
    );
    for (const user of change.alsoUsers?.length
      ? await heldRights(tx, principal.tenantId, { userIds: change.alsoUsers })
      : []) {
      after.set(userSubject(user), rightsOfUser(user));
    }
    const affected: AffectedPrincipal[] = [...after].map(([subject, rights]) => ({
      subject,
      before: before.get(subject) ?? NO_RIGHTS,
      after: rights,
    }));
    assertWithinCeiling(principal, affected);
    const { type, id, name } = change.target;
    await auditChange(tx, app.audit, ctx, principal, change.event, { type, id, name }, change.details);
  });
}

/** Replaces one kind of direct right of a user or team, within the caller's ceiling; answers its direct rights. */
async function replaceRights(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  target: RightsTarget,
  details: Record<string, unknown>,
  apply: (tx: Queryable) => Promise<unknown>,
) {
  await changeRights(app, ctx, principal, { target, event: 'grant.changed', details, apply });
  return presentDirectRights(app, target.holder);
}

/** Replaces the permission grants of a user or team, within the caller's ceiling; answers its direct rights. */
export function setPermissions(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  target: RightsTarget,
  permissions: Permission[],
) {
  return replaceRights(app, ctx, principal, target, { permissions }, (tx) =>
    replaceGrants(tx, target.holder, permissions),
  );
}

/** Replaces the data scopes of a user or team, within the caller's ceiling; answers its direct rights. */
export async function setScopes(
  app: AppContext,
  ctx: Context,
  principal: Principal,
  target: RightsTarget,
  scopes: ScopeBody[],
) {
  const wanted = await checkedScopes(app, principal, scopes);
  return replaceRights(app, ctx, principal, target, { scopes }, (tx) => replaceScopes(tx, target.holder, wanted));
}

/** What users, teams and tokens read of a holder's grants, inside the caller's transaction. */
export { directRights, effectiveRights } from './store.js';
