import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import type { Connection } from './connection.js';
import { numberOr, pairsOf } from './info.js';
import { hostPort, peerRecord } from './records.js';

/**
 * Sentinel and Cluster topology, read only when the server runs in that mode: a sentinel's
 * monitored primaries with their replicas and the other sentinels (SENTINEL MASTERS, REPLICAS,
 * SENTINELS), and a cluster's nodes with their slots (CLUSTER NODES, CLUSTER INFO).
 */

/** Peers seen more than once (a replica of two monitored primaries) are one record with every relationship. */
function merged(records: UniversalRecord[]): UniversalRecord[] {
  const byId = new Map<string, UniversalRecord>();
  for (const record of records) {
    const seen = byId.get(record.external_id);
    if (!seen) byId.set(record.external_id, record);
    else seen.relationships = [...(seen.relationships ?? []), ...(record.relationships ?? [])];
  }
  return [...byId.values()];
}

const text = (value: unknown) => (value === undefined || value === null ? null : String(value));

export async function sentinelRecords(connection: Connection): Promise<UniversalRecord[]> {
  const masters = ((await connection.call('SENTINEL', 'MASTERS')) as unknown[]).map(pairsOf);
  const records: UniversalRecord[] = [];
  const names = masters.map((m) => String(m.name));
  const answers = await connection.batch(
    names.flatMap((name) => [
      ['SENTINEL', 'REPLICAS', name],
      ['SENTINEL', 'SENTINELS', name],
    ]),
  );
  for (const [i, master] of masters.entries()) {
    const name = names[i]!;
    const id = `sentinel-master/${name}`;
    const settings = {
      master_name: name,
      address: text(master.ip),
      port: numberOr(text(master.port) ?? undefined),
      quorum: numberOr(text(master.quorum) ?? undefined),
      down_after_ms: numberOr(text(master['down-after-milliseconds']) ?? undefined),
      failover_timeout_ms: numberOr(text(master['failover-timeout']) ?? undefined),
      parallel_syncs: numberOr(text(master['parallel-syncs']) ?? undefined),
    };
    records.push({
      external_id: id,
      ci_type: 'redis.sentinel_master',
      name,
      raw_data: settings,
      type_data: {
        ...settings,
        metrics: {
          flags: text(master.flags),
          num_replicas: numberOr(text(master['num-slaves']) ?? undefined),
          num_other_sentinels: numberOr(text(master['num-other-sentinels']) ?? undefined),
          config_epoch: numberOr(text(master['config-epoch']) ?? undefined),
        },
      },
      relationships: [{ type: 'monitored_by', target_external_id: 'server' }],
    });
    const [replicas, sentinels] = [answers[2 * i]!, answers[2 * i + 1]!];
    for (const [answer, role] of [
      [replicas, 'replica'],
      [sentinels, 'sentinel'],
    ] as const) {
      if (answer.error !== undefined) throw new Error(`SENTINEL ${role.toUpperCase()}S ${name}: ${answer.error}`);
      for (const peer of (answer.value as unknown[]).map(pairsOf)) {
        const port = numberOr(text(peer.port) ?? undefined);
        if (!peer.ip || port === null) continue;
        const verb = role === 'replica' ? 'replicates_from' : 'monitors';
        records.push(
          peerRecord(String(peer.ip), port, role, [{ type: verb, target_external_id: id }], {
            flags: text(peer.flags),
            link_status: text(peer['master-link-status']),
          }),
        );
      }
    }
  }
  return merged(records);
}

/** One line of CLUSTER NODES. */
export interface ClusterNode {
  id: string;
  address: string;
  port: number;
  busPort: number | null;
  hostname: string | null;
  flags: string[];
  primaryId: string | null;
  configEpoch: number | null;
  linkState: string;
  slots: string[];
  myself: boolean;
}

/** `<id> <ip:port@cport[,hostname]> <flags> <primary> <ping> <pong> <epoch> <link> <slot>…` */
export function parseClusterNodes(answer: string): ClusterNode[] {
  const nodes: ClusterNode[] = [];
  for (const line of answer.split(/\r?\n/)) {
    const [id, addr, flags, primary, , , epoch, link, ...slots] = line.trim().split(' ');
    if (!id || !addr || !flags) continue;
    const [endpoint = '', hostname] = addr.split(',');
    const [hostAndPort = '', bus] = endpoint.split('@');
    const at = hostAndPort.lastIndexOf(':');
    const flagList = flags.split(',');
    nodes.push({
      id,
      address: hostAndPort.slice(0, at).replace(/^\[|\]$/g, ''),
      port: Number(hostAndPort.slice(at + 1)),
      busPort: numberOr(bus),
      hostname: hostname || null,
      flags: flagList,
      primaryId: primary && primary !== '-' ? primary : null,
      configEpoch: numberOr(epoch),
      linkState: link ?? '',
      // migrating and importing slots (`[slot->-node]`) move during a resharding: left out
      slots: slots.filter((s) => s && !s.startsWith('[')),
      myself: flagList.includes('myself'),
    });
  }
  return nodes.sort((a, b) => a.id.localeCompare(b.id));
}

export async function clusterNodes(connection: Connection): Promise<ClusterNode[]> {
  return parseClusterNodes(String(await connection.call('CLUSTER', 'NODES')));
}

const roleOfNode = (node: ClusterNode) => (node.flags.includes('slave') ? 'replica' : 'primary');

/** The server record's links in a cluster: a member of it, and the replica of a node when it is one. */
export function serverClusterLinks(nodes: ClusterNode[]): { type: string; target_external_id: string }[] {
  const myself = nodes.find((n) => n.myself);
  const links = [{ type: 'member_of', target_external_id: 'cluster' }];
  if (myself?.primaryId)
    links.push({ type: 'replicates_from', target_external_id: `cluster-node/${myself.primaryId}` });
  return links;
}

/**
 * The cluster as this server sees it (`cluster`, its state and sizes as metrics) and every other
 * node (`cluster-node/<id>`); this server is the `myself` node and is not repeated.
 */
export async function clusterRecords(
  connection: Connection,
  nodes: ClusterNode[],
  serverName: string,
): Promise<UniversalRecord[]> {
  const info: Record<string, string> = {};
  for (const line of String(await connection.call('CLUSTER', 'INFO')).split(/\r?\n/)) {
    const at = line.indexOf(':');
    if (at > 0) info[line.slice(0, at)] = line.slice(at + 1).trim();
  }
  const myself = nodes.find((n) => n.myself);
  const records: UniversalRecord[] = [
    {
      external_id: 'cluster',
      ci_type: 'redis.cluster',
      name: `${serverName} cluster`,
      raw_data: { node_id: myself?.id ?? null },
      type_data: {
        node_id: myself?.id ?? null,
        metrics: {
          state: info.cluster_state ?? null,
          slots_assigned: numberOr(info.cluster_slots_assigned),
          slots_ok: numberOr(info.cluster_slots_ok),
          known_nodes: numberOr(info.cluster_known_nodes),
          size: numberOr(info.cluster_size),
          current_epoch: numberOr(info.cluster_current_epoch),
        },
      },
    },
  ];
  for (const node of nodes.filter((n) => !n.myself)) {
    const primary =
      node.primaryId === null ? null : node.primaryId === myself?.id ? 'server' : `cluster-node/${node.primaryId}`;
    const settings = {
      node_id: node.id,
      address: node.address,
      port: node.port,
      bus_port: node.busPort,
      hostname: node.hostname,
      role: roleOfNode(node),
      primary_node_id: node.primaryId,
      slots: node.slots,
    };
    records.push({
      external_id: `cluster-node/${node.id}`,
      ci_type: 'redis.cluster_node',
      name: hostPort(node.address, node.port),
      raw_data: settings,
      type_data: {
        ...settings,
        metrics: { link_state: node.linkState, flags: node.flags.join(','), config_epoch: node.configEpoch },
      },
      relationships: [
        { type: 'member_of', target_external_id: 'cluster' },
        ...(primary ? [{ type: 'replicates_from', target_external_id: primary }] : []),
      ],
    });
  }
  return records;
}
