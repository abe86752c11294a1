import { DemoCluster, type ClusterPlan } from './cluster.js';
import { initialFleet, type FleetState } from './fleet.js';
import { lastHours, STOPPED } from './hosts.js';
import { Random } from './random.js';
import type { Step, Touched } from './step.js';
import { initialServers, serverSources, type ClusterName, type ClusterServers, type ServerSource } from './servers.js';

export type { Step, Touched } from './step.js';

export const DEMO_SEED = 20_261_125;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
export const DEMO_DAYS = 7;

const EVERYTHING = (): Touched[] => ['east', 'west', 'prometheus', 'postgresql', ...serverSources()];

const POOLS: Record<string, readonly string[]> = {
  shop: [
    'frontend',
    'checkout',
    'cart',
    'catalog',
    'recommendations',
    'search-api',
    'cart-cache',
    'reviews',
    'wishlist',
    'pricing',
    'inventory-sync',
    'image-resizer',
    'promotions',
    'sessions-cache',
    'storefront-api',
    'gift-cards',
    'sitemap',
  ],
  payments: [
    'gateway',
    'ledger',
    'fraud-check',
    'refunds',
    'payouts',
    'invoicing',
    'tax-engine',
    'currency-rates',
    'ledger-db',
    'settlement',
    'chargebacks',
    'payment-links',
    'wallet',
    'kyc',
    'billing-queue',
    'receipts',
    'disputes',
  ],
  platform: [
    'auth',
    'notifications',
    'feature-flags',
    'audit-log',
    'queue-worker',
    'scheduler',
    'rate-limiter',
    'config-server',
    'secrets-sync',
    'mailer',
    'sms',
    'webhooks',
    'tenant-admin',
    'api-gateway',
    'edge-cache',
    'status-page',
    'docs',
  ],
  data: [
    'ingest',
    'etl-runner',
    'reporting',
    'events-queue',
    'warehouse-loader',
    'metrics-api',
    'exporter',
    'dedup',
    'enrichment',
    'clickstream',
    'cdc-relay',
    'lake-compactor',
    'bi-api',
    'ml-features',
    'model-serving',
    'labeler',
    'backfill',
  ],
  search: [
    'indexer',
    'query',
    'suggest',
    'ranker',
    'synonyms',
    'crawler',
    'spellcheck',
    'autocomplete',
    'facets',
    'search-cache',
    'reindex-worker',
    'query-log',
    'ab-router',
    'embeddings',
    'vector-db',
    'federation',
    'highlighter',
  ],
  monitoring: [
    'grafana',
    'alertmanager',
    'kube-state-metrics',
    'blackbox',
    'loki-gateway',
    'tempo',
    'pushgateway',
    'oncall',
    'uptime',
    'statsd-bridge',
    'log-router',
    'trace-collector',
    'slo-exporter',
    'pager-bridge',
    'synthetics',
    'cost-exporter',
    'dashboards',
  ],
  internal: [
    'wiki',
    'chat-bot',
    'ci-runner',
    'artifact-cache',
    'license-server',
    'hr-portal',
    'expenses',
    'helpdesk',
    'forms',
    'calendar-sync',
    'vpn-portal',
    'asset-db',
    'badge-reader',
    'room-booking',
    'survey',
    'intranet',
    'timesheets',
  ],
};

const plan = (name: string, nodes: number, network: number, teams: string[], apps: number): ClusterPlan => ({
  name,
  nodes,
  network,
  teams: teams.map((team) => ({ namespace: team, apps: POOLS[team]!.slice(0, apps) })),
});

/** Two clusters: `east` (production, about 1 300 objects) and `west` (about 800). */
export const EAST = plan(
  'east',
  12,
  10,
  ['shop', 'payments', 'platform', 'data', 'search', 'monitoring', 'internal'],
  17,
);
export const WEST = plan('west', 8, 20, ['shop', 'payments', 'platform', 'search', 'monitoring'], 15);

export interface Demo {
  east: DemoCluster;
  west: DemoCluster;
  fleet: FleetState;
  /** The Redis, MariaDB, NATS and RabbitMQ each cluster runs. */
  servers: Record<ClusterName, ClusterServers>;
  /** The moment the steps have reached; the clusters stamp what they create with it. */
  clock: { now: Date };
  steps: Step[];
  start: Date;
  end: Date;
}

/** The moment of a step: `hour:minute` on a day of the week, counted from its first midnight (UTC). */
type At = (day: number, hour: number, minute?: number) => Date;

/**
 * The demo inventory and its week: the same clusters and the same events for the same `end`,
 * which is the start of an hour, so a second run within it finds every record as stored.
 */
export function buildDemo(end: Date): Demo {
  const random = new Random(DEMO_SEED);
  const start = new Date(end.getTime() - DEMO_DAYS * DAY);
  const clock = { now: start };
  const east = new DemoCluster(EAST, random, () => clock.now);
  const west = new DemoCluster(WEST, random, () => clock.now);
  const fleet = initialFleet(
    [east, west].flatMap((cluster) =>
      cluster.nodeNames().map((name) => ({ name, productUuid: cluster.productUuidOf(name) })),
    ),
  );
  const servers = { east: initialServers(east, start), west: initialServers(west, start) };
  const steps: Step[] = [
    {
      at: start,
      what: 'first collection of both clusters and their servers, the Prometheus and the PostgreSQL',
      apply: EVERYTHING,
    },
  ];
  // days are calendar days (UTC) from the first midnight of the week: day 5 is always yesterday
  const firstDay = Math.ceil(start.getTime() / DAY) * DAY;
  const at: At = (day, hour, minute = 0) => new Date(firstDay + day * DAY + hour * HOUR + minute * 60_000);
  ordinaryDays(steps, random, { east, west }, at);
  nodeChanges(steps, east, west, fleet, at);
  tuning(steps, fleet, at);
  serverChanges(steps, servers, at);
  incident(steps, east, at);
  lastHours(steps, east, end);
  // the ordinary days run up to now: what would happen after it is left out
  const week = steps.filter((step) => step.at.getTime() < end.getTime());
  week.sort((a, b) => a.at.getTime() - b.at.getTime());
  steps.splice(0, steps.length, ...week);
  steps.push({
    at: end,
    what: `latest collection of everything but the ${STOPPED}`,
    apply: () => EVERYTHING().filter((source) => source !== STOPPED),
  });
  return { east, west, fleet, servers, clock, steps, start, end };
}

/** Every day of the week: deployments roll new images, some scale with the traffic. */
function ordinaryDays(steps: Step[], random: Random, clusters: { east: DemoCluster; west: DemoCluster }, at: At): void {
  for (let day = 0; day < DEMO_DAYS; day++) {
    for (let i = 0; i < 8; i++) {
      const name = random.pick(['east', 'west'] as const);
      const cluster = clusters[name];
      const app = random.pick(cluster.appNames());
      steps.push({
        at: at(day, 8 + i, random.int(0, 59)),
        what: `${name}: ${app} rolls out a new image`,
        apply: () => (cluster.rollout(app), [name]),
      });
    }
    for (let i = 0; i < 3; i++) {
      const name = random.pick(['east', 'west'] as const);
      const cluster = clusters[name];
      const app = random.pick(cluster.appNames());
      const replicas = random.int(2, 8);
      steps.push({
        at: at(day, 10 + i * 3, random.int(0, 59)),
        what: `${name}: ${app} scales to ${replicas}`,
        apply: () => (cluster.scale(app, replicas), [name]),
      });
    }
  }
}

/** Day 1: the east nodes get a kubelet upgrade; day 2: a west node fails and is replaced. */
function nodeChanges(steps: Step[], east: DemoCluster, west: DemoCluster, fleet: FleetState, at: At): void {
  // one every ten minutes
  east.nodeNames().forEach((node, i) => {
    steps.push({
      at: at(1, 6, i * 10),
      what: `east: ${node} upgraded to kubelet v1.30.5`,
      apply: () => (east.upgradeNode(node, 'v1.30.5'), ['east']),
    });
  });
  // the failed node's exporter goes quiet, then the new one is scraped
  const failing = west.nodeNames()[3]!;
  steps.push({
    at: at(2, 2, 17),
    what: `west: ${failing} stops answering`,
    apply: () => (fleet.hosts.set(failing, false), ['prometheus']),
  });
  steps.push({
    at: at(2, 2, 40),
    what: `west: ${failing} is drained and replaced`,
    apply: () => {
      west.removeNode(failing);
      fleet.hosts.delete(failing);
      fleet.productUuids.delete(failing);
      const added = west.addNode();
      fleet.hosts.set(added, true);
      fleet.productUuids.set(added, west.productUuidOf(added));
      return ['west', 'prometheus'];
    },
  });
}

/** Days 3 and 4: the database and the monitoring are tuned and upgraded. */
function tuning(steps: Step[], fleet: FleetState, at: At): void {
  steps.push({
    at: at(3, 9, 30),
    what: 'postgresql: max_connections 200 → 300',
    apply: () => ((fleet.maxConnections = 300), ['postgresql']),
  });
  steps.push({
    at: at(3, 9, 45),
    what: 'postgresql: orders_app may hold 80 connections',
    apply: () => (fleet.roleLimits.set('orders_app', 80), ['postgresql']),
  });
  steps.push({
    at: at(4, 11, 5),
    what: 'postgresql: pg_stat_statements 1.10 → 1.11',
    apply: () => (fleet.extensions.set('pg_stat_statements', '1.11'), ['postgresql']),
  });
  steps.push({
    at: at(4, 15, 20),
    what: 'prometheus: upgraded to 2.54.0',
    apply: () => ((fleet.prometheusVersion = '2.54.0'), ['prometheus']),
  });
}

/** Through the week: each cluster's Redis, MariaDB, NATS and RabbitMQ reconfigured once. */
function serverChanges(steps: Step[], servers: Record<ClusterName, ClusterServers>, at: At): void {
  const change = (when: Date, source: ServerSource, what: string, apply: () => void) =>
    steps.push({ at: when, what: `${source}: ${what}`, apply: () => (apply(), [source]) });
  const { east, west } = servers;
  change(at(1, 10, 15), 'redis-east', 'maxmemory-policy noeviction → allkeys-lru', () => {
    east.redis.maxmemoryPolicy = 'allkeys-lru';
  });
  change(at(3, 16, 0), 'redis-west', 'maxmemory 4 GiB → 6 GiB', () => (west.redis.maxmemory = 6 * 2 ** 30));
  change(at(2, 11, 30), 'mariadb-east', 'max_connections 151 → 300', () => (east.mariadb.maxConnections = 300));
  change(at(4, 9, 10), 'mariadb-west', 'long_query_time 10 → 2', () => (west.mariadb.longQueryTime = 2));
  change(at(3, 14, 0), 'nats-east', 'stream ORDERS keeps 14 days (max_age 7d → 14d)', () => {
    east.nats.streams.get('ORDERS')!.maxAgeDays = 14;
  });
  change(at(4, 17, 30), 'nats-west', 'stream EVENTS gains the durable consumer reindex-worker', () => {
    west.nats.streams.get('EVENTS')!.consumers.push('reindex-worker');
  });
  change(at(2, 15, 0), 'rabbitmq-east', 'policy shop/limits: max-length 100 000 → 250 000', () => {
    east.rabbitmq.policies[0]!.definition = { ...east.rabbitmq.policies[0]!.definition, 'max-length': 250_000 };
  });
  change(at(4, 13, 0), 'rabbitmq-west', 'policy payments/dead-letter applied to refunds', () => {
    west.rabbitmq.policies.push({
      vhost: 'payments',
      name: 'dead-letter',
      pattern: '^refunds$',
      'apply-to': 'queues',
      definition: { 'dead-letter-exchange': 'payments.dlx', 'delivery-limit': 5 },
      priority: 10,
    });
  });
  // before the checkout incident, and after its rollback: only metrics move, no change record is written
  const consumers = (when: Date, count: number, what: string) =>
    change(when, 'rabbitmq-east', what, () => east.rabbitmq.consumers.set('shop/checkout.payments', count));
  consumers(at(5, 13, 30), 0, 'queue shop/checkout.payments has no consumers left');
  consumers(at(5, 14, 25), 3, 'queue shop/checkout.payments is consumed again');
}

/**
 * Yesterday afternoon: a configuration change to checkout ships, its pods crash in a loop, and it
 * is rolled back twenty minutes later. The change precedes the incident in every view.
 */
function incident(steps: Step[], east: DemoCluster, at: At): void {
  const app = 'shop/checkout';
  let previous: { version: number; env: Record<string, string> } | undefined;
  steps.push({
    at: at(5, 13, 40),
    what: 'east: checkout ships PAYMENT_TIMEOUT_MS=500 with a new config key',
    apply: () => {
      previous = east.settingsOf(app);
      east.configure(app, { 'payment-timeout.yaml': 'timeout_ms: 500' });
      east.rollout(app, { env: { PAYMENT_TIMEOUT_MS: '500' } });
      return ['east'];
    },
  });
  steps.push({
    at: at(5, 13, 52),
    what: 'east: checkout pods crash in a loop',
    apply: () => (east.crash(app, 3), ['east']),
  });
  steps.push({
    at: at(5, 14, 5),
    what: 'east: checkout pods keep crashing',
    apply: () => (east.crash(app, 9), ['east']),
  });
  steps.push({
    at: at(5, 14, 20),
    what: 'east: checkout rolled back',
    apply: () => (east.rollback(app, previous!.version, previous!.env), ['east']),
  });
}
