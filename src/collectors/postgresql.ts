import { Type } from '@sinclair/typebox';
import postgres from 'postgres';
import type { UniversalRecord } from '../inventory/records.js';
import type { CredentialDocument } from '../sources/credentials.js';
import { guardedAddress } from '../net/endpoint.js';
import { isEnabled, loadPart } from './parts.js';
import type { CollectContext, CollectedBatch, CollectorType } from './types.js';

/**
 * The `postgresql` collector type: a PostgreSQL server, its databases, roles and extensions, read
 * from the system catalogue in read-only transactions. It never reads table data.
 *
 * External ids inside the source: `server`, `database/<name>`, `role/<name>`,
 * `extension/<database>/<name>`; the scope is the server (`config.server_name`, default
 * `host:port`).
 */

const KINDS = ['server', 'databases', 'roles', 'extensions'] as const;

const ConfigSchema = Type.Object({
  server_name: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'The instance name CIs are scoped by (default `host:port` of the endpoint).' })),
  database: Type.Optional(Type.String({ minLength: 1, maxLength: 63, description: 'The database to connect to first (default `postgres`).' })),
  sslmode: Type.Optional(
    Type.Union(['disable', 'prefer', 'require', 'verify-full'].map((m) => Type.Literal(m)), {
      description: '`prefer` (default): TLS when the server offers it; `require`: TLS without verifying the certificate; `verify-full`: TLS with the certificate verified (`verify_ssl: false` lowers it to `require`).',
    }),
  ),
});

const ROWS_PER_BATCH = 1000;
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
  'ssl',
  'password_encryption',
];

interface Target {
  host: string;
  port: number;
  address: string;
  database: string;
  serverName: string;
}

async function targetOf(context: CollectContext): Promise<Target> {
  const endpoint = context.source.endpoint;
  if (!endpoint) throw new Error('the source has no endpoint (postgres://host:port)');
  const url = new URL(endpoint);
  const port = url.port === '' ? 5432 : Number(url.port);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const config = context.source.config;
  const database = typeof config.database === 'string' ? config.database : url.pathname.length > 1 ? decodeURIComponent(url.pathname.slice(1)) : 'postgres';
  const serverName = typeof config.server_name === 'string' ? config.server_name : `${host}:${port}`;
  return { host, port, address: await guardedAddress(host, context.allowedHosts), database, serverName };
}

function sslOf(context: CollectContext, target: Target): postgres.Options<Record<string, never>>['ssl'] {
  const credentials = context.credentials;
  const mode = typeof context.source.config.sslmode === 'string' ? context.source.config.sslmode : 'prefer';
  const verify = mode === 'verify-full' && context.source.config.verify_ssl !== false;
  if (credentials?.type === 'tls') {
    return { cert: credentials.client_certificate, key: credentials.client_key, ca: credentials.ca_certificate, servername: target.host, rejectUnauthorized: verify };
  }
  if (mode === 'disable') return false;
  if (mode === 'prefer') return 'prefer';
  return { servername: target.host, rejectUnauthorized: verify };
}

function userOf(credentials: CredentialDocument | undefined): { username?: string; password?: string } {
  if (!credentials) return {};
  if (credentials.type === 'basic') return { username: credentials.username, password: credentials.password };
  if (credentials.type === 'tls') return {};
  throw new Error('postgresql sources take basic (username and password) or tls credentials, not a token');
}

/** A connection to one database of the server, closed when the run is aborted. */
function connect(context: CollectContext, target: Target, database: string) {
  const timeoutSeconds = typeof context.source.config.timeout === 'number' ? context.source.config.timeout : 30;
  const options: postgres.Options<Record<string, never>> = {
    host: target.address,
    port: target.port,
    database,
    ...userOf(context.credentials),
    ssl: sslOf(context, target),
    max: 1,
    prepare: false,
    connect_timeout: Math.max(1, Math.min(30, Math.ceil(timeoutSeconds))),
    idle_timeout: 5,
    onnotice: () => {},
    connection: { application_name: 'cinv collector', default_transaction_read_only: true, statement_timeout: Math.ceil(timeoutSeconds * 1000) },
  };
  const sql = postgres(options);
  const close = () => void sql.end({ timeout: 0 });
  context.signal.addEventListener('abort', close, { once: true });
  return {
    sql,
    async end() {
      context.signal.removeEventListener('abort', close);
      await sql.end({ timeout: 1 });
    },
  };
}

/** Rows as plain JSON: timestamps as ISO text, bigints as numbers where they fit. */
function plain(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) out[key] = value instanceof Date ? value.toISOString() : value;
  return out;
}

async function* inBatches(scopeId: string, records: UniversalRecord[]): AsyncGenerator<CollectedBatch> {
  for (let i = 0; i < records.length; i += ROWS_PER_BATCH) yield { scopeId, records: records.slice(i, i + ROWS_PER_BATCH) };
}

async function serverRecord(sql: postgres.Sql, target: Target): Promise<UniversalRecord> {
  const [info] = await sql<{ version: string; version_num: number; in_recovery: boolean; started_at: Date; now: Date }[]>`
    select current_setting('server_version') as version, current_setting('server_version_num')::int as version_num,
           pg_is_in_recovery() as in_recovery, pg_postmaster_start_time() as started_at, now() as now`;
  const settings = await sql<{ name: string; value: string }[]>`
    select name, current_setting(name) as value from pg_settings where name = any(${SETTINGS}) order by name`;
  const [connections] = await sql<{ n: number }[]>`select count(*)::int as n from pg_stat_activity where backend_type = 'client backend'`;
  const setting = Object.fromEntries(settings.map((s) => [s.name, s.value]));
  return {
    external_id: 'server',
    ci_type: 'postgresql.server',
    name: target.serverName,
    raw_data: { version: info!.version, version_num: info!.version_num, in_recovery: info!.in_recovery, started_at: info!.started_at.toISOString(), settings: setting },
    type_data: {
      version: info!.version,
      data_checksums: setting.data_checksums === 'on',
      max_connections: Number(setting.max_connections),
      shared_buffers: setting.shared_buffers ?? null,
      wal_level: setting.wal_level ?? null,
      replication_role: info!.in_recovery ? 'standby' : 'primary',
      started_at: info!.started_at.toISOString(),
      metrics: {
        uptime_seconds: Math.round((info!.now.getTime() - info!.started_at.getTime()) / 1000),
        client_connections: connections!.n,
      },
    },
  };
}

interface DatabaseRow {
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

async function databaseRows(sql: postgres.Sql): Promise<DatabaseRow[]> {
  return sql<DatabaseRow[]>`
    select d.datname, r.rolname as owner, pg_encoding_to_char(d.encoding) as encoding, d.datcollate as collation, d.datctype as ctype,
           d.datconnlimit as connection_limit, d.datallowconn as allow_connections, d.datistemplate as is_template,
           has_database_privilege(d.oid, 'CONNECT') as can_connect,
           case when d.datallowconn and has_database_privilege(d.oid, 'CONNECT') then pg_database_size(d.oid)::text end as size_bytes
    from pg_database d join pg_roles r on r.oid = d.datdba
    order by d.datname`;
}

function databaseRecord(row: DatabaseRow): UniversalRecord {
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

async function roleRecords(sql: postgres.Sql): Promise<UniversalRecord[]> {
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

async function extensionRecords(sql: postgres.Sql, database: string): Promise<UniversalRecord[]> {
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

/**
 * One list of the server. Each kind, and each database's extensions, is a component: a failure of
 * one (a database refusing connections, a catalogue the role may not read) is reported and the
 * others are still collected. Only a server that cannot be reached at all fails the run.
 */
async function* collectPostgresql(context: CollectContext): AsyncGenerator<CollectedBatch> {
  const target = await targetOf(context);
  const scopeId = target.serverName;
  const part = <T>(name: string, load: () => Promise<T>) => loadPart(context, name, load);
  const main = connect(context, target, target.database);
  let databases: DatabaseRow[] = [];
  try {
    // the first statement tells whether the server can be reached at all: if not, the run fails
    await main.sql`select 1`;
    if (isEnabled(context, 'server')) {
      const server = await part('server', () => serverRecord(main.sql, target));
      if (server) {
        yield { scopeId, records: [server] };
        context.component('server');
      }
    }
    if (isEnabled(context, 'databases') || isEnabled(context, 'extensions')) {
      const rows = await part('databases', () => databaseRows(main.sql));
      databases = rows ?? [];
      if (rows && isEnabled(context, 'databases')) {
        yield* inBatches(scopeId, rows.map(databaseRecord));
        context.component('databases');
      }
    }
    if (isEnabled(context, 'roles')) {
      const roles = await part('roles', () => roleRecords(main.sql));
      if (roles) {
        yield* inBatches(scopeId, roles);
        context.component('roles');
      }
    }
  } finally {
    await main.end();
  }
  if (!isEnabled(context, 'extensions')) return;
  for (const database of databases.filter((d) => d.allow_connections && d.can_connect && !d.is_template)) {
    context.signal.throwIfAborted();
    const name = `extensions:${database.datname}`;
    const connection = connect(context, target, database.datname);
    let extensions: UniversalRecord[] | undefined;
    try {
      extensions = await part(name, () => extensionRecords(connection.sql, database.datname));
    } finally {
      await connection.end();
    }
    if (extensions) {
      yield* inBatches(scopeId, extensions);
      context.component(name);
    }
  }
}

export const postgresqlType: CollectorType = {
  type: 'postgresql',
  description:
    'Discovers a PostgreSQL server from its system catalogue (read-only; never table data): `postgresql.server`, ' +
    '`postgresql.database`, `postgresql.role` and `postgresql.extension`, with `hosted_on`, `owned_by`, `member_of` and ' +
    '`installed_in` relationships. Endpoint `postgres://host:port`; credentials `basic` or `tls`.',
  configSchema: ConfigSchema,
  capabilities: { supports_universal_format: false, supports_multi_source: true, supports_watch: false, collects: true },
  collectables: KINDS,
  ciTypes: {
    'postgresql.server': ['version', 'data_checksums', 'max_connections', 'shared_buffers', 'wal_level', 'replication_role', 'started_at', 'metrics.uptime_seconds', 'metrics.client_connections'],
    'postgresql.database': ['owner', 'encoding', 'collation', 'connection_limit', 'is_template', 'metrics.size_bytes'],
    'postgresql.role': ['login', 'superuser', 'createdb', 'connection_limit', 'member_of'],
    'postgresql.extension': ['version', 'schema', 'database'],
  },
  endpointSchemes: ['postgres', 'postgresql'],
  collect: collectPostgresql,
};
