import type { UniversalRecord } from '../../inventory/write-path/records.js';
import { policyRecord, userRecords, type PolicyInfo } from '../types/rabbitmq/access.js';
import type { Target } from '../types/rabbitmq/api.js';
import { bindingsBySource, exchangeRecord, queueRecord, type Binding } from '../types/rabbitmq/objects.js';
import type { ExchangeInfo, QueueInfo } from '../types/rabbitmq/objects.js';
import {
  clusterRecord,
  ids,
  nodeRecord,
  vhostRecord,
  type NodeInfo,
  type Overview,
} from '../types/rabbitmq/records.js';
import type { ServerHost } from './server-host.js';

/**
 * A cluster's RabbitMQ: three nodes on nodes of the Kubernetes cluster, with virtual hosts for the
 * shop and the payments. Its management API answers (/api/overview, /api/nodes, /api/bindings,
 * /api/queues …) are written out as RabbitMQ 3.13 gives them and read by the `rabbitmq` collector
 * type's own mapping, so the CIs are what a collection stores.
 */
export interface RabbitmqState {
  name: string;
  hosts: ServerHost[];
  startedAt: Date;
  /** Queue (`vhost/name`) → how many consumers it has: a metric, it writes no change record. */
  consumers: Map<string, number>;
  policies: PolicyInfo[];
}

interface QueuePlan {
  vhost: string;
  name: string;
  type: 'quorum' | 'classic';
  exchange: string;
  key: string;
}

const QUEUES: QueuePlan[] = [
  { vhost: 'shop', name: 'checkout.payments', type: 'quorum', exchange: 'orders', key: 'order.placed' },
  { vhost: 'shop', name: 'checkout.emails', type: 'quorum', exchange: 'orders', key: 'order.*' },
  { vhost: 'shop', name: 'cart.expiry', type: 'classic', exchange: 'carts', key: 'cart.expired' },
  { vhost: 'payments', name: 'ledger.entries', type: 'quorum', exchange: 'payments', key: 'payment.settled' },
  { vhost: 'payments', name: 'refunds', type: 'quorum', exchange: 'payments', key: 'payment.refunded' },
  { vhost: '/', name: 'notifications', type: 'classic', exchange: 'amq.topic', key: 'notify.#' },
];
const EXCHANGES: { vhost: string; name: string; type: string }[] = [
  { vhost: 'shop', name: 'orders', type: 'topic' },
  { vhost: 'shop', name: 'carts', type: 'direct' },
  { vhost: 'payments', name: 'payments', type: 'direct' },
];
/** The exchanges every virtual host has from its start. */
const STANDARD = [
  ['amq.direct', 'direct'],
  ['amq.fanout', 'fanout'],
  ['amq.headers', 'headers'],
  ['amq.match', 'headers'],
  ['amq.rabbitmq.trace', 'topic'],
  ['amq.topic', 'topic'],
] as const;
const VHOSTS = ['/', 'payments', 'shop'];

export function initialRabbitmq(name: string, hosts: ServerHost[], startedAt: Date): RabbitmqState {
  return {
    name,
    hosts,
    startedAt,
    consumers: new Map(QUEUES.map((q) => [`${q.vhost}/${q.name}`, q.type === 'quorum' ? 3 : 1])),
    policies: [
      {
        vhost: 'shop',
        name: 'limits',
        pattern: '.*',
        'apply-to': 'queues',
        definition: { 'max-length': 100_000, overflow: 'reject-publish' },
        priority: 0,
      },
    ],
  };
}

const nodeName = (host: ServerHost) => `rabbit@${host.node}`;

function overview(state: RabbitmqState, now: Date): Overview {
  const hours = Math.floor((now.getTime() - state.startedAt.getTime()) / 3_600_000);
  const consumers = [...state.consumers.values()].reduce((sum, n) => sum + n, 0);
  return {
    cluster_name: state.name,
    rabbitmq_version: '3.13.7',
    erlang_version: '26.2.5.3',
    management_version: '3.13.7',
    product_name: 'RabbitMQ',
    product_version: '3.13.7',
    rates_mode: 'basic',
    listeners: state.hosts.flatMap((host) =>
      [
        ['amqp', 5672],
        ['clustering', 25672],
        ['http', 15672],
        ['http/prometheus', 15692],
      ].map(([protocol, port]) => ({
        node: nodeName(host),
        protocol: String(protocol),
        ip_address: host.address,
        port: Number(port),
      })),
    ),
    object_totals: { connections: 48 + (hours % 12), channels: 96, queues: QUEUES.length, consumers },
    queue_totals: { messages: queued(state).reduce((sum, q) => sum + q.messages, 0) },
    message_stats: { publish_details: { rate: 210.4 }, deliver_get_details: { rate: 209.8 } },
  };
}

function nodes(state: RabbitmqState, now: Date): NodeInfo[] {
  const uptime = now.getTime() - state.startedAt.getTime();
  return state.hosts.map((host, i) => ({
    name: nodeName(host),
    type: 'disc',
    running: true,
    enabled_plugins: ['rabbitmq_management', 'rabbitmq_peer_discovery_k8s', 'rabbitmq_prometheus'],
    fd_total: 1_048_576,
    sockets_total: 943_629,
    mem_limit: 6_871_947_673,
    disk_free_limit: 1_000_000_000,
    proc_total: 1_048_576,
    processors: 8,
    net_ticktime: 60,
    rates_mode: 'basic',
    mem_used: 640_000_000 + i * 40_000_000 + (Math.floor(uptime / 3_600_000) % 24) * 3_000_000,
    fd_used: 120 + i * 7,
    sockets_used: 40 + i * 4,
    proc_used: 1900 + i * 60,
    disk_free: 80_000_000_000 - i * 2_000_000_000,
    uptime,
  }));
}

/** A queue's answer: it fills while nobody consumes it. */
function queued(state: RabbitmqState): (QueueInfo & { messages: number })[] {
  return QUEUES.map((q, i) => {
    const consumers = state.consumers.get(`${q.vhost}/${q.name}`) ?? 0;
    const ready = consumers === 0 ? 18_000 + i * 100 : i * 3;
    const policy = [...state.policies]
      .filter((p) => p.vhost === q.vhost && new RegExp(p.pattern).test(q.name))
      .sort((a, b) => b.priority - a.priority)[0];
    return {
      name: q.name,
      vhost: q.vhost,
      type: q.type,
      durable: true,
      auto_delete: false,
      exclusive: false,
      arguments: q.type === 'quorum' ? { 'x-queue-type': 'quorum' } : {},
      node: nodeName(state.hosts[i % state.hosts.length]!),
      policy: policy?.name ?? null,
      operator_policy: null,
      messages: ready + consumers,
      messages_ready: ready,
      messages_unacknowledged: consumers,
      consumers,
      message_stats: {
        publish_details: { rate: 12.5 + i },
        deliver_get_details: { rate: consumers === 0 ? 0 : 12.5 + i },
        ack_details: { rate: consumers === 0 ? 0 : 12.5 + i },
      },
    };
  });
}

/** /api/exchanges: the broker's own in every virtual host (the nameless default one too), and the applications'. */
function exchanges(): ExchangeInfo[] {
  const info = (vhost: string, name: string, type: string): ExchangeInfo => ({
    name,
    vhost,
    type,
    durable: true,
    auto_delete: false,
    internal: name === 'amq.rabbitmq.trace',
    arguments: {},
    policy: null,
  });
  return [
    ...VHOSTS.flatMap((vhost) => [
      info(vhost, '', 'direct'),
      ...STANDARD.map(([name, type]) => info(vhost, name, type)),
    ]),
    ...EXCHANGES.map((e) => info(e.vhost, e.name, e.type)),
  ].sort((a, b) => `${a.vhost} ${a.name}`.localeCompare(`${b.vhost} ${b.name}`));
}

/** /api/bindings: each queue's binding from the default exchange (the broker's), and the one configured. */
function bindings(): Binding[] {
  return QUEUES.flatMap((q) => [
    { source: '', vhost: q.vhost, destination: q.name, destination_type: 'queue' as const, routing_key: q.name },
    { source: q.exchange, vhost: q.vhost, destination: q.name, destination_type: 'queue' as const, routing_key: q.key },
  ]);
}

const USERS = [
  { name: 'admin', tags: ['administrator'] },
  { name: 'monitoring', tags: ['monitoring'] },
  { name: 'shop-app', tags: [] },
  { name: 'payments-app', tags: [] },
];
const PERMISSIONS = [
  ...VHOSTS.map((vhost) => ({ user: 'admin', vhost, configure: '.*', write: '.*', read: '.*' })),
  ...VHOSTS.map((vhost) => ({ user: 'monitoring', vhost, configure: '', write: '', read: '' })),
  { user: 'shop-app', vhost: 'shop', configure: '^$', write: '^(orders|carts)$', read: '^(checkout|cart)\\..*' },
  { user: 'payments-app', vhost: 'payments', configure: '^$', write: '^payments$', read: '.*' },
];

/** Everything a collection reports now, in the collector's order: cluster, nodes, vhosts, exchanges, queues, users, policies. */
export function rabbitmqRecords(state: RabbitmqState, now: Date): UniversalRecord[] {
  const target: Target = {
    base: `http://${state.name}.demo.invalid:15672/`,
    endpoint: `${state.name}.demo.invalid:15672`,
    serverName: state.name,
  };
  const answer = overview(state, now);
  const routes = bindingsBySource(bindings());
  return [
    clusterRecord(answer),
    ...nodes(state, now).map((node) => nodeRecord(node, answer, target)),
    ...VHOSTS.map((name) => vhostRecord({ name, description: '', tags: [], default_queue_type: 'quorum' })),
    ...exchanges()
      .filter((e) => e.name !== '')
      .map((e) => exchangeRecord(e, routes.get(ids.inVhost('exchange', e.vhost, e.name)) ?? [])),
    ...queued(state).map(queueRecord),
    ...userRecords(USERS, PERMISSIONS, []),
    ...state.policies.map((policy) => policyRecord(policy, false)),
  ];
}
