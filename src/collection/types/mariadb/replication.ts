import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import type { Session } from './connection.js';
import type { Flavour } from './server.js';

type Row = Record<string, unknown>;

/** A column under MySQL's newer name (Source_Host) or the older one (Master_Host) both servers still write. */
function column(row: Row, ...names: string[]): unknown {
  for (const name of names) if (row[name] !== undefined) return row[name];
  return undefined;
}

const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);
const count = (value: unknown): number | null =>
  value === null || value === undefined || value === '' ? null : Number(value);

/** A list column (Replicate_Do_DB and the like) as sorted names. */
const list = (value: unknown): string[] =>
  typeof value === 'string' && value !== ''
    ? value
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean)
        .sort()
    : [];

/**
 * The replication channels this server replicates through (SHOW ALL SLAVES STATUS on MariaDB,
 * SHOW REPLICA STATUS on MySQL), one row each. Needs SLAVE MONITOR (MariaDB) or REPLICATION
 * CLIENT (MySQL).
 */
export async function channelRows(session: Session, flavour: Flavour): Promise<Row[]> {
  if (flavour === 'mariadb') return session.query<Row>('SHOW ALL SLAVES STATUS');
  return session.query<Row>('SHOW REPLICA STATUS').catch(() => session.query<Row>('SHOW SLAVE STATUS'));
}

export const channelId = (row: Row) =>
  `replication_source/${text(column(row, 'Connection_name', 'Channel_Name', 'Channel_name')) ?? 'default'}`;

/**
 * One replication channel as the source it reads from: where the source is and how the channel is
 * set up (configuration); whether its threads run and how far behind it is (metrics). The password
 * of the channel is never shown by the server, and never read.
 */
export function sourceRecord(row: Row): UniversalRecord {
  const host = text(column(row, 'Source_Host', 'Master_Host'));
  const port = count(column(row, 'Source_Port', 'Master_Port'));
  const serverId = count(column(row, 'Source_Server_Id', 'Master_Server_Id'));
  const attributes = {
    connection_name: text(column(row, 'Connection_name', 'Channel_Name', 'Channel_name')),
    source_host: host,
    source_port: port,
    source_user: text(column(row, 'Source_User', 'Master_User')),
    // 0 until the channel first connects: what it reports then is the source's own server_id
    source_server_id: serverId === 0 ? null : serverId,
    // MariaDB: No, Slave_Pos or Current_Pos; MySQL: auto positioning on or off
    using_gtid:
      text(column(row, 'Using_Gtid')) ?? (Number(column(row, 'Auto_Position')) === 1 ? 'Auto_Position' : 'No'),
    ssl: column(row, 'Source_SSL_Allowed', 'Master_SSL_Allowed') === 'Yes',
    sql_delay: count(column(row, 'SQL_Delay')) ?? 0,
    replicate_do_db: list(column(row, 'Replicate_Do_DB')),
    replicate_ignore_db: list(column(row, 'Replicate_Ignore_DB')),
    replicate_do_table: list(column(row, 'Replicate_Do_Table')),
    replicate_ignore_table: list(column(row, 'Replicate_Ignore_Table')),
  };
  return {
    external_id: channelId(row),
    ci_type: 'mariadb.replication_source',
    name: `${host ?? 'unknown'}:${port ?? '?'}`,
    raw_data: attributes,
    type_data: {
      ...attributes,
      metrics: {
        io_running: text(column(row, 'Replica_IO_Running', 'Slave_IO_Running')),
        sql_running: text(column(row, 'Replica_SQL_Running', 'Slave_SQL_Running')),
        seconds_behind_source: count(column(row, 'Seconds_Behind_Source', 'Seconds_Behind_Master')),
        last_io_errno: count(column(row, 'Last_IO_Errno')) ?? 0,
        last_sql_errno: count(column(row, 'Last_SQL_Errno')) ?? 0,
      },
    },
  };
}

/**
 * The replicas registered with this server (SHOW SLAVE HOSTS / SHOW REPLICAS), each `replicates_from`
 * it. A replica's host and port are what it reports (`report_host`, `report_port`): empty unless
 * it sets them. Needs REPLICATION MASTER ADMIN (MariaDB) or REPLICATION SLAVE (MySQL).
 */
export async function replicaRecords(session: Session, flavour: Flavour): Promise<UniversalRecord[]> {
  const rows =
    flavour === 'mariadb'
      ? await session.query<Row>('SHOW SLAVE HOSTS')
      : await session.query<Row>('SHOW REPLICAS').catch(() => session.query<Row>('SHOW SLAVE HOSTS'));
  return rows
    .map((row) => ({
      server_id: Number(column(row, 'Server_id', 'Server_Id')),
      host: text(column(row, 'Host')),
      port: count(column(row, 'Port')),
      replica_uuid: text(column(row, 'Replica_UUID', 'Slave_UUID')),
    }))
    .sort((a, b) => a.server_id - b.server_id)
    .map((replica) => ({
      external_id: `replica/${replica.server_id}`,
      ci_type: 'mariadb.replica',
      name: replica.host ? `${replica.host}:${replica.port ?? 3306}` : `server_id ${replica.server_id}`,
      raw_data: replica,
      type_data: replica,
      relationships: [{ type: 'replicates_from', target_external_id: 'server' }],
    }));
}
