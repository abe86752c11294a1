import type { UniversalRecord } from '../../inventory/write-path/records.js';
import type { Connection, Target } from '../types/redis/connection.js';
import { readInfo, readSettings } from '../types/redis/info.js';
import { databaseCount, databaseRecords, replicationPeers, serverRecord } from '../types/redis/records.js';
import { userRecord } from '../types/redis/users.js';
import type { ServerHost } from './server-host.js';

/**
 * A cluster's Redis: a primary with one replica on another node, as a collection of the primary
 * sees it. Its answers (INFO text, CONFIG GET pairs, ACL GETUSER replies) are written out and read
 * by the `redis` collector type's own parsing and mapping, so the CIs are what a collection stores.
 */
export interface RedisState {
  name: string;
  host: ServerHost;
  replica: ServerHost;
  startedAt: Date;
  maxmemory: number;
  maxmemoryPolicy: string;
}

const GIB = 2 ** 30;
const PORT = 6379;

export function initialRedis(name: string, host: ServerHost, replica: ServerHost, startedAt: Date): RedisState {
  return { name, host, replica, startedAt, maxmemory: 4 * GIB, maxmemoryPolicy: 'noeviction' };
}

/** INFO as redis-server 7.2 writes it, the fields the collector reads; counters grow with the hours. */
function infoText(state: RedisState, now: Date): string {
  const uptime = Math.round((now.getTime() - state.startedAt.getTime()) / 1000);
  const hours = Math.floor(uptime / 3600);
  const sections: Record<string, string[]> = {
    Server: [
      'redis_version:7.2.5',
      'redis_mode:standalone',
      'os:Linux 6.1.102 x86_64',
      'arch_bits:64',
      'multiplexing_api:epoll',
      'executable:/usr/local/bin/redis-server',
      'config_file:/etc/redis/redis.conf',
      `tcp_port:${PORT}`,
      `uptime_in_seconds:${uptime}`,
    ],
    Clients: [`connected_clients:${40 + (hours % 17)}`, 'blocked_clients:0'],
    Memory: [
      `used_memory:${Math.round((1.2 + (hours % 24) / 40) * GIB)}`,
      `used_memory_rss:${Math.round((1.4 + (hours % 24) / 40) * GIB)}`,
    ],
    Persistence: [`rdb_changes_since_last_save:${(uptime * 7) % 5000}`],
    Stats: [
      `total_connections_received:${1200 + hours * 31}`,
      `total_commands_processed:${uptime * 850}`,
      `instantaneous_ops_per_sec:${700 + (hours % 9) * 40}`,
      `keyspace_hits:${uptime * 600}`,
      `keyspace_misses:${uptime * 45}`,
      `expired_keys:${uptime * 3}`,
      `evicted_keys:${state.maxmemoryPolicy === 'noeviction' ? 0 : hours * 12}`,
    ],
    Replication: [
      'role:master',
      'connected_slaves:1',
      `slave0:ip=${state.replica.address},port=${PORT},state=online,offset=${uptime * 4096},lag=0`,
      `master_repl_offset:${uptime * 4096}`,
    ],
    Modules: [],
    Keyspace: [
      `db0:keys=${180_000 + hours * 120},expires=${150_000 + hours * 100},avg_ttl=3600000`,
      `db1:keys=${12_000 + hours * 8},expires=0,avg_ttl=0`,
      `db2:keys=${2_400},expires=2400,avg_ttl=86400000`,
    ],
  };
  return Object.entries(sections)
    .map(([section, lines]) => [`# ${section}`, ...lines].join('\r\n'))
    .join('\r\n\r\n');
}

function settingsOf(state: RedisState): Record<string, string> {
  return {
    maxmemory: String(state.maxmemory),
    'maxmemory-policy': state.maxmemoryPolicy,
    'maxmemory-samples': '5',
    maxclients: '10000',
    save: '3600 1 300 100 60 10000',
    appendonly: 'yes',
    appendfsync: 'everysec',
    appendfilename: 'appendonly.aof',
    dbfilename: 'dump.rdb',
    dir: '/data',
    databases: '16',
    port: String(PORT),
    bind: `${state.host.address} 127.0.0.1 -::1`,
    'protected-mode': 'yes',
    timeout: '0',
    'tcp-keepalive': '300',
    'cluster-enabled': 'no',
    'replica-read-only': 'yes',
    'repl-backlog-size': '67108864',
    hz: '10',
    loglevel: 'notice',
    // the collector drops these by name, whatever the server answers
    requirepass: 'demo-not-a-password',
  };
}

/** ACL GETUSER replies: flat `[name, value, …]` lists, the password as a hash the collector counts and drops. */
const USERS: Record<string, unknown[]> = {
  default: ['flags', ['off', 'sanitize-payload'], 'passwords', [], 'commands', '-@all', 'keys', '', 'channels', ''],
  app: [
    'flags',
    ['on', 'sanitize-payload'],
    'passwords',
    ['0000000000000000000000000000000000000000000000000000000000000000'],
    'commands',
    '+@all -@dangerous',
    'keys',
    '~*',
    'channels',
    '&*',
    'selectors',
    [],
  ],
  exporter: [
    'flags',
    ['on', 'sanitize-payload'],
    'passwords',
    ['1111111111111111111111111111111111111111111111111111111111111111'],
    'commands',
    '-@all +info +ping +config|get +client|list +slowlog|get +latency',
    'keys',
    '',
    'channels',
    '',
    'selectors',
    [],
  ],
};

/** A connection that answers what the server would: INFO, and CONFIG GET one name at a time. */
function answering(info: string, settings: Record<string, string>): Connection {
  return {
    call: () => Promise.resolve(info),
    batch: (commands) =>
      Promise.resolve(
        commands.map(([, , name]) => ({ value: String(name) in settings ? [name, settings[String(name)]] : [] })),
      ),
    end: () => Promise.resolve(),
  };
}

/** Everything a collection of the primary reports now: the server, its 16 databases, its replica, its users. */
export async function redisRecords(state: RedisState, now: Date): Promise<UniversalRecord[]> {
  const endpoint = `${state.name}.demo.invalid:${PORT}`;
  const target: Target = {
    host: `${state.name}.demo.invalid`,
    port: PORT,
    address: state.host.address,
    tls: false,
    endpoint,
    serverName: state.name,
  };
  const connection = answering(infoText(state, now), settingsOf(state));
  const info = await readInfo(connection);
  const settings = await readSettings(connection);
  const databases = [...databaseRecords(info, databaseCount(info, settings), 1000)].flat();
  return [
    serverRecord(target, info, settings, []),
    ...databases,
    ...replicationPeers(info),
    ...Object.entries(USERS).map(([user, reply]) => userRecord(user, reply)),
  ];
}
