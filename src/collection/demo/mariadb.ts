import type { UniversalRecord } from '../../inventory/write-path/records.js';
import { accountPages } from '../types/mariadb/accounts.js';
import type { Session, Target } from '../types/mariadb/connection.js';
import { channelId, channelRows, replicaRecords, sourceRecord } from '../types/mariadb/replication.js';
import { databaseRecords, flavourOf, serverRecord } from '../types/mariadb/server.js';
import type { ServerHost } from './server-host.js';

/**
 * A cluster's MariaDB: a primary with one registered replica, as a collection of the primary sees
 * it. Its answers (the rows of SHOW GLOBAL VARIABLES, information_schema, mysql.user, SHOW GRANTS,
 * SHOW SLAVE HOSTS) come from a session that answers the `mariadb` collector type's own queries,
 * so the CIs are what a collection stores.
 */
export interface MariadbState {
  name: string;
  host: ServerHost;
  replica: ServerHost;
  startedAt: Date;
  maxConnections: number;
  longQueryTime: number;
  /** Database name → tables. */
  databases: Map<string, number>;
}

const PORT = 3306;
type Row = Record<string, unknown>;

export function initialMariadb(
  name: string,
  host: ServerHost,
  replica: ServerHost,
  startedAt: Date,
  databases: string[],
): MariadbState {
  return {
    name,
    host,
    replica,
    startedAt,
    maxConnections: 151,
    longQueryTime: 10,
    databases: new Map(databases.map((database, i) => [database, 12 + i * 7])),
  };
}

function variables(state: MariadbState): Record<string, string> {
  return {
    max_connections: String(state.maxConnections),
    max_user_connections: '0',
    max_allowed_packet: '16777216',
    wait_timeout: '28800',
    innodb_buffer_pool_size: String(8 * 2 ** 30),
    innodb_log_file_size: String(2 ** 30),
    innodb_flush_log_at_trx_commit: '1',
    innodb_file_per_table: 'ON',
    log_bin: 'ON',
    binlog_format: 'ROW',
    binlog_row_image: 'FULL',
    sync_binlog: '1',
    expire_logs_days: '7.000000',
    read_only: 'OFF',
    server_id: '1',
    gtid_strict_mode: 'ON',
    gtid_domain_id: '0',
    character_set_server: 'utf8mb4',
    collation_server: 'utf8mb4_uca1400_ai_ci',
    sql_mode: 'STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION',
    time_zone: 'SYSTEM',
    default_storage_engine: 'InnoDB',
    tx_isolation: 'REPEATABLE-READ',
    transaction_isolation: 'REPEATABLE-READ',
    lower_case_table_names: '0',
    performance_schema: 'OFF',
    slow_query_log: 'ON',
    long_query_time: state.longQueryTime.toFixed(6),
    require_secure_transport: 'OFF',
    have_ssl: 'YES',
    skip_networking: 'OFF',
    port: String(PORT),
    bind_address: state.host.address,
    report_host: '',
    report_port: String(PORT),
    datadir: '/var/lib/mysql/',
  };
}

function status(state: MariadbState, now: Date): Record<string, string> {
  const uptime = Math.round((now.getTime() - state.startedAt.getTime()) / 1000);
  return {
    Uptime: String(uptime),
    Threads_connected: String(30 + (Math.floor(uptime / 3600) % 40)),
    Threads_running: '3',
    Questions: String(uptime * 420),
    Slow_queries: String(Math.floor(uptime / 900)),
    Aborted_connects: String(Math.floor(uptime / 7200)),
  };
}

/** mysql.user rows in the collector's order (user, host): the application accounts, the exporter, replication, a role. */
function accounts(state: MariadbState): { row: Row; grants: string[] }[] {
  const user = (name: string, host: string, grants: string[], role: string | null = null) => ({
    row: {
      user: name,
      host,
      plugin: host === 'localhost' ? 'unix_socket' : 'mysql_native_password',
      password_expired: 'N',
      is_role: 'N',
      default_role: role ?? '',
      max_user_connections: 0,
      account_locked: 'false',
    },
    grants: [...grants, ...(role ? [`GRANT \`${role}\` TO \`${name}\`@\`${host}\``] : [])],
  });
  const network = '10.%';
  return [
    {
      row: { user: 'app_rw', host: '', plugin: '', password_expired: 'N', is_role: 'Y', default_role: '' },
      grants: [
        'GRANT USAGE ON *.* TO `app_rw`',
        ...[...state.databases.keys()].map((d) => `GRANT SELECT, INSERT, UPDATE, DELETE ON \`${d}\`.* TO \`app_rw\``),
      ],
    },
    ...[...state.databases.keys()].map((d) =>
      user(`${d}_app`, network, [`GRANT USAGE ON *.* TO \`${d}_app\`@\`${network}\``], 'app_rw'),
    ),
    user('exporter', 'localhost', ['GRANT PROCESS, REPLICATION CLIENT, SELECT ON *.* TO `exporter`@`localhost`']),
    user('repl', network, [`GRANT REPLICATION SLAVE ON *.* TO \`repl\`@\`${network}\``]),
    user('root', 'localhost', [
      'GRANT ALL PRIVILEGES ON *.* TO `root`@`localhost` IDENTIFIED VIA unix_socket WITH GRANT OPTION',
    ]),
  ].sort((a, b) => `${a.row.user} ${a.row.host}`.localeCompare(`${b.row.user} ${b.row.host}`));
}

/** The answer to each of the collector's statements; an unknown one fails, so that a new query is noticed here. */
function answer(state: MariadbState, now: Date, query: string, values: unknown[]): Row[] {
  const named = (all: Record<string, string>) =>
    Object.entries(all)
      .filter(([name]) => values.includes(name.toLowerCase()) || values.includes(name))
      .map(([Variable_name, Value]) => ({ Variable_name, Value }));
  if (query.startsWith('SELECT @@version'))
    return [{ version: '11.4.3-MariaDB-log', comment: 'mariadb.org binary distribution', hostname: state.host.node }];
  if (query.startsWith('SHOW GLOBAL VARIABLES')) return named(variables(state));
  if (query.startsWith('SHOW GLOBAL STATUS')) return named(status(state, now));
  if (query === 'SHOW ALL SLAVES STATUS') return [];
  if (query === 'SHOW SLAVE HOSTS') return [{ Server_id: 2, Host: state.replica.node, Port: PORT, Master_id: 1 }];
  if (query.includes('information_schema.SCHEMATA'))
    return [...state.databases, ['mysql', 31] as const, ['sys', 101] as const]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, tables]) => ({
        name,
        charset: 'utf8mb4',
        collation: 'utf8mb4_uca1400_ai_ci',
        size: tables * 48 * 2 ** 20,
        tables,
      }));
  if (query.includes('FROM mysql.user')) {
    const [user, host] = values as [string, string];
    return accounts(state)
      .map((a) => a.row)
      .filter((row) => String(row.user) > user || (row.user === user && String(row.host) > host));
  }
  const grantee = /^SHOW GRANTS FOR '([^']*)'(?:@'([^']*)')?$/.exec(query);
  if (grantee) {
    const account = accounts(state).find((a) => a.row.user === grantee[1] && a.row.host === (grantee[2] ?? ''));
    return (account?.grants ?? []).map((line) => ({ [`Grants for ${grantee[1]}`]: line }));
  }
  throw new Error(`the demo's MariaDB has no answer to: ${query.slice(0, 80)}`);
}

function session(state: MariadbState, now: Date): Session {
  return {
    query: <T>(query: string, values: unknown[] = []) => Promise.resolve(answer(state, now, query, values) as T[]),
    end: () => Promise.resolve(),
  };
}

/** Everything a collection of the primary reports now, in the collector's order. */
export async function mariadbRecords(state: MariadbState, now: Date): Promise<UniversalRecord[]> {
  const target: Target = {
    host: `${state.name}.demo.invalid`,
    port: PORT,
    address: state.host.address,
    serverName: state.name,
  };
  const db = session(state, now);
  const identity = await flavourOf(db);
  const channels = await channelRows(db, identity.flavour);
  const server = await serverRecord(db, target, identity);
  server.relationships = channels.map((row) => ({ type: 'replicates_from', target_external_id: channelId(row) }));
  const records = [server, ...channels.map(sourceRecord), ...(await databaseRecords(db))];
  for await (const page of accountPages(db, identity.flavour)) records.push(...page);
  return [...records, ...(await replicaRecords(db, identity.flavour))];
}
