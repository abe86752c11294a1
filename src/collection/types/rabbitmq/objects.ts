import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import { ids, rateOf } from './records.js';

/** The columns asked of the queue list: configuration and the counters kept as metrics, nothing per consumer. */
export const QUEUE_COLUMNS = [
  'name',
  'vhost',
  'type',
  'durable',
  'auto_delete',
  'exclusive',
  'arguments',
  'node',
  'policy',
  'operator_policy',
  'messages',
  'messages_ready',
  'messages_unacknowledged',
  'consumers',
  'message_stats.publish_details.rate',
  'message_stats.deliver_get_details.rate',
  'message_stats.ack_details.rate',
].join(',');

export const EXCHANGE_COLUMNS = [
  'name',
  'vhost',
  'type',
  'durable',
  'auto_delete',
  'internal',
  'arguments',
  'policy',
  'message_stats.publish_in_details.rate',
  'message_stats.publish_out_details.rate',
].join(',');

export interface Binding {
  source: string;
  vhost: string;
  destination: string;
  destination_type: 'queue' | 'exchange';
  routing_key: string;
  arguments?: Record<string, unknown>;
}

/** What an exchange's `bindings` list keeps of one binding: where it routes and on which key. */
interface Route {
  destination_type: string;
  destination: string;
  routing_key: string;
  arguments: Record<string, unknown>;
}

/**
 * The bindings by the exchange they route from. Those of the default exchange (every queue's own
 * name) are left out: the broker makes them, nobody configures them.
 */
export function bindingsBySource(bindings: Binding[]): Map<string, Route[]> {
  const bySource = new Map<string, Route[]>();
  for (const b of bindings) {
    if (b.source === '') continue;
    const key = ids.inVhost('exchange', b.vhost, b.source);
    let routes = bySource.get(key);
    if (!routes) bySource.set(key, (routes = []));
    routes.push({
      destination_type: b.destination_type,
      destination: b.destination,
      routing_key: b.routing_key,
      arguments: b.arguments ?? {},
    });
  }
  for (const routes of bySource.values())
    routes.sort((a, b) =>
      `${a.destination_type}\u0000${a.destination}\u0000${a.routing_key}`.localeCompare(
        `${b.destination_type}\u0000${b.destination}\u0000${b.routing_key}`,
      ),
    );
  return bySource;
}

export interface ExchangeInfo {
  name: string;
  vhost: string;
  type: string;
  durable: boolean;
  auto_delete: boolean;
  internal: boolean;
  arguments?: Record<string, unknown>;
  policy?: string | null;
  message_stats?: unknown;
}

/**
 * An exchange with its bindings. Relationships carry only a type, so the routing keys are kept in
 * the exchange's `bindings` list: a binding added or removed is one change of `raw_data.bindings`,
 * and the `routes_to` relationships follow the same list.
 */
export function exchangeRecord(exchange: ExchangeInfo, routes: Route[]): UniversalRecord {
  const config = {
    type: exchange.type,
    durable: exchange.durable,
    auto_delete: exchange.auto_delete,
    internal: exchange.internal,
    arguments: exchange.arguments ?? {},
    policy: exchange.policy || null,
  };
  const targets = new Set(routes.map((r) => ids.inVhost(r.destination_type, exchange.vhost, r.destination)));
  return {
    external_id: ids.inVhost('exchange', exchange.vhost, exchange.name),
    ci_type: 'rabbitmq.exchange',
    name: exchange.name,
    namespace: exchange.vhost,
    raw_data: { ...config, bindings: routes },
    type_data: {
      ...config,
      vhost: exchange.vhost,
      bindings: routes,
      metrics: {
        publish_in_rate: rateOf(exchange.message_stats, 'publish_in'),
        publish_out_rate: rateOf(exchange.message_stats, 'publish_out'),
      },
    },
    relationships: [
      { type: 'in_vhost', target_external_id: ids.vhost(exchange.vhost) },
      ...[...targets].map((target) => ({ type: 'routes_to', target_external_id: target })),
    ],
  };
}

export interface QueueInfo {
  name: string;
  vhost: string;
  type?: string;
  durable: boolean;
  auto_delete: boolean;
  exclusive?: boolean;
  arguments?: Record<string, unknown>;
  node?: string;
  policy?: string | null;
  operator_policy?: string | null;
  messages?: number;
  messages_ready?: number;
  messages_unacknowledged?: number;
  consumers?: number;
  message_stats?: unknown;
}

const num = (value: unknown): number | null => (typeof value === 'number' ? value : null);

/** A queue: its declaration and policies as configuration; what it holds and who consumes it as metrics. */
export function queueRecord(queue: QueueInfo): UniversalRecord {
  const config = {
    type: queue.type ?? 'classic',
    durable: queue.durable,
    auto_delete: queue.auto_delete,
    exclusive: queue.exclusive ?? false,
    arguments: queue.arguments ?? {},
    node: queue.node ?? null,
    policy: queue.policy || null,
    operator_policy: queue.operator_policy || null,
  };
  return {
    external_id: ids.inVhost('queue', queue.vhost, queue.name),
    ci_type: 'rabbitmq.queue',
    name: queue.name,
    namespace: queue.vhost,
    raw_data: config,
    type_data: {
      ...config,
      vhost: queue.vhost,
      metrics: {
        messages: num(queue.messages),
        messages_ready: num(queue.messages_ready),
        messages_unacknowledged: num(queue.messages_unacknowledged),
        consumers: num(queue.consumers),
        publish_rate: rateOf(queue.message_stats, 'publish'),
        deliver_rate: rateOf(queue.message_stats, 'deliver_get'),
        ack_rate: rateOf(queue.message_stats, 'ack'),
      },
    },
    relationships: [
      { type: 'in_vhost', target_external_id: ids.vhost(queue.vhost) },
      ...(queue.node ? [{ type: 'hosted_on', target_external_id: ids.node(queue.node) }] : []),
    ],
  };
}
