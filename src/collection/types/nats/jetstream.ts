import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import { scrubbed } from './records.js';

/**
 * JetStream streams and their consumers, from one account's page of
 * `/jsz?acc=<account>&streams=true&consumers=true&config=true`. Configuration (with the creation
 * time) goes into `raw_data`; the stream's state, the consumers' progress and the current leader
 * of a replicated asset move on their own and go under `type_data.metrics`.
 */

type Json = Record<string, unknown>;

export interface StreamDetail {
  name: string;
  created?: string;
  cluster?: { name?: string; leader?: string };
  config?: Json;
  state?: Json;
  consumer_detail?: ConsumerDetail[];
}

interface ConsumerDetail {
  stream_name?: string;
  name: string;
  created?: string;
  config?: Json;
  cluster?: { leader?: string };
  delivered?: { consumer_seq?: number; stream_seq?: number };
  ack_floor?: { consumer_seq?: number; stream_seq?: number };
  num_ack_pending?: number;
  num_redelivered?: number;
  num_waiting?: number;
  num_pending?: number;
}

const num = (value: unknown): number | null => (typeof value === 'number' ? value : null);
const text = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);
/** Durations come in nanoseconds; seconds read better, and 0 means none. */
const seconds = (value: unknown): number | null => (typeof value === 'number' && value > 0 ? value / 1e9 : null);
/** -1 is how a stream or consumer says "no limit". */
const bound = (value: unknown): number | null => (typeof value === 'number' && value >= 0 ? value : null);

export const streamId = (account: string, stream: string) => `stream/${account}/${stream}`;

/** The streams a stream copies from: its mirror and its sources, in the same account unless they name another domain. */
function upstreams(config: Json): string[] {
  const named = [config.mirror, ...(Array.isArray(config.sources) ? config.sources : [])]
    .filter((s): s is Json => typeof s === 'object' && s !== null)
    .filter((s) => s.external === undefined || s.external === null)
    .map((s) => text(s.name))
    .filter((n): n is string => n !== null);
  return [...new Set(named)].sort();
}

export function streamRecord(account: string, detail: StreamDetail, inAccount: boolean): UniversalRecord {
  const config = detail.config ?? {};
  const state = detail.state ?? {};
  const mirror =
    typeof config.mirror === 'object' && config.mirror !== null ? text((config.mirror as Json).name) : null;
  return {
    external_id: streamId(account, detail.name),
    ci_type: 'nats.stream',
    name: detail.name,
    namespace: account,
    raw_data: scrubbed({ config, created: detail.created ?? null, cluster: text(detail.cluster?.name) }) as Json,
    type_data: {
      account,
      subjects: Array.isArray(config.subjects) ? config.subjects : [],
      retention: text(config.retention),
      storage: text(config.storage),
      replicas: num(config.num_replicas),
      discard: text(config.discard),
      max_msgs: bound(config.max_msgs),
      max_bytes: bound(config.max_bytes),
      max_age_seconds: seconds(config.max_age),
      max_msgs_per_subject: bound(config.max_msgs_per_subject),
      max_msg_size: bound(config.max_msg_size),
      max_consumers: bound(config.max_consumers),
      duplicate_window_seconds: seconds(config.duplicate_window),
      sealed: config.sealed === true,
      mirror,
      sources: upstreams(config).filter((name) => name !== mirror),
      created: detail.created ?? null,
      metrics: {
        messages: num(state.messages),
        bytes: num(state.bytes),
        consumer_count: num(state.consumer_count),
        first_seq: num(state.first_seq),
        last_seq: num(state.last_seq),
        num_subjects: num(state.num_subjects) ?? 0,
        num_deleted: num(state.num_deleted) ?? 0,
        leader: text(detail.cluster?.leader),
      },
    },
    relationships: [
      { type: 'hosted_on', target_external_id: 'server' },
      ...(inAccount ? [{ type: 'belongs_to', target_external_id: `account/${account}` }] : []),
      ...upstreams(config).map((name) => ({ type: 'replicates_from', target_external_id: streamId(account, name) })),
    ],
  };
}

/** A consumer without a durable name is ephemeral: it goes when its client does. */
export const isDurable = (consumer: ConsumerDetail) => text(consumer.config?.durable_name) !== null;

export function consumerRecord(account: string, stream: string, consumer: ConsumerDetail): UniversalRecord {
  const config = consumer.config ?? {};
  const filters = [
    ...(text(config.filter_subject) ? [config.filter_subject as string] : []),
    ...(Array.isArray(config.filter_subjects) ? (config.filter_subjects as string[]) : []),
  ];
  return {
    external_id: `consumer/${account}/${stream}/${consumer.name}`,
    ci_type: 'nats.consumer',
    name: consumer.name,
    namespace: `${account}/${stream}`,
    // no creation time: nats-server 2.9 restores a consumer with a new one after a restart
    raw_data: scrubbed({ config }) as Json,
    type_data: {
      account,
      stream,
      durable_name: text(config.durable_name),
      ack_policy: text(config.ack_policy),
      deliver_policy: text(config.deliver_policy),
      replay_policy: text(config.replay_policy),
      filter_subjects: [...new Set(filters)].sort(),
      max_deliver: bound(config.max_deliver),
      max_ack_pending: bound(config.max_ack_pending),
      ack_wait_seconds: seconds(config.ack_wait),
      deliver_subject: text(config.deliver_subject),
      deliver_group: text(config.deliver_group),
      metrics: {
        num_pending: num(consumer.num_pending),
        num_ack_pending: num(consumer.num_ack_pending),
        num_redelivered: num(consumer.num_redelivered),
        num_waiting: num(consumer.num_waiting),
        delivered_consumer_seq: num(consumer.delivered?.consumer_seq),
        delivered_stream_seq: num(consumer.delivered?.stream_seq),
        ack_floor_stream_seq: num(consumer.ack_floor?.stream_seq),
        leader: text(consumer.cluster?.leader),
      },
    },
    relationships: [{ type: 'consumes', target_external_id: streamId(account, stream) }],
  };
}
