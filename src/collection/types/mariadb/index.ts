import { Type } from '@sinclair/typebox';
import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import type { CollectContext, CollectedBatch, CollectorType } from '../plugin.js';
import { HOST_TYPE_DATA_KEYS } from '../shared/host.js';
import { isEnabled, loadPart } from '../shared/parts.js';
import { accountPages } from './accounts.js';
import { connect, targetOf, type Session } from './connection.js';
import { channelId, channelRows, replicaRecords, sourceRecord } from './replication.js';
import { databaseRecords, flavourOf, serverRecord } from './server.js';

/**
 * The `mariadb` collector type: a MariaDB or MySQL server, its databases, accounts (users and
 * roles, with their grants but never a password hash) and replication, read from its variables,
 * information_schema and the `mysql` schema. It never reads table data.
 *
 * External ids inside the source: `server`, `database/<name>`, `user/<user>@<host>`,
 * `role/<name>`, `replication_source/<channel>` (`default` for the unnamed one) and
 * `replica/<server_id>`; the scope is the server (`config.server_name`, default `host:port`).
 */

const KINDS = ['server', 'databases', 'users', 'replication', 'replicas'] as const;

const ConfigSchema = Type.Object({
  server_name: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'The instance name CIs are scoped by (default `host:port` of the endpoint).',
    }),
  ),
  ssl: Type.Optional(
    Type.Union(
      ['disable', 'require', 'verify-full'].map((m) => Type.Literal(m)),
      {
        description:
          '`disable` (default): no TLS; `require`: TLS without verifying the certificate; `verify-full`: TLS with the certificate verified against the endpoint host (`verify_ssl: false` lowers it to `require`).',
      },
    ),
  ),
});

const ROWS_PER_BATCH = 1000;

async function* inBatches(scopeId: string, records: UniversalRecord[]): AsyncGenerator<CollectedBatch> {
  for (let i = 0; i < records.length; i += ROWS_PER_BATCH)
    yield { scopeId, records: records.slice(i, i + ROWS_PER_BATCH) };
}

/** The accounts, a page at a time: a page that fails ends the part, the pages before it are kept. */
async function* accounts(context: CollectContext, session: Session, scopeId: string, flavour: 'mariadb' | 'mysql') {
  const pages = accountPages(session, flavour);
  for (;;) {
    const page = await loadPart(context, 'users', () => pages.next());
    if (!page) return;
    if (page.done) break;
    yield* inBatches(scopeId, page.value);
  }
  context.component('users');
}

/**
 * One list of the server. Each kind is a component: a failure of one (a privilege the account
 * lacks) is reported and the others are still collected. Only a server that cannot be reached or
 * refuses the credentials fails the run.
 */
async function* collectMariadb(context: CollectContext): AsyncGenerator<CollectedBatch> {
  const target = await targetOf(context);
  const scopeId = target.serverName;
  const part = <T>(name: string, load: () => Promise<T>) => loadPart(context, name, load);
  const session = await connect(context, target);
  try {
    // needs no privilege: a server that cannot say what it is fails the run
    const identity = await flavourOf(session);
    const { flavour } = identity;
    // read before the server, whose `replicates_from` relationships name the channels
    const channels = isEnabled(context, 'replication')
      ? await part('replication', () => channelRows(session, flavour))
      : undefined;
    if (isEnabled(context, 'server')) {
      const server = await part('server', () => serverRecord(session, target, identity));
      if (server) {
        server.relationships = (channels ?? []).map((row) => ({
          type: 'replicates_from',
          target_external_id: channelId(row),
        }));
        yield { scopeId, records: [server] };
        context.component('server');
      }
    }
    if (channels) {
      yield* inBatches(scopeId, channels.map(sourceRecord));
      context.component('replication');
    }
    if (isEnabled(context, 'databases')) {
      const databases = await part('databases', () => databaseRecords(session));
      if (databases) {
        yield* inBatches(scopeId, databases);
        context.component('databases');
      }
    }
    if (isEnabled(context, 'users')) yield* accounts(context, session, scopeId, flavour);
    if (isEnabled(context, 'replicas')) {
      const replicas = await part('replicas', () => replicaRecords(session, flavour));
      if (replicas) {
        yield* inBatches(scopeId, replicas);
        context.component('replicas');
      }
    }
  } finally {
    await session.end();
  }
}

export const mariadbType: CollectorType = {
  type: 'mariadb',
  description:
    'Discovers a MariaDB or MySQL server from its variables, information_schema and the `mysql` schema (read-only; ' +
    'never table data, never a password hash): `mariadb.server`, `mariadb.database`, `mariadb.user`, `mariadb.role`, ' +
    '`mariadb.replication_source` and `mariadb.replica`, with `hosted_on`, `has_role`, `member_of` and ' +
    '`replicates_from` relationships. Endpoint `mysql://host:port` or `mariadb://host:port`; credentials `basic`.',
  configSchema: ConfigSchema,
  capabilities: {
    supports_universal_format: false,
    supports_multi_source: true,
    supports_watch: false,
    collects: true,
  },
  collectables: KINDS,
  ciTypes: {
    'mariadb.server': [
      'version',
      'flavour',
      'server_uuid',
      'server_id',
      'max_connections',
      'innodb_buffer_pool_size',
      'log_bin',
      'binlog_format',
      'read_only',
      'gtid_mode',
      'character_set',
      'collation',
      'sql_mode',
      ...HOST_TYPE_DATA_KEYS,
      'metrics.uptime_seconds',
      'metrics.threads_connected',
      'metrics.threads_running',
      'metrics.questions',
      'metrics.slow_queries',
      'metrics.aborted_connects',
    ],
    'mariadb.database': ['character_set', 'collation', 'system', 'metrics.size_bytes', 'metrics.tables'],
    'mariadb.user': [
      'user',
      'host',
      'plugin',
      'account_locked',
      'password_expired',
      'max_user_connections',
      'default_role',
      'roles',
      'grants',
    ],
    'mariadb.role': ['grants', 'roles'],
    'mariadb.replication_source': [
      'connection_name',
      'source_host',
      'source_port',
      'source_user',
      'source_server_id',
      'using_gtid',
      'ssl',
      'sql_delay',
      'replicate_do_db',
      'replicate_ignore_db',
      'replicate_do_table',
      'replicate_ignore_table',
      'metrics.io_running',
      'metrics.sql_running',
      'metrics.seconds_behind_source',
      'metrics.last_io_errno',
      'metrics.last_sql_errno',
    ],
    'mariadb.replica': ['server_id', 'host', 'port', 'replica_uuid'],
  },
  endpointSchemes: ['mysql', 'mariadb'],
  collect: collectMariadb,
};
