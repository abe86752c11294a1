import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import { hostFacts, isLoopback } from '../shared/host.js';
import type { Target } from './api.js';

/**
 * External ids inside the source. A virtual host's name may hold slashes (the default one is
 * `/`), so it is percent-encoded where another name follows it.
 */
export const ids = {
  cluster: 'cluster',
  node: (name: string) => `node/${name}`,
  vhost: (name: string) => `vhost/${name}`,
  inVhost: (kind: string, vhost: string, name: string) => `${kind}/${encodeURIComponent(vhost)}/${name}`,
  user: (name: string) => `user/${name}`,
};

export interface Listener {
  node: string;
  protocol: string;
  ip_address: string;
  port: number;
}

export interface Overview {
  cluster_name?: string;
  /** The node that answered the request. */
  node?: string;
  rabbitmq_version?: string;
  erlang_version?: string;
  management_version?: string;
  product_name?: string;
  product_version?: string;
  rates_mode?: string;
  listeners?: Listener[];
  object_totals?: Record<string, number>;
  queue_totals?: Record<string, number>;
  message_stats?: Record<string, unknown>;
}

/** A rate of `message_stats` (`publish_details.rate`), or null when the server keeps none. */
export function rateOf(stats: unknown, name: string): number | null {
  const details = (stats as Record<string, { rate?: unknown } | undefined> | undefined)?.[`${name}_details`];
  return typeof details?.rate === 'number' ? details.rate : null;
}

const num = (value: unknown): number | null => (typeof value === 'number' ? value : null);

/** The listeners as configuration: sorted, so the same listeners in another order are no change. */
function listenersOf(overview: Overview) {
  return (overview.listeners ?? [])
    .map((l) => ({ node: l.node, protocol: l.protocol, ip_address: l.ip_address, port: l.port }))
    .sort((a, b) => `${a.node} ${a.protocol} ${a.port}`.localeCompare(`${b.node} ${b.protocol} ${b.port}`));
}

export function clusterRecord(overview: Overview): UniversalRecord {
  const name = overview.cluster_name || 'rabbitmq';
  const config = {
    cluster_name: overview.cluster_name ?? null,
    version: overview.rabbitmq_version ?? null,
    erlang_version: overview.erlang_version ?? null,
    management_version: overview.management_version ?? null,
    product_name: overview.product_name ?? null,
    product_version: overview.product_version ?? null,
    rates_mode: overview.rates_mode ?? null,
    listeners: listenersOf(overview),
  };
  const totals = overview.object_totals ?? {};
  return {
    external_id: ids.cluster,
    ci_type: 'rabbitmq.cluster',
    name,
    raw_data: config,
    type_data: {
      cluster_name: config.cluster_name,
      version: config.version,
      erlang_version: config.erlang_version,
      management_version: config.management_version,
      listeners: config.listeners,
      metrics: {
        connections: num(totals.connections),
        channels: num(totals.channels),
        queues: num(totals.queues),
        consumers: num(totals.consumers),
        messages: num(overview.queue_totals?.messages),
        publish_rate: rateOf(overview.message_stats, 'publish'),
        deliver_rate: rateOf(overview.message_stats, 'deliver_get'),
      },
    },
  };
}

export interface NodeInfo {
  name: string;
  type?: string;
  running?: boolean;
  enabled_plugins?: string[];
  fd_total?: number;
  sockets_total?: number;
  mem_limit?: number;
  disk_free_limit?: number;
  proc_total?: number;
  processors?: number;
  net_ticktime?: number;
  rates_mode?: string;
  mem_used?: number;
  fd_used?: number;
  sockets_used?: number;
  proc_used?: number;
  disk_free?: number;
  uptime?: number;
}

/**
 * A node of the cluster. Its OS process id, memory and descriptors in use and uptime move without
 * any configuration changing: the pid is left out, the rest are metrics. A node that is down is
 * listed with `running: false` and little else; its last known limits are then null.
 */
export function nodeRecord(node: NodeInfo, overview: Overview, target: Target): UniversalRecord {
  // a node that runs but has no statistics yet (it started moments ago) would read as limits gone
  if (node.running && node.fd_total === undefined)
    throw new Error(
      `the server has no statistics of node ${node.name} yet (it has just started); the next run reads it`,
    );
  const config = {
    type: node.type ?? null,
    running: node.running ?? null,
    enabled_plugins: [...(node.enabled_plugins ?? [])].sort(),
    fd_total: num(node.fd_total),
    sockets_total: num(node.sockets_total),
    mem_limit: num(node.mem_limit),
    disk_free_limit: num(node.disk_free_limit),
    proc_total: num(node.proc_total),
    processors: num(node.processors),
    net_ticktime: num(node.net_ticktime),
  };
  const hostname = node.name.includes('@') ? node.name.slice(node.name.indexOf('@') + 1) : null;
  const listeners = listenersOf(overview).filter((l) => l.node === node.name);
  return {
    external_id: ids.node(node.name),
    ci_type: 'rabbitmq.node',
    name: node.name,
    raw_data: { ...config, listeners },
    type_data: {
      ...config,
      host: hostFacts({
        hostname,
        addresses: listeners.map((l) => l.ip_address),
        endpoint: target.endpoint,
        // over loopback only the node that answered is this machine; the others are its cluster peers
        local: node.name === overview.node && isLoopback(new URL(target.base).hostname),
      }),
      metrics: {
        mem_used: num(node.mem_used),
        fd_used: num(node.fd_used),
        sockets_used: num(node.sockets_used),
        proc_used: num(node.proc_used),
        disk_free: num(node.disk_free),
        uptime_seconds: typeof node.uptime === 'number' ? Math.round(node.uptime / 1000) : null,
      },
    },
    relationships: [{ type: 'member_of', target_external_id: ids.cluster }],
  };
}

export interface VhostInfo {
  name: string;
  description?: string;
  tags?: string[] | string;
  default_queue_type?: string;
  tracing?: boolean;
  metadata?: { description?: string; tags?: string[]; default_queue_type?: string };
  messages?: number;
  messages_ready?: number;
  messages_unacknowledged?: number;
}

/** Tags as the API gives them (a list, or a comma-separated text before 3.9), as a sorted list. */
export const tagsOf = (tags: string[] | string | undefined): string[] =>
  (Array.isArray(tags) ? tags : (tags ?? '').split(','))
    .map((t) => t.trim())
    .filter(Boolean)
    .sort();

export function vhostRecord(vhost: VhostInfo): UniversalRecord {
  const config = {
    description: vhost.description ?? vhost.metadata?.description ?? '',
    tags: tagsOf(vhost.tags ?? vhost.metadata?.tags),
    // 3.10 answers the text `undefined` for a virtual host declared without one
    default_queue_type:
      [vhost.default_queue_type, vhost.metadata?.default_queue_type].find((t) => t && t !== 'undefined') ?? null,
    tracing: vhost.tracing ?? false,
  };
  return {
    external_id: ids.vhost(vhost.name),
    ci_type: 'rabbitmq.vhost',
    name: vhost.name,
    raw_data: config,
    type_data: {
      ...config,
      metrics: {
        messages: num(vhost.messages),
        messages_ready: num(vhost.messages_ready),
        messages_unacknowledged: num(vhost.messages_unacknowledged),
      },
    },
    relationships: [{ type: 'hosted_on', target_external_id: ids.cluster }],
  };
}
