import type { UniversalRecord } from '../../inventory/write-path/records.js';
import type { DemoCluster } from './cluster.js';
import type { ServerHost } from './server-host.js';
import { initialMariadb, mariadbRecords, type MariadbState } from './mariadb.js';
import { initialNats, natsRecords, type NatsState } from './nats.js';
import { initialRabbitmq, rabbitmqRecords, type RabbitmqState } from './rabbitmq.js';
import { initialRedis, redisRecords, type RedisState } from './redis.js';

/**
 * The servers each demo cluster runs beside its workloads (a Redis, a MariaDB, a NATS, a RabbitMQ), each a
 * source of its own collected by its collector type, on nodes of the cluster: their host facts
 * name those nodes and addresses, as a collection of such a server finds them.
 */

export const SERVER_KINDS = ['redis', 'mariadb', 'nats', 'rabbitmq'] as const;
export type ServerKind = (typeof SERVER_KINDS)[number];
export type ClusterName = 'east' | 'west';
/** A server's source key and scope: `<kind>-<cluster>`. */
export type ServerSource = `${ServerKind}-${ClusterName}`;

export interface ClusterServers {
  redis: RedisState;
  mariadb: MariadbState;
  nats: NatsState;
  rabbitmq: RabbitmqState;
}

/** The endpoint a server's source names (a reserved name: nothing is ever collected from it). */
export const ENDPOINTS: Record<ServerKind, (scope: string) => string> = {
  redis: (scope) => `redis://${scope}.demo.invalid:6379`,
  mariadb: (scope) => `mariadb://${scope}.demo.invalid:3306`,
  nats: (scope) => `http://${scope}.demo.invalid:8222`,
  rabbitmq: (scope) => `http://${scope}.demo.invalid:15672`,
};

/** The servers of a cluster, started some weeks before the demo's week, on its nodes 04 to 07. */
export function initialServers(cluster: DemoCluster, weekStart: Date): ClusterServers {
  const name = cluster.plan.name as ClusterName;
  const host = (n: number): ServerHost => {
    const node = `${name}-node-${String(n).padStart(2, '0')}`;
    return { node, address: cluster.nodeAddress(node) };
  };
  const started = (days: number) => new Date(weekStart.getTime() - days * 86_400_000);
  const databases = cluster.plan.teams.map((team) => team.namespace).filter((team) => team !== 'monitoring');
  return {
    redis: initialRedis(`redis-${name}`, host(4), host(5), started(23)),
    mariadb: initialMariadb(`mariadb-${name}`, host(5), host(6), started(41), databases),
    nats: initialNats(`nats-${name}`, host(6), started(12)),
    rabbitmq: initialRabbitmq(`rabbitmq-${name}`, [host(5), host(6), host(7)], started(30)),
  };
}

/** What a collection of one server reports at `now`, through its collector type's own mapping. */
export function serverRecords(servers: ClusterServers, kind: ServerKind, now: Date): Promise<UniversalRecord[]> {
  if (kind === 'redis') return redisRecords(servers.redis, now);
  if (kind === 'mariadb') return mariadbRecords(servers.mariadb, now);
  if (kind === 'nats') return Promise.resolve(natsRecords(servers.nats, now));
  return Promise.resolve(rabbitmqRecords(servers.rabbitmq, now));
}

export const serverSources = (): ServerSource[] =>
  (['east', 'west'] as const).flatMap((cluster) => SERVER_KINDS.map((kind): ServerSource => `${kind}-${cluster}`));

export function parseServerSource(source: ServerSource): { kind: ServerKind; cluster: ClusterName } {
  const at = source.lastIndexOf('-');
  return { kind: source.slice(0, at) as ServerKind, cluster: source.slice(at + 1) as ClusterName };
}
