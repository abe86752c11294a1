import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import type { Session } from './connection.js';
import { grantedRoles, withoutSecrets } from './grants.js';
import type { Flavour } from './server.js';

/** Accounts read per page: each page is one list query and one SHOW GRANTS per account, pipelined. */
export const ACCOUNTS_PER_PAGE = 500;

interface AccountRow {
  user: string;
  host: string;
  plugin: string | null;
  password_expired: string | null;
  account_locked: string | number | null;
  max_user_connections: number;
  is_role: string | null;
  default_role: string | null;
}

/**
 * The account columns, never `authentication_string`. MariaDB's `mysql.user` is a view over
 * `global_priv`, whose JSON alone says whether an account is locked.
 */
function accountQuery(flavour: Flavour): string {
  if (flavour === 'mariadb')
    return `SELECT u.User AS user, u.Host AS host, u.plugin, u.password_expired, u.is_role, u.default_role,
                   u.max_user_connections, JSON_VALUE(g.Priv, '$.account_locked') AS account_locked
            FROM mysql.user u LEFT JOIN mysql.global_priv g ON g.User = u.User AND g.Host = u.Host
            WHERE (u.User, u.Host) > (?, ?) ORDER BY u.User, u.Host LIMIT ${ACCOUNTS_PER_PAGE}`;
  return `SELECT User AS user, Host AS host, plugin, password_expired, account_locked, max_user_connections,
                 NULL AS is_role, NULL AS default_role
          FROM mysql.user WHERE (User, Host) > (?, ?) ORDER BY User, Host LIMIT ${ACCOUNTS_PER_PAGE}`;
}

/** ER_NONEXISTING_GRANT */
const NO_SUCH_GRANT = 1141;

const quoted = (name: string) => `'${name.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

const yes = (value: unknown) => value === 'Y' || value === 1 || value === '1' || value === 'true' || value === true;

/** A MariaDB role is a name; a MySQL role, an account like any other. */
function roleTarget(flavour: Flavour, role: string): string {
  return flavour === 'mariadb' && !role.includes('@') ? `role/${role}` : `user/${role}`;
}

function accountRecord(flavour: Flavour, row: AccountRow, lines: string[] | null): UniversalRecord {
  const grants = lines?.map(withoutSecrets) ?? null;
  const roles = [...new Set((lines ?? []).flatMap(grantedRoles))].sort();
  const relationships = roles.map((role) => ({
    type: row.is_role === 'Y' ? 'member_of' : 'has_role',
    target_external_id: roleTarget(flavour, role),
  }));
  if (row.is_role === 'Y') {
    const attributes = { grants, roles };
    return {
      external_id: `role/${row.user}`,
      ci_type: 'mariadb.role',
      name: row.user,
      raw_data: attributes,
      type_data: attributes,
      relationships,
    };
  }
  const attributes = {
    user: row.user,
    host: row.host,
    plugin: row.plugin || null,
    account_locked: yes(row.account_locked),
    password_expired: yes(row.password_expired),
    max_user_connections: Number(row.max_user_connections),
    default_role: row.default_role || null,
    roles,
    grants,
  };
  return {
    external_id: `user/${row.user}@${row.host}`,
    ci_type: 'mariadb.user',
    name: `${row.user}@${row.host}`,
    raw_data: attributes,
    type_data: attributes,
    relationships,
  };
}

/**
 * The accounts (users and MariaDB's roles) a page at a time, each with its grants. SHOW GRANTS for
 * every account needs SELECT on the `mysql` schema; its lines lose their authentication clause.
 */
export async function* accountPages(session: Session, flavour: Flavour): AsyncGenerator<UniversalRecord[]> {
  let after: [string, string] = ['', ''];
  for (;;) {
    const rows = await session.query<AccountRow>(accountQuery(flavour), after);
    if (rows.length === 0) return;
    const grants = await Promise.all(
      rows.map(async (row) => {
        const grantee = row.is_role === 'Y' ? quoted(row.user) : `${quoted(row.user)}@${quoted(row.host)}`;
        try {
          const lines = await session.query<Record<string, string>>(`SHOW GRANTS FOR ${grantee}`);
          return lines.map((line) => Object.values(line)[0]!);
        } catch (error) {
          // an account the server ignores (a host name under skip_name_resolve) has no grants to show
          if ((error as { errno?: unknown }).errno === NO_SUCH_GRANT) return null;
          throw error;
        }
      }),
    );
    yield rows.map((row, i) => accountRecord(flavour, row, grants[i] ?? null));
    if (rows.length < ACCOUNTS_PER_PAGE) return;
    const last = rows[rows.length - 1]!;
    after = [last.user, last.host];
  }
}
