import type { UniversalRecord } from '../../inventory/write-path/records.js';
import { consumerRecord, isDurable, streamRecord, type StreamDetail } from '../types/nats/jetstream.js';
import type { Target } from '../types/nats/monitor.js';
import { serverRecord } from '../types/nats/records.js';
import type { ServerHost } from './server-host.js';

/**
 * A cluster's NATS server with JetStream: its `/varz` and its `$G` account's page of `/jsz`
 * written out as nats-server 2.10 answers them, and read by the `nats` collector type's own
 * mapping, so the CIs are what a collection stores. One account only (no operator): the streams
 * belong to no account CI, as on such a server.
 */
export interface NatsState {
  name: string;
  host: ServerHost;
  startedAt: Date;
  streams: Map<string, { subjects: string[]; maxAgeDays: number; consumers: string[]; rate: number }>;
}

const NANOS_PER_DAY = 86_400 * 1e9;
const ACCOUNT = '$G';

export function initialNats(name: string, host: ServerHost, startedAt: Date): NatsState {
  return {
    name,
    host,
    startedAt,
    streams: new Map([
      ['ORDERS', { subjects: ['orders.>'], maxAgeDays: 7, consumers: ['fulfilment', 'billing'], rate: 40 }],
      ['EVENTS', { subjects: ['events.>'], maxAgeDays: 3, consumers: ['indexer', 'warehouse-loader'], rate: 300 }],
      ['NOTIFICATIONS', { subjects: ['notify.email', 'notify.sms'], maxAgeDays: 1, consumers: ['mailer'], rate: 12 }],
    ]),
  };
}

function varz(state: NatsState, now: Date): Record<string, unknown> {
  const uptime = Math.round((now.getTime() - state.startedAt.getTime()) / 1000);
  return {
    server_id: `NDEMO${state.name.toUpperCase().replace(/[^A-Z]/g, '')}`.padEnd(56, 'X'),
    server_name: state.host.node,
    version: '2.10.18',
    proto: 1,
    git_commit: '57d23ac',
    go: 'go1.22.5',
    host: '0.0.0.0',
    port: 4222,
    max_connections: 65536,
    max_subscriptions: 0,
    ping_interval: 120_000_000_000,
    ping_max: 2,
    http_host: '0.0.0.0',
    http_port: 8222,
    auth_required: true,
    auth_timeout: 2,
    tls_required: false,
    max_control_line: 4096,
    max_payload: 1_048_576,
    max_pending: 67_108_864,
    write_deadline: 10_000_000_000,
    system_account: '$SYS',
    connect_urls: [`${state.host.address}:4222`],
    jetstream: {
      config: {
        max_memory: 2 * 2 ** 30,
        max_storage: 200 * 2 ** 30,
        store_dir: '/data/jetstream',
        sync_interval: 120e9,
      },
      stats: { memory: 0, storage: 3 * 2 ** 30 + (uptime % 86_400) * 2048 },
    },
    start: state.startedAt.toISOString(),
    now: now.toISOString(),
    connections: 60 + (Math.floor(uptime / 3600) % 30),
    total_connections: 900 + Math.floor(uptime / 600),
    subscriptions: 410,
    slow_consumers: 0,
    in_msgs: uptime * 380,
    out_msgs: uptime * 760,
    in_bytes: uptime * 380 * 512,
    out_bytes: uptime * 760 * 512,
    mem: 96 * 2 ** 20,
    cpu: 3.5,
    routes: 0,
    leafnodes: 0,
  };
}

/** The account's page of `/jsz?acc=$G&streams=true&consumers=true&config=true`: each stream with its consumers. */
function streamDetails(state: NatsState, now: Date): StreamDetail[] {
  const seconds = Math.round((now.getTime() - state.startedAt.getTime()) / 1000);
  return [...state.streams].map(([name, stream]) => {
    const last = seconds * stream.rate;
    return {
      name,
      created: state.startedAt.toISOString(),
      config: {
        name,
        subjects: stream.subjects,
        retention: 'limits',
        max_consumers: -1,
        max_msgs: -1,
        max_bytes: -1,
        max_age: stream.maxAgeDays * NANOS_PER_DAY,
        max_msgs_per_subject: -1,
        max_msg_size: -1,
        discard: 'old',
        storage: 'file',
        num_replicas: 1,
        duplicate_window: 120e9,
        sealed: false,
        deny_delete: false,
        deny_purge: false,
        allow_rollup_hdrs: false,
      },
      state: {
        messages: Math.min(last, stream.maxAgeDays * 86_400 * stream.rate),
        bytes: Math.min(last, stream.maxAgeDays * 86_400 * stream.rate) * 512,
        first_seq: Math.max(1, last - stream.maxAgeDays * 86_400 * stream.rate),
        last_seq: last,
        consumer_count: stream.consumers.length,
        num_subjects: stream.subjects.length,
      },
      consumer_detail: stream.consumers.map((consumer) => ({
        stream_name: name,
        name: consumer,
        created: state.startedAt.toISOString(),
        config: {
          durable_name: consumer,
          deliver_policy: 'all',
          ack_policy: 'explicit',
          ack_wait: 30e9,
          max_deliver: 5,
          replay_policy: 'instant',
          max_waiting: 512,
          max_ack_pending: 1000,
        },
        delivered: { consumer_seq: last - 3, stream_seq: last - 3 },
        ack_floor: { consumer_seq: last - 5, stream_seq: last - 5 },
        num_ack_pending: 2,
        num_redelivered: 0,
        num_waiting: 1,
        num_pending: 3,
      })),
    };
  });
}

/** Everything a collection reports now: the server, then each stream followed by its durable consumers. */
export function natsRecords(state: NatsState, now: Date): UniversalRecord[] {
  const target: Target = {
    base: `http://${state.name}.demo.invalid:8222/`,
    address: `${state.name}.demo.invalid:8222`,
    serverName: state.name,
  };
  const records = [serverRecord(varz(state, now), target)];
  for (const stream of streamDetails(state, now)) {
    records.push(streamRecord(ACCOUNT, stream, false));
    for (const consumer of stream.consumer_detail ?? [])
      if (isDurable(consumer)) records.push(consumerRecord(ACCOUNT, stream.name, consumer));
  }
  return records;
}
