import { forbidden } from '../errors.js';
import { everyPermission, normalizeScopes, type DataScope, type Permission, type Principal } from './principal.js';

/**
 * The grant ceiling: nobody hands out rights they do not hold. Every route that creates a
 * credential or changes a grant, a scope, a membership or whether a user may act goes through
 * `assertWithinCeiling` with the rights each principal it touches holds before and after the
 * change; these functions are pure, so the rule is tested apart from the routes.
 */

/** What a principal holds, or would hold once a change is made. */
export interface Rights {
  /** A superadmin holds everything there is, now and later. */
  superadmin?: boolean;
  permissions: Iterable<Permission>;
  /** 'all' is every source; a list names sources or instances of them (raw rows are accepted). */
  scopes: 'all' | readonly DataScope[];
}

export const NO_RIGHTS: Rights = { permissions: [], scopes: [] };

/** The part of some rights another principal does not hold. */
export interface Excess {
  permissions: Permission[];
  scopes: DataScope[];
  superadmin: boolean;
}

/** One principal a change touches: a key or token to be issued (no `before`), a user, a team. */
export interface AffectedPrincipal {
  /** How the refusal names it: "the new key", "user Ada", "team platform". */
  subject: string;
  before?: Rights;
  after: Rights;
}

const EVERYTHING_SCOPE: DataScope = { sourceId: null, scopeId: null };

/** The rights a caller acts with: a superadmin's are unbounded. */
export function rightsOf(principal: Principal): Rights {
  return principal.superadmin
    ? { superadmin: true, permissions: everyPermission(), scopes: 'all' }
    : { permissions: principal.permissions, scopes: principal.scopes };
}

/**
 * Containment as the data scopes define it: (null, null) covers everything, (source, null) every
 * instance of that source, (source, instance) that instance only.
 */
export function scopeCovered(held: 'all' | readonly DataScope[], scope: DataScope): boolean {
  const normal = held === 'all' ? 'all' : normalizeScopes(held);
  if (normal === 'all') return true;
  if (scope.sourceId === null) return false;
  return normal.some((h) => h.sourceId === scope.sourceId && (h.scopeId === null || h.scopeId === scope.scopeId));
}

/** What `wanted` holds that `held` does not; undefined when `held` covers all of it. */
export function beyond(held: Rights, wanted: Rights): Excess | undefined {
  if (held.superadmin) return undefined;
  const heldPermissions = new Set(held.permissions);
  const wantedPermissions = wanted.superadmin ? everyPermission() : new Set(wanted.permissions);
  const permissions = [...wantedPermissions].filter((p) => !heldPermissions.has(p)).sort();
  const wantedScopes = wanted.superadmin || wanted.scopes === 'all' ? 'all' : normalizeScopes(wanted.scopes);
  const scopes =
    wantedScopes === 'all'
      ? isAll(held.scopes)
        ? []
        : [EVERYTHING_SCOPE]
      : wantedScopes.filter((scope) => !scopeCovered(held.scopes, scope));
  const superadmin = wanted.superadmin === true;
  return permissions.length > 0 || scopes.length > 0 || superadmin ? { permissions, scopes, superadmin } : undefined;
}

const isAll = (scopes: 'all' | readonly DataScope[]) => scopes === 'all' || normalizeScopes(scopes) === 'all';

/** Whether a change gives a principal anything it did not hold before. */
export const grows = (before: Rights, after: Rights): boolean => beyond(before, after) !== undefined;

/** Whether `held` covers all of `wanted`: every permission and data scope, and superadmin only if `held` is superadmin. */
export const covers = (held: Rights, wanted: Rights): boolean => beyond(held, wanted) === undefined;

function refusal(message: string, subject: string, excess: Excess) {
  return forbidden(message, {
    reason: 'exceeds_own_rights',
    subject,
    exceeding: {
      permissions: excess.permissions,
      scopes: excess.scopes.map((s) => ({ source_id: s.sourceId, scope_id: s.scopeId })),
      superadmin: excess.superadmin,
    },
  });
}

/**
 * Acting on a principal requires holding what it holds: minting a user's tokens, listing or
 * revoking them, changing its grants, scopes, memberships or activation, and changing or
 * removing what it owns. Refuses (403 `exceeds_own_rights`, audited as `permission.denied`) when
 * any principal named holds something the caller does not; superadmins cover everyone, and a
 * superadmin is covered only by a superadmin. `rights` are what the principal is granted, active
 * or not (a deactivated user's rights come back with it).
 */
export function assertCovers(caller: Principal, held: readonly { subject: string; rights: Rights }[]): void {
  const ceiling = rightsOf(caller);
  for (const { subject, rights } of held) {
    const excess = beyond(ceiling, rights);
    if (excess) throw refusal(`Refused: ${subject} holds rights you do not hold yourself`, subject, excess);
  }
}

/**
 * Refuses (403, audited as `permission.denied` by the error middleware) a change that gives any
 * principal it touches something new while that principal would then hold more than the caller.
 * Comparing everything the principal then holds, not only what is added, closes combinations: a
 * permission granted to a team whose member already holds a wider scope through another grant.
 * Narrowing and removing never grow anything, so they stay open to whoever may make the change.
 */
export function assertWithinCeiling(caller: Principal, affected: readonly AffectedPrincipal[]): void {
  const ceiling = rightsOf(caller);
  for (const principal of affected) {
    if (principal.before && !grows(principal.before, principal.after)) continue;
    const excess = beyond(ceiling, principal.after);
    if (excess)
      throw refusal(
        `Refused: ${principal.subject} would hold rights you do not hold yourself`,
        principal.subject,
        excess,
      );
  }
}
