import { Type } from '@sinclair/typebox';
import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import type { CollectContext, CollectedBatch, CollectorType } from '../plugin.js';
import { HOST_TYPE_DATA_KEYS } from '../shared/host.js';
import { isEnabled, loadPart } from '../shared/parts.js';
import { connect, targetOf } from './connection.js';
import {
  databaseRecord,
  databaseRows,
  extensionRecords,
  roleRecords,
  serverRecord,
  type DatabaseRow,
} from './records.js';

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
  server_name: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'The instance name CIs are scoped by (default `host:port` of the endpoint).',
    }),
  ),
  database: Type.Optional(
    Type.String({ minLength: 1, maxLength: 63, description: 'The database to connect to first (default `postgres`).' }),
  ),
  sslmode: Type.Optional(
    Type.Union(
      ['disable', 'prefer', 'require', 'verify-full'].map((m) => Type.Literal(m)),
      {
        description:
          '`prefer` (default): TLS when the server offers it; `require`: TLS without verifying the certificate; `verify-full`: TLS with the certificate verified (`verify_ssl: false` lowers it to `require`).',
      },
    ),
  ),
});

const ROWS_PER_BATCH = 1000;

async function* inBatches(scopeId: string, records: UniversalRecord[]): AsyncGenerator<CollectedBatch> {
  for (let i = 0; i < records.length; i += ROWS_PER_BATCH)
    yield { scopeId, records: records.slice(i, i + ROWS_PER_BATCH) };
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
  capabilities: {
    supports_universal_format: false,
    supports_multi_source: true,
    supports_watch: false,
    collects: true,
  },
  collectables: KINDS,
  ciTypes: {
    'postgresql.server': [
      'version',
      'data_checksums',
      'max_connections',
      'shared_buffers',
      'wal_level',
      'replication_role',
      'started_at',
      ...HOST_TYPE_DATA_KEYS,
      'metrics.uptime_seconds',
      'metrics.client_connections',
    ],
    'postgresql.database': ['owner', 'encoding', 'collation', 'connection_limit', 'is_template', 'metrics.size_bytes'],
    'postgresql.role': ['login', 'superuser', 'createdb', 'connection_limit', 'member_of'],
    'postgresql.extension': ['version', 'schema', 'database'],
  },
  endpointSchemes: ['postgres', 'postgresql'],
  collect: collectPostgresql,
};
