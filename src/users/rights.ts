import type { Context } from 'koa';
import { auditAction } from '../audit/log.js';
import type { Principal, Permission } from '../auth/principal.js';
import type { AppContext } from '../context.js';
import { validationFailed } from '../http/errors.js';
import { readScopes, scopeView, type ScopeBody } from './schema.js';
import { directRights, replaceGrants, replaceScopes, unknownSources, type Holder } from './store.js';

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

/** Replaces the permission grants of a user or team, audited; answers its direct rights. */
export async function setPermissions(app: AppContext, ctx: Context, principal: Principal, target: RightsTarget, permissions: Permission[]) {
  await app.sql.begin((tx) => replaceGrants(tx, target.holder, permissions));
  auditAction(app.audit, ctx, principal, 'grant.changed', { type: target.type, id: target.id, name: target.name }, { permissions });
  return presentDirectRights(app, target.holder);
}

/** Replaces the data scopes of a user or team, audited; answers its direct rights. */
export async function setScopes(app: AppContext, ctx: Context, principal: Principal, target: RightsTarget, scopes: ScopeBody[]) {
  const wanted = await checkedScopes(app, principal, scopes);
  await app.sql.begin((tx) => replaceScopes(tx, target.holder, wanted));
  auditAction(app.audit, ctx, principal, 'grant.changed', { type: target.type, id: target.id, name: target.name }, { scopes });
  return presentDirectRights(app, target.holder);
}
