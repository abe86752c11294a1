import type { Context } from 'koa';
import { requestFacts } from '../../platform/audit/log.js';
import type { ProviderIdentity } from '../../platform/auth/sso.js';
import type { AppContext } from '../../context.js';
import { signInSsoUser, syncGroupTeams } from '../users/service.js';

/**
 * The user behind a provider identity, created at its first sign-in, with the teams its groups
 * name; the user and the memberships its groups gave are recorded in the same transaction.
 */
export async function signInWithIdentity(
  app: AppContext,
  ctx: Context,
  tenantId: string,
  identity: ProviderIdentity,
  now: Date,
) {
  return app.sql.begin(async (tx) => {
    const signedIn = await signInSsoUser(tx, tenantId, identity, now);
    if (signedIn.outcome !== 'signed_in') return { signedIn, teams: undefined };
    const teams =
      identity.groups === undefined ? undefined : await syncGroupTeams(tx, tenantId, signedIn.user.id, identity.groups);
    // the user and the memberships its groups gave are recorded with them
    const { user } = signedIn;
    const recorded = {
      tenantId,
      outcome: 'success' as const,
      actor: { kind: 'user' as const, id: user.id, name: user.name },
      target: { type: 'user', id: user.id, name: user.name },
      ...requestFacts(ctx),
    };
    if (signedIn.created) await app.audit.writeNow(tx, { ...recorded, type: 'user.created', details: { via: 'sso' } });
    if (teams && (teams.added.length > 0 || teams.removed.length > 0)) {
      await app.audit.writeNow(tx, { ...recorded, type: 'membership.changed', details: { via: 'groups', ...teams } });
    }
    return { signedIn, teams };
  });
}
