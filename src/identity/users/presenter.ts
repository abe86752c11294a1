import { normalizeScopes, type DataScope, type Permission } from '../../platform/auth/principal.js';
import { scopeView } from '../grants/schema.js';
import type { UserRow } from './store.js';

export function presentUser(row: UserRow) {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    sso: row.issuer !== null,
    superadmin: row.superadmin,
    active: row.deactivated_at === null,
    created_at: row.created_at.toISOString(),
    deactivated_at: row.deactivated_at?.toISOString() ?? null,
    last_login_at: row.last_login_at?.toISOString() ?? null,
  };
}

type RightsRows = { permissions: Permission[]; scopes: DataScope[] };

/** A user with its own grants, what it holds through its teams too, and the teams. */
export function presentUserDetail(
  user: UserRow,
  direct: RightsRows,
  effective: RightsRows,
  teams: readonly { id: string; name: string }[],
) {
  const scopes = user.superadmin ? 'all' : normalizeScopes(effective.scopes);
  return {
    ...presentUser(user),
    direct: { permissions: direct.permissions, scopes: direct.scopes.map(scopeView) },
    effective: {
      permissions: effective.permissions,
      scopes: scopes === 'all' ? ('all' as const) : scopes.map(scopeView),
    },
    teams: [...teams],
  };
}
