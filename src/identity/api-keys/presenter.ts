import type { ApiKeyListing } from '../../platform/auth/api-key-store.js';
import { scopeView } from '../grants/schema.js';

/** A key as listed: its rights, never its secret. */
export function presentKey(row: ApiKeyListing) {
  return {
    id: row.id,
    name: row.name,
    tier: row.tier as 'adm' | 'svc' | 'ro',
    hint: row.key_hint,
    permissions: [...row.permissions].sort(),
    scopes:
      row.tier === 'svc' || (row.tier === 'ro' && row.narrow_scopes) ? row.scopes.map(scopeView) : ('all' as const),
    created_at: row.created_at.toISOString(),
    expires_at: row.expires_at?.toISOString() ?? null,
    revoked_at: row.revoked_at?.toISOString() ?? null,
    last_used_at: row.last_used_at?.toISOString() ?? null,
  };
}
