import { Type } from '@sinclair/typebox';
import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import type { CollectContext, CollectedBatch, CollectorType } from '../plugin.js';
import { HOST_TYPE_DATA_KEYS } from '../shared/host.js';
import { isEnabled, loadPart } from '../shared/parts.js';
import {
  policyRecord,
  userRecords,
  type Permission,
  type PolicyInfo,
  type TopicPermission,
  type UserInfo,
} from './access.js';
import { RabbitApi, targetOf } from './api.js';
import {
  bindingsBySource,
  EXCHANGE_COLUMNS,
  exchangeRecord,
  QUEUE_COLUMNS,
  queueRecord,
  type Binding,
  type ExchangeInfo,
  type QueueInfo,
} from './objects.js';
import {
  clusterRecord,
  ids,
  nodeRecord,
  vhostRecord,
  type NodeInfo,
  type Overview,
  type VhostInfo,
} from './records.js';

/**
 * The `rabbitmq` collector type: a RabbitMQ cluster through its management HTTP API (read only:
 * GETs), its nodes, virtual hosts, exchanges with their bindings, queues, users with their
 * permissions, and policies.
 *
 * External ids inside the source: `cluster`, `node/<name>`, `vhost/<name>`, and, with the
 * virtual host percent-encoded, `exchange/<vhost>/<name>`, `queue/<vhost>/<name>`,
 * `policy/<vhost>/<name>`, `operator-policy/<vhost>/<name>`; `user/<name>`. The scope is the
 * server (`config.server_name`, default `host:port`).
 */

const KINDS = ['cluster', 'nodes', 'vhosts', 'exchanges', 'queues', 'users', 'policies', 'operator_policies'] as const;

const ConfigSchema = Type.Object({
  server_name: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'The instance name CIs are scoped by (default `host:port` of the endpoint).',
    }),
  ),
  page_size: Type.Optional(
    Type.Integer({
      minimum: 10,
      maximum: 1000,
      description: 'Queues and exchanges asked of the management API per page (default 500); one page is one batch.',
    }),
  ),
});

/**
 * One list of the cluster. Each kind is a component: a part the user may not read (users need the
 * `administrator` tag) is reported and the others are still collected. Only a server that cannot
 * be reached, or refuses the credentials, fails the run: the overview is asked first, before
 * anything is yielded, so such a run writes (and archives) nothing.
 */
async function* collectRabbitmq(context: CollectContext): AsyncGenerator<CollectedBatch> {
  const target = targetOf(context);
  const scopeId = target.serverName;
  const api = new RabbitApi(target, context);
  const overview = await api.get<Overview>('/api/overview');
  const part = <T>(name: string, load: () => Promise<T>) => loadPart(context, name, load);
  const pageSize = typeof context.source.config.page_size === 'number' ? context.source.config.page_size : 500;

  /** A part read in pages, each yielded as it arrives; a failing page ends the part as failed. */
  async function* paged(name: string, pages: AsyncIterator<UniversalRecord[]>): AsyncGenerator<CollectedBatch> {
    for (;;) {
      const next = await part(name, () => pages.next());
      if (!next) return;
      if (next.done) break;
      yield { scopeId, records: next.value };
    }
    context.component(name);
  }
  async function* whole(name: string, load: () => Promise<UniversalRecord[]>): AsyncGenerator<CollectedBatch> {
    const records = await part(name, load);
    if (!records) return;
    for (let i = 0; i < records.length; i += 1000) yield { scopeId, records: records.slice(i, i + 1000) };
    context.component(name);
  }

  if (isEnabled(context, 'cluster')) {
    yield { scopeId, records: [clusterRecord(overview)] };
    context.component('cluster');
  }
  if (isEnabled(context, 'nodes'))
    yield* whole('nodes', async () =>
      (await api.get<NodeInfo[]>('/api/nodes')).map((n) => nodeRecord(n, overview, target)),
    );
  if (isEnabled(context, 'vhosts'))
    yield* whole('vhosts', async () => (await api.get<VhostInfo[]>('/api/vhosts')).map(vhostRecord));
  if (isEnabled(context, 'exchanges')) {
    const routes = await part('exchanges', async () => bindingsBySource(await api.get<Binding[]>('/api/bindings')));
    if (routes) yield* paged('exchanges', exchangePages(api, routes, pageSize));
  }
  if (isEnabled(context, 'queues')) yield* paged('queues', queuePages(api, pageSize));
  if (isEnabled(context, 'users'))
    yield* whole('users', async () => {
      const users = await api.get<UserInfo[]>('/api/users');
      const permissions = await api.get<Permission[]>('/api/permissions');
      const topics = await api.get<TopicPermission[]>('/api/topic-permissions');
      return userRecords(users, permissions, topics);
    });
  if (isEnabled(context, 'policies'))
    yield* whole('policies', async () =>
      (await api.get<PolicyInfo[]>('/api/policies')).map((p) => policyRecord(p, false)),
    );
  if (isEnabled(context, 'operator_policies'))
    yield* whole('operator_policies', async () =>
      (await api.get<PolicyInfo[]>('/api/operator-policies')).map((p) => policyRecord(p, true)),
    );
}

/** The exchanges page by page with their bindings; the default exchange (no name) is the broker's, not configured. */
async function* exchangePages(
  api: RabbitApi,
  routes: ReturnType<typeof bindingsBySource>,
  pageSize: number,
): AsyncGenerator<UniversalRecord[]> {
  for await (const page of api.pages<ExchangeInfo>(`/api/exchanges?columns=${EXCHANGE_COLUMNS}`, pageSize)) {
    yield page
      .filter((e) => e.name !== '')
      .map((e) => {
        const record = exchangeRecord(e, routes.get(ids.inVhost('exchange', e.vhost, e.name)) ?? []);
        routes.delete(record.external_id);
        return record;
      });
  }
}

async function* queuePages(api: RabbitApi, pageSize: number): AsyncGenerator<UniversalRecord[]> {
  for await (const page of api.pages<QueueInfo>(`/api/queues?columns=${QUEUE_COLUMNS}`, pageSize))
    // a queue declared moments ago may not be in the statistics yet (no node, no counts): the next run reads it whole
    yield page.filter((q) => q.node !== undefined || q.messages !== undefined).map(queueRecord);
}

export const rabbitmqType: CollectorType = {
  type: 'rabbitmq',
  description:
    'Discovers a RabbitMQ cluster through its management HTTP API (read only): `rabbitmq.cluster`, `rabbitmq.node`, ' +
    '`rabbitmq.vhost`, `rabbitmq.exchange`, `rabbitmq.queue`, `rabbitmq.user` and `rabbitmq.policy`, with `member_of`, ' +
    '`hosted_on`, `in_vhost`, `routes_to` (bindings, their routing keys in the exchange’s `bindings`), `can_access` and ' +
    '`applies_in` relationships. Endpoint `http(s)://host:15672`; credentials `basic` (a user tagged `monitoring` ' +
    'with a permission entry in each virtual host; users need `administrator`).',
  configSchema: ConfigSchema,
  capabilities: {
    supports_universal_format: false,
    supports_multi_source: true,
    supports_watch: false,
    collects: true,
  },
  collectables: KINDS,
  ciTypes: {
    'rabbitmq.cluster': [
      'cluster_name',
      'version',
      'erlang_version',
      'management_version',
      'listeners',
      'metrics.connections',
      'metrics.channels',
      'metrics.queues',
      'metrics.consumers',
      'metrics.messages',
      'metrics.publish_rate',
      'metrics.deliver_rate',
    ],
    'rabbitmq.node': [
      'type',
      'running',
      'enabled_plugins',
      'fd_total',
      'sockets_total',
      'mem_limit',
      'disk_free_limit',
      'proc_total',
      'processors',
      'net_ticktime',
      ...HOST_TYPE_DATA_KEYS,
      'metrics.mem_used',
      'metrics.fd_used',
      'metrics.sockets_used',
      'metrics.proc_used',
      'metrics.disk_free',
      'metrics.uptime_seconds',
    ],
    'rabbitmq.vhost': [
      'description',
      'tags',
      'default_queue_type',
      'tracing',
      'metrics.messages',
      'metrics.messages_ready',
      'metrics.messages_unacknowledged',
    ],
    'rabbitmq.exchange': [
      'type',
      'durable',
      'auto_delete',
      'internal',
      'arguments',
      'policy',
      'vhost',
      'bindings',
      'metrics.publish_in_rate',
      'metrics.publish_out_rate',
    ],
    'rabbitmq.queue': [
      'type',
      'durable',
      'auto_delete',
      'exclusive',
      'arguments',
      'node',
      'policy',
      'operator_policy',
      'vhost',
      'metrics.messages',
      'metrics.messages_ready',
      'metrics.messages_unacknowledged',
      'metrics.consumers',
      'metrics.publish_rate',
      'metrics.deliver_rate',
      'metrics.ack_rate',
    ],
    'rabbitmq.user': ['tags', 'limits', 'vhosts'],
    'rabbitmq.policy': ['pattern', 'apply_to', 'definition', 'priority', 'operator', 'vhost'],
  },
  endpointSchemes: ['http', 'https'],
  collect: collectRabbitmq,
};
