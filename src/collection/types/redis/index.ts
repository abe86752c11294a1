import { Type } from '@sinclair/typebox';
import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import type { CollectContext, CollectedBatch, CollectorType } from '../plugin.js';
import { HOST_TYPE_DATA_KEYS } from '../shared/host.js';
import { isEnabled, loadPart } from '../shared/parts.js';
import { connect, targetOf, type Connection, type Target } from './connection.js';
import { readInfo, readSettings, type Info } from './info.js';
import {
  SERVER_METRICS,
  databaseCount,
  databaseRecords,
  modeOf,
  primaryOf,
  hostPort,
  replicationPeers,
  serverRecord,
  type Relationship,
} from './records.js';
import { clusterNodes, clusterRecords, sentinelRecords, serverClusterLinks, type ClusterNode } from './topology.js';
import { userRecords } from './users.js';

/**
 * The `redis` collector type: a Redis server (standalone, replica, sentinel or cluster node), its
 * logical databases, ACL users, replication links and, in those modes, Sentinel or Cluster
 * topology. It reads INFO, CONFIG GET of a fixed list of names, ACL USERS/GETUSER and the
 * SENTINEL/CLUSTER listings; it never reads keys or values.
 *
 * External ids inside the source: `server`, `database/<index>`, `user/<name>`,
 * `peer/<host>:<port>`, `sentinel-master/<name>`, `cluster`, `cluster-node/<id>`; the scope is
 * the server (`config.server_name`, default `host:port`).
 */

const PARTS = ['server', 'databases', 'users', 'replication', 'sentinel', 'cluster'] as const;

const ConfigSchema = Type.Object({
  server_name: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'The instance name CIs are scoped by (default `host:port` of the endpoint).',
    }),
  ),
});

const RECORDS_PER_BATCH = 1000;

async function* inBatches(scopeId: string, records: UniversalRecord[]): AsyncGenerator<CollectedBatch> {
  for (let i = 0; i < records.length; i += RECORDS_PER_BATCH)
    yield { scopeId, records: records.slice(i, i + RECORDS_PER_BATCH) };
}

/** INFO is what every part reads from: a user that may not run it cannot be collected at all. */
async function infoOf(connection: Connection, target: Target): Promise<Info> {
  try {
    return await readInfo(connection);
  } catch (error) {
    const words = error instanceof Error ? error.message : String(error);
    throw new Error(
      /NOPERM/i.test(words)
        ? `the user may not run INFO on ${target.endpoint}: grant at least +ping and +info`
        : `the server at ${target.endpoint} did not answer INFO: ${words.slice(0, 200)}`,
      { cause: error },
    );
  }
}

/**
 * The server's own outgoing links: to its primary (a peer, or a cluster node) and to its cluster;
 * undefined when a cluster's nodes could not be read.
 */
function serverLinks(
  context: CollectContext,
  info: Info,
  nodes: ClusterNode[] | undefined,
): Relationship[] | undefined {
  if (info.cluster?.cluster_enabled === '1') return nodes && serverClusterLinks(nodes);
  const primary = primaryOf(info);
  return primary && isEnabled(context, 'replication')
    ? [{ type: 'replicates_from', target_external_id: `peer/${hostPort(primary.host, primary.port)}` }]
    : [];
}

/**
 * One list of the server. Each part is a component: a failure of one (a command the user may not
 * run) is reported and the others are still collected. Only a server that cannot be reached, or
 * refuses the credentials, fails the run, before anything is written.
 */
async function* collectRedis(context: CollectContext): AsyncGenerator<CollectedBatch> {
  const target = await targetOf(context);
  const scopeId = target.serverName;
  const part = <T>(name: string, load: () => Promise<T>) => loadPart(context, name, load);
  const connection = await connect(context, target);
  try {
    const info = await infoOf(connection, target);
    const mode = modeOf(info);
    const clustered = info.cluster?.cluster_enabled === '1';
    const sentinel = mode === 'sentinel';
    const wantsCluster = clustered && isEnabled(context, 'cluster');
    // the server's links need the nodes too: without the cluster part, a refusal only leaves them as they were
    const nodes = wantsCluster
      ? await part('cluster', () => clusterNodes(connection))
      : clustered && isEnabled(context, 'server')
        ? await clusterNodes(connection).catch(() => undefined)
        : undefined;
    // a sentinel has no CONFIG command and no databases
    let settings: Record<string, string> = {};
    if (!sentinel && (isEnabled(context, 'server') || isEnabled(context, 'databases'))) {
      const read = await part('server', () => readSettings(connection));
      if (read) settings = read;
      if (read && isEnabled(context, 'server')) {
        yield { scopeId, records: [serverRecord(target, info, settings, serverLinks(context, info, nodes))] };
        context.component('server');
      }
    } else if (isEnabled(context, 'server')) {
      yield { scopeId, records: [serverRecord(target, info, settings, serverLinks(context, info, nodes))] };
      context.component('server');
    }
    if (isEnabled(context, 'databases') && !sentinel) {
      for (const records of databaseRecords(info, databaseCount(info, settings), RECORDS_PER_BATCH))
        yield { scopeId, records };
      context.component('databases');
    }
    if (isEnabled(context, 'replication') && !clustered) {
      yield* inBatches(scopeId, replicationPeers(info));
      context.component('replication');
    }
    if (isEnabled(context, 'users')) {
      const users = await part('users', () => userRecords(connection));
      if (users) {
        yield* inBatches(scopeId, users);
        context.component('users');
      }
    }
    if (sentinel && isEnabled(context, 'sentinel')) {
      const records = await part('sentinel', () => sentinelRecords(connection));
      if (records) {
        yield* inBatches(scopeId, records);
        context.component('sentinel');
      }
    }
    if (wantsCluster && nodes) {
      const records = await part('cluster', () => clusterRecords(connection, nodes, target.serverName));
      if (records) {
        yield* inBatches(scopeId, records);
        context.component('cluster');
      }
    }
  } finally {
    await connection.end();
  }
}

export const redisType: CollectorType = {
  type: 'redis',
  description:
    'Discovers a Redis server from INFO, CONFIG GET of a fixed list of settings, ACL GETUSER and, in those modes, ' +
    'SENTINEL and CLUSTER listings (never keys or values, never passwords or their hashes): `redis.server`, ' +
    '`redis.database`, `redis.user`, `redis.peer` (replication partners, sentinel-watched servers), ' +
    '`redis.sentinel_master`, `redis.cluster` and `redis.cluster_node`, with `hosted_on`, `replicates_from`, ' +
    '`monitored_by`, `monitors` and `member_of` relationships. Endpoint `redis://host:port` or `rediss://`; ' +
    'credentials `basic` (ACL user and password), `token` (the `requirepass` password) or `tls` (client certificate).',
  configSchema: ConfigSchema,
  capabilities: {
    supports_universal_format: false,
    supports_multi_source: true,
    supports_watch: false,
    collects: true,
  },
  collectables: PARTS,
  ciTypes: {
    'redis.server': [
      'version',
      'mode',
      'role',
      'maxmemory',
      'maxmemory_policy',
      'save',
      'appendonly',
      'appendfsync',
      'modules',
      'databases',
      'port',
      'bind',
      'cluster_enabled',
      ...HOST_TYPE_DATA_KEYS,
      ...SERVER_METRICS.map((m) => `metrics.${m}`),
    ],
    'redis.database': ['index', 'metrics.keys', 'metrics.expires', 'metrics.avg_ttl_ms'],
    'redis.user': ['enabled', 'nopass', 'flags', 'commands', 'keys', 'channels', 'selectors', 'password_count'],
    'redis.peer': [
      'address',
      'port',
      'role',
      'metrics.link_status',
      'metrics.offset',
      'metrics.lag_seconds',
      'metrics.last_io_seconds_ago',
      'metrics.flags',
    ],
    'redis.sentinel_master': [
      'master_name',
      'address',
      'port',
      'quorum',
      'down_after_ms',
      'failover_timeout_ms',
      'parallel_syncs',
      'metrics.flags',
      'metrics.num_replicas',
      'metrics.num_other_sentinels',
      'metrics.config_epoch',
    ],
    'redis.cluster': [
      'node_id',
      'metrics.state',
      'metrics.slots_assigned',
      'metrics.slots_ok',
      'metrics.known_nodes',
      'metrics.size',
      'metrics.current_epoch',
    ],
    'redis.cluster_node': [
      'node_id',
      'address',
      'port',
      'bus_port',
      'hostname',
      'role',
      'primary_node_id',
      'slots',
      'metrics.link_state',
      'metrics.flags',
      'metrics.config_epoch',
    ],
  },
  endpointSchemes: ['redis', 'rediss'],
  collect: collectRedis,
};
