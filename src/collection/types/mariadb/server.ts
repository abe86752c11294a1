import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import { hostFacts, isLoopback } from '../shared/host.js';
import type { Session, Target } from './connection.js';

/**
 * The global variables the server record keeps: configuration an operator sets, none of them
 * moving on their own. Status counters are read separately, as metrics.
 */
const VARIABLES = [
  'max_connections',
  'max_user_connections',
  'max_allowed_packet',
  'wait_timeout',
  'innodb_buffer_pool_size',
  'innodb_log_file_size',
  'innodb_flush_log_at_trx_commit',
  'innodb_file_per_table',
  'log_bin',
  'binlog_format',
  'binlog_row_image',
  'sync_binlog',
  'expire_logs_days',
  'binlog_expire_logs_seconds',
  'read_only',
  'super_read_only',
  'server_id',
  'gtid_mode',
  'enforce_gtid_consistency',
  'gtid_strict_mode',
  'gtid_domain_id',
  'character_set_server',
  'collation_server',
  'sql_mode',
  'time_zone',
  'default_storage_engine',
  'transaction_isolation',
  'tx_isolation',
  'lower_case_table_names',
  'performance_schema',
  'slow_query_log',
  'long_query_time',
  'require_secure_transport',
  'have_ssl',
  'skip_networking',
  'port',
  'bind_address',
  'report_host',
  'report_port',
  'datadir',
];

/** Status counters kept as metrics, by the metric's name. */
const STATUS: Record<string, string> = {
  uptime: 'uptime_seconds',
  threads_connected: 'threads_connected',
  threads_running: 'threads_running',
  questions: 'questions',
  slow_queries: 'slow_queries',
  aborted_connects: 'aborted_connects',
};

/** Names that may hold a secret: never kept, whatever a later list of variables holds. */
const SECRET_NAME = /pass|secret|key|token|auth|credential/i;

/** A variable's text as JSON: ON/OFF as booleans, whole numbers as numbers, the rest as it is. */
function valueOf(text: string | null): string | number | boolean | null {
  if (text === null) return null;
  if (text === 'ON') return true;
  if (text === 'OFF') return false;
  if (/^-?\d+$/.test(text) && Number.isSafeInteger(Number(text))) return Number(text);
  return text;
}

export type Flavour = 'mariadb' | 'mysql';

export interface Identity {
  version: string;
  comment: string | null;
  hostname: string | null;
  flavour: Flavour;
}

/** What the server is, which every account may ask. */
export async function flavourOf(session: Session): Promise<Identity> {
  const [info] = await session.query<{ version: string; comment: string | null; hostname: string | null }>(
    'SELECT @@version AS version, @@version_comment AS comment, @@hostname AS hostname',
  );
  const flavour: Flavour = /mariadb/i.test(`${info!.version} ${info!.comment ?? ''}`) ? 'mariadb' : 'mysql';
  return { ...info!, flavour };
}

async function variables(session: Session): Promise<Record<string, string | number | boolean | null>> {
  const rows = await session.query<{ Variable_name: string; Value: string | null }>(
    `SHOW GLOBAL VARIABLES WHERE Variable_name IN (${VARIABLES.map(() => '?').join(', ')})`,
    VARIABLES,
  );
  const out: Record<string, string | number | boolean | null> = {};
  for (const row of rows.sort((a, b) => a.Variable_name.localeCompare(b.Variable_name)))
    if (!SECRET_NAME.test(row.Variable_name)) out[row.Variable_name.toLowerCase()] = valueOf(row.Value);
  return out;
}

async function metrics(session: Session): Promise<Record<string, number>> {
  const names = Object.keys(STATUS);
  const rows = await session.query<{ Variable_name: string; Value: string }>(
    `SHOW GLOBAL STATUS WHERE Variable_name IN (${names.map(() => '?').join(', ')})`,
    names,
  );
  const out: Record<string, number> = {};
  for (const row of rows) {
    const name = STATUS[row.Variable_name.toLowerCase()];
    if (name) out[name] = Number(row.Value);
  }
  return out;
}

/** MariaDB writes GTIDs whenever it logs; MySQL has a mode for them. */
function gtidMode(flavour: Flavour, vars: Record<string, unknown>): string | null {
  if (flavour === 'mysql') return typeof vars.gtid_mode === 'string' ? vars.gtid_mode : null;
  return vars.gtid_strict_mode === true ? 'strict' : 'on';
}

/** The server itself: version and flavour, the variables above, its host, and under `metrics` what moves. */
export async function serverRecord(session: Session, target: Target, identity: Identity): Promise<UniversalRecord> {
  const { version, flavour } = identity;
  // MySQL's server_uuid names the server's data directory, not its machine: it is no machine id
  const [uuid] =
    flavour === 'mysql' ? await session.query<{ uuid: string }>('SELECT @@server_uuid AS uuid') : [undefined];
  const vars = await variables(session);
  const bind = typeof vars.bind_address === 'string' ? vars.bind_address.split(',') : [];
  return {
    external_id: 'server',
    ci_type: 'mariadb.server',
    name: target.serverName,
    raw_data: { version, version_comment: identity.comment, flavour, variables: vars },
    type_data: {
      version,
      flavour,
      server_uuid: uuid?.uuid ?? null,
      server_id: typeof vars.server_id === 'number' ? vars.server_id : null,
      max_connections: typeof vars.max_connections === 'number' ? vars.max_connections : null,
      innodb_buffer_pool_size: typeof vars.innodb_buffer_pool_size === 'number' ? vars.innodb_buffer_pool_size : null,
      log_bin: vars.log_bin === true,
      binlog_format: typeof vars.binlog_format === 'string' ? vars.binlog_format : null,
      read_only: vars.read_only === true,
      gtid_mode: gtidMode(flavour, vars),
      character_set: typeof vars.character_set_server === 'string' ? vars.character_set_server : null,
      collation: typeof vars.collation_server === 'string' ? vars.collation_server : null,
      sql_mode: typeof vars.sql_mode === 'string' ? vars.sql_mode : null,
      host: hostFacts({
        hostname: identity.hostname,
        addresses: bind,
        endpoint: `${target.host}:${target.port}`,
        local: isLoopback(target.address),
      }),
      metrics: await metrics(session),
    },
  };
}

/** Schemas the server makes up on the fly: nothing is stored in them. */
const VIRTUAL_SCHEMAS = ['information_schema', 'performance_schema'];
const SYSTEM_SCHEMAS = new Set(['mysql', 'sys']);

/**
 * The databases (schemas) with their defaults and, as metrics, their size and table count. The
 * sizes are information_schema's: InnoDB's are estimates, refreshed with its statistics.
 */
export async function databaseRecords(session: Session): Promise<UniversalRecord[]> {
  const rows = await session.query<{
    name: string;
    charset: string;
    collation: string;
    size: number | null;
    tables: number | null;
  }>(
    `SELECT s.SCHEMA_NAME AS name, s.DEFAULT_CHARACTER_SET_NAME AS charset, s.DEFAULT_COLLATION_NAME AS collation,
            t.size, t.tables
     FROM information_schema.SCHEMATA s
     LEFT JOIN (SELECT TABLE_SCHEMA, SUM(COALESCE(DATA_LENGTH, 0) + COALESCE(INDEX_LENGTH, 0)) AS size, COUNT(*) AS tables
                FROM information_schema.TABLES GROUP BY TABLE_SCHEMA) t ON t.TABLE_SCHEMA = s.SCHEMA_NAME
     WHERE s.SCHEMA_NAME NOT IN (?, ?)
     ORDER BY s.SCHEMA_NAME`,
    VIRTUAL_SCHEMAS,
  );
  return rows.map((row) => ({
    external_id: `database/${row.name}`,
    ci_type: 'mariadb.database',
    name: row.name,
    raw_data: { character_set: row.charset, collation: row.collation },
    type_data: {
      character_set: row.charset,
      collation: row.collation,
      system: SYSTEM_SCHEMAS.has(row.name),
      metrics: { size_bytes: Number(row.size ?? 0), tables: Number(row.tables ?? 0) },
    },
    relationships: [{ type: 'hosted_on', target_external_id: 'server' }],
  }));
}
