import type postgres from 'postgres';
import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import { hostFacts, isLoopback, type HostFacts } from '../shared/host.js';
import type { Target } from './connection.js';

/** The settings the server record shows. */
const SETTINGS = [
  'max_connections',
  'shared_buffers',
  'effective_cache_size',
  'work_mem',
  'maintenance_work_mem',
  'wal_level',
  'max_wal_size',
  'max_replication_slots',
  'max_wal_senders',
  'hot_standby',
  'data_checksums',
  'server_encoding',
  'timezone',
  'port',
  'listen_addresses',
  'ssl',
  'password_encryption',
];

/** Rows as plain JSON: timestamps as ISO text, bigints as numbers where they fit. */
function plain(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) out[key] = value instanceof Date ? value.toISOString() : value;
  return out;
}

/**
 * The server's host facts. PostgreSQL has no function naming its machine, so the host name is
 * known only when the server runs on the collector's machine. The addresses are those it listens
 * on and the one that answered this connection (null over a Unix socket).
 */
function serverHost(target: Target, listenAddresses: string | undefined, answeredFrom: string | null): HostFacts {
  return hostFacts({
    hostname: null,
    addresses: [...(listenAddresses ?? '').split(/[\s,]+/), answeredFrom],
    endpoint: `${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`,
    local: isLoopback(target.address),
  });
}

/** The server itself: version, role in replication, the settings above, its host and, under `metrics`, what moves. */
export async function serverRecord(sql: postgres.Sql, target: Target): Promise<UniversalRecord> {
  const [info] = await sql<
    {
      version: string;
      version_num: number;
      in_recovery: boolean;
      started_at: Date;
      now: Date;
      server_address: string | null;
    }[]
  >`
    select current_setting('server_version') as version, current_setting('server_version_num')::int as version_num,
           pg_is_in_recovery() as in_recovery, pg_postmaster_start_time() as started_at, now() as now,
           host(inet_server_addr()) as server_address`;
  const settings = await sql<{ name: string; value: string }[]>`
    select name, current_setting(name) as value from pg_settings where name = any(${SETTINGS}) order by name`;
  const [connections] = await sql<
    { n: number }[]
  >`select count(*)::int as n from pg_stat_activity where backend_type = 'client backend'`;
  const setting = Object.fromEntries(settings.map((s) => [s.name, s.value]));
  return {
    external_id: 'server',
    ci_type: 'postgresql.server',
    name: target.serverName,
    raw_data: {
      version: info!.version,
      version_num: info!.version_num,
      in_recovery: info!.in_recovery,
      started_at: info!.started_at.toISOString(),
      settings: setting,
    },
    type_data: {
      version: info!.version,
      data_checksums: setting.data_checksums === 'on',
      max_connections: Number(setting.max_connections),
      shared_buffers: setting.shared_buffers ?? null,
      wal_level: setting.wal_level ?? null,
      replication_role: info!.in_recovery ? 'standby' : 'primary',
      started_at: info!.started_at.toISOString(),
      host: serverHost(target, setting.listen_addresses, info!.server_address),
      metrics: {
        uptime_seconds: Math.round((info!.now.getTime() - info!.started_at.getTime()) / 1000),
        client_connections: connections!.n,
      },
    },
  };
}

export interface DatabaseRow {
  datname: string;
  owner: string;
  encoding: string;
  collation: string;
  ctype: string;
  connection_limit: number;
  allow_connections: boolean;
  is_template: boolean;
  can_connect: boolean;
  size_bytes: string | null;
}

export async function databaseRows(sql: postgres.Sql): Promise<DatabaseRow[]> {
  return sql<DatabaseRow[]>`
    select d.datname, r.rolname as owner, pg_encoding_to_char(d.encoding) as encoding, d.datcollate as collation, d.datctype as ctype,
           d.datconnlimit as connection_limit, d.datallowconn as allow_connections, d.datistemplate as is_template,
           has_database_privilege(d.oid, 'CONNECT') as can_connect,
           case when d.datallowconn and has_database_privilege(d.oid, 'CONNECT') then pg_database_size(d.oid)::text end as size_bytes
    from pg_database d join pg_roles r on r.oid = d.datdba
    order by d.datname`;
}

export function databaseRecord(row: DatabaseRow): UniversalRecord {
  const { can_connect: _canConnect, size_bytes: size, ...attributes } = row;
  return {
    external_id: `database/${row.datname}`,
    ci_type: 'postgresql.database',
    name: row.datname,
    raw_data: attributes,
    type_data: {
      owner: row.owner,
      encoding: row.encoding,
      collation: row.collation,
      connection_limit: row.connection_limit,
      is_template: row.is_template,
      metrics: size === null ? {} : { size_bytes: Number(size) },
    },
    relationships: [
      { type: 'hosted_on', target_external_id: 'server' },
      { type: 'owned_by', target_external_id: `role/${row.owner}` },
    ],
  };
}

export async function roleRecords(sql: postgres.Sql): Promise<UniversalRecord[]> {
  const rows = await sql<Record<string, unknown>[]>`
    select r.rolname, r.rolcanlogin as login, r.rolsuper as superuser, r.rolcreatedb as createdb, r.rolcreaterole as createrole,
           r.rolreplication as replication, r.rolbypassrls as bypassrls, r.rolinherit as inherit, r.rolconnlimit as connection_limit,
           r.rolvaliduntil as valid_until,
           array(select g.rolname from pg_auth_members m join pg_roles g on g.oid = m.roleid where m.member = r.oid order by g.rolname) as member_of
    from pg_roles r
    order by r.rolname`;
  return rows.map((row) => {
    const name = row.rolname as string;
    const memberOf = row.member_of as string[];
    const attributes = plain(row);
    delete attributes.rolname;
    return {
      external_id: `role/${name}`,
      ci_type: 'postgresql.role',
      name,
      raw_data: attributes,
      type_data: {
        login: row.login,
        superuser: row.superuser,
        createdb: row.createdb,
        connection_limit: row.connection_limit,
        member_of: memberOf,
      },
      relationships: memberOf.map((group) => ({ type: 'member_of', target_external_id: `role/${group}` })),
    };
  });
}

export async function extensionRecords(sql: postgres.Sql, database: string): Promise<UniversalRecord[]> {
  const rows = await sql<{ extname: string; extversion: string; schema: string; relocatable: boolean }[]>`
    select e.extname, e.extversion, n.nspname as schema, e.extrelocatable as relocatable
    from pg_extension e join pg_namespace n on n.oid = e.extnamespace
    order by e.extname`;
  return rows.map((row) => ({
    external_id: `extension/${database}/${row.extname}`,
    ci_type: 'postgresql.extension',
    name: row.extname,
    namespace: database,
    raw_data: { version: row.extversion, schema: row.schema, relocatable: row.relocatable },
    type_data: { version: row.extversion, schema: row.schema, database },
    relationships: [{ type: 'installed_in', target_external_id: `database/${database}` }],
  }));
}
