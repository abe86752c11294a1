import type { Static } from '@sinclair/typebox';
import type { RelationshipRef, UniversalRecord } from '../../../inventory/write-path/records.js';
import { hostFacts, isLoopback } from '../shared/host.js';
import type { Target } from './connection.js';
import { fieldsOf, numberOr, type Info } from './info.js';

export type Relationship = Static<typeof RelationshipRef>;

/** INFO's role in the words the inventory uses elsewhere (`primary`/`replica`, not master/slave). */
export const roleOf = (info: Info): string => {
  if (modeOf(info) === 'sentinel') return 'sentinel';
  const role = info.replication?.role ?? info.server?.role ?? 'master';
  return role === 'slave' ? 'replica' : role === 'master' ? 'primary' : role;
};

export const modeOf = (info: Info): string => info.server?.redis_mode ?? 'standalone';

/** `host:port`, with an IPv6 address in brackets. */
export const hostPort = (host: string, port: number | string) => `${host.includes(':') ? `[${host}]` : host}:${port}`;

/** The peer a replica replicates from (INFO replication's master_host/master_port), if it is one. */
export function primaryOf(info: Info): { host: string; port: number } | undefined {
  const replication = info.replication ?? {};
  const port = numberOr(replication.master_port);
  if (roleOf(info) !== 'replica' || !replication.master_host || port === null) return undefined;
  return { host: replication.master_host, port };
}

/** The modules INFO lists (the same list as MODULE LIST, without another permission), names and versions only. */
function modulesOf(info: Info): { name: string; version: string }[] {
  return Object.entries(info.modules ?? {})
    .filter(([key]) => key === 'module' || key.startsWith('module'))
    .map(([, value]) => fieldsOf(value))
    .map((m) => ({ name: m.name ?? '', version: m.ver ?? '' }))
    .filter((m) => m.name)
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** The bind addresses without the `-` that marks one as optional. */
const bindOf = (bind: string | undefined) =>
  (bind ?? '')
    .split(/\s+/)
    .map((a) => a.replace(/^-/, ''))
    .filter(Boolean);

const count = (section: Record<string, string> | undefined, name: string) => numberOr(section?.[name]);

/** What moves on every collection: metrics, outside change detection. */
function serverMetrics(info: Info): Record<string, number | null> {
  return {
    uptime_seconds: count(info.server, 'uptime_in_seconds'),
    used_memory: count(info.memory, 'used_memory'),
    used_memory_rss: count(info.memory, 'used_memory_rss'),
    connected_clients: count(info.clients, 'connected_clients'),
    blocked_clients: count(info.clients, 'blocked_clients'),
    connected_replicas: count(info.replication, 'connected_slaves'),
    total_commands_processed: count(info.stats, 'total_commands_processed'),
    instantaneous_ops_per_sec: count(info.stats, 'instantaneous_ops_per_sec'),
    total_connections_received: count(info.stats, 'total_connections_received'),
    keyspace_hits: count(info.stats, 'keyspace_hits'),
    keyspace_misses: count(info.stats, 'keyspace_misses'),
    expired_keys: count(info.stats, 'expired_keys'),
    evicted_keys: count(info.stats, 'evicted_keys'),
    rdb_changes_since_last_save: count(info.persistence, 'rdb_changes_since_last_save'),
  };
}

export const SERVER_METRICS = Object.keys(serverMetrics({}));

/**
 * The server: what INFO says of it that does not move (version, mode, role, modules) and the
 * configuration read by name; uptime, memory, clients and counters under `metrics`. Run ids and
 * process ids are left out: they change on every restart without any configuration changing.
 */
export function serverRecord(
  target: Target,
  info: Info,
  settings: Record<string, string>,
  relationships: Relationship[] | undefined,
): UniversalRecord {
  const server = info.server ?? {};
  const role = roleOf(info);
  const bind = bindOf(settings.bind);
  const replication = info.replication ?? {};
  const modules = modulesOf(info);
  const appendonly = settings.appendonly === undefined ? null : settings.appendonly === 'yes';
  return {
    external_id: 'server',
    ci_type: 'redis.server',
    name: target.serverName,
    raw_data: {
      version: server.redis_version ?? null,
      mode: modeOf(info),
      role,
      os: server.os ?? null,
      arch_bits: numberOr(server.arch_bits),
      multiplexing_api: server.multiplexing_api ?? null,
      executable: server.executable ?? null,
      config_file: server.config_file ?? null,
      tcp_port: numberOr(server.tcp_port),
      modules,
      replication:
        role === 'replica'
          ? {
              master_host: replication.master_host ?? null,
              master_port: numberOr(replication.master_port),
              read_only: replication.slave_read_only === '1',
              priority: numberOr(replication.slave_priority ?? replication.replica_priority),
            }
          : {},
      settings,
    },
    type_data: {
      version: server.redis_version ?? null,
      mode: modeOf(info),
      role,
      maxmemory: numberOr(settings.maxmemory),
      maxmemory_policy: settings['maxmemory-policy'] ?? null,
      save: settings.save ?? null,
      appendonly,
      appendfsync: settings.appendfsync ?? null,
      modules,
      databases: numberOr(settings.databases),
      port: numberOr(server.tcp_port),
      bind,
      cluster_enabled: info.cluster?.cluster_enabled === '1',
      host: hostFacts({
        hostname: null,
        addresses: [...bind, target.address],
        endpoint: target.endpoint,
        local: isLoopback(target.address),
      }),
      metrics: serverMetrics(info),
    },
    // undefined (the cluster could not be read) keeps the links the server had
    ...(relationships ? { relationships } : {}),
  };
}

/** Logical databases: as many as `databases` says (16 by default; one in cluster mode), empty ones too. */
export function databaseCount(info: Info, settings: Record<string, string>): number {
  if (modeOf(info) === 'sentinel') return 0;
  if (info.cluster?.cluster_enabled === '1') return 1;
  const configured = numberOr(settings.databases);
  const seen = Object.keys(info.keyspace ?? {})
    .map((k) => Number(k.replace(/^db/, '')))
    .filter(Number.isInteger);
  return Math.max(configured ?? 16, ...seen.map((n) => n + 1));
}

/**
 * `db0` … in batches. Every configured database is a CI, empty or not, so that keys coming and
 * going only move metrics (an empty database is absent from INFO keyspace).
 */
export function* databaseRecords(info: Info, total: number, batchSize: number): Generator<UniversalRecord[]> {
  for (let start = 0; start < total; start += batchSize) {
    const batch: UniversalRecord[] = [];
    for (let index = start; index < Math.min(total, start + batchSize); index++) {
      const space = fieldsOf(info.keyspace?.[`db${index}`]);
      batch.push({
        external_id: `database/${index}`,
        ci_type: 'redis.database',
        name: `db${index}`,
        raw_data: { index },
        type_data: {
          index,
          metrics: {
            keys: numberOr(space.keys, 0),
            expires: numberOr(space.expires, 0),
            avg_ttl_ms: numberOr(space.avg_ttl, 0),
          },
        },
        relationships: [{ type: 'hosted_on', target_external_id: 'server' }],
      });
    }
    yield batch;
  }
}

/** Another Redis server this one replicates with or watches (`peer/<host>:<port>`). */
export function peerRecord(
  host: string,
  port: number,
  role: 'primary' | 'replica' | 'sentinel',
  relationships: Relationship[],
  metrics: Record<string, unknown>,
): UniversalRecord {
  const name = hostPort(host, port);
  return {
    external_id: `peer/${name}`,
    ci_type: 'redis.peer',
    name,
    raw_data: { address: host, port, role },
    type_data: { address: host, port, role, metrics },
    relationships,
  };
}

/**
 * The replication links INFO replication names: a replica's primary (the server `replicates_from`
 * it, on the server record), and a primary's connected replicas, each `replicates_from` the
 * server. The link's state and offsets move: they are metrics.
 */
export function replicationPeers(info: Info): UniversalRecord[] {
  const replication = info.replication ?? {};
  const peers: UniversalRecord[] = [];
  const primary = primaryOf(info);
  if (primary)
    peers.push(
      peerRecord(primary.host, primary.port, 'primary', [], {
        link_status: replication.master_link_status ?? null,
        last_io_seconds_ago: numberOr(replication.master_last_io_seconds_ago),
        offset: numberOr(replication.master_repl_offset),
      }),
    );
  for (const [key, value] of Object.entries(replication)) {
    if (!/^slave\d+$/.test(key)) continue;
    const replica = fieldsOf(value);
    const port = numberOr(replica.port);
    if (!replica.ip || port === null) continue;
    peers.push(
      peerRecord(replica.ip, port, 'replica', [{ type: 'replicates_from', target_external_id: 'server' }], {
        link_status: replica.state ?? null,
        offset: numberOr(replica.offset),
        lag_seconds: numberOr(replica.lag),
      }),
    );
  }
  return peers;
}
