import { coversSource, type Principal } from '../../platform/auth/principal.js';
import type { AppContext } from '../../context.js';
import { forbidden, notFound } from '../../platform/errors.js';
import { bigintId } from '../../platform/http/schemas.js';
import { findSourceById, getSource, type SourceRow } from './store.js';

/** A live source the principal may see, or a 404 (a source outside its scopes is reported absent). */
export async function sourceOr404(app: AppContext, principal: Principal, rawId: string): Promise<SourceRow> {
  const id = bigintId(rawId);
  const source = id === undefined ? undefined : await getSource(app.sql, principal.tenantId, id);
  if (!source || !coversSource(principal, source.id)) throw notFound('Source not found', { source_id: rawId });
  return source;
}

/**
 * The source a refused request on it (a credential reveal) names in the audit log: the id as asked,
 * with the source's name when the tenant has it. The log is read by auditors, not by the refused
 * principal, so the name is given even when that principal may not see the source.
 */
export async function refusedSourceTarget(
  app: AppContext,
  principal: Principal,
  rawId: string,
): Promise<{ type: 'source'; id: string; name: string | null }> {
  const id = /^[0-9]+$/.test(rawId) ? bigintId(rawId) : undefined;
  const source = id === undefined ? undefined : await findSourceById(app.sql, principal.tenantId, id);
  return { type: 'source', id: source?.id ?? rawId, name: source?.name ?? null };
}

/** Creating or changing a source needs a principal whose scopes cover it: a scoped key could not see it afterwards. */
export function assertUnscoped(principal: Principal): void {
  if (!principal.superadmin && principal.scopes !== 'all')
    throw forbidden('Only a principal with access to all data may add sources', { reason: 'scoped' });
}
