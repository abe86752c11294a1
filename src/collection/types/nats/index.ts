import { Type } from '@sinclair/typebox';
import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import type { CollectContext, CollectedBatch, CollectorType } from '../plugin.js';
import { HOST_TYPE_DATA_KEYS } from '../shared/host.js';
import { isEnabled, loadPart } from '../shared/parts.js';
import { consumerRecord, isDurable, streamRecord, type StreamDetail } from './jetstream.js';
import { MonitorApi, targetOf, Unreachable, type Target } from './monitor.js';
import { accountRecord, serverRecord, type JetStreamAccount } from './records.js';

/**
 * The `nats` collector type: a NATS server, its accounts and its JetStream streams and consumers,
 * read from the server's HTTP monitoring endpoint (`/varz`, `/accountz`, `/jsz`). It never
 * connects as a NATS client and never reads messages.
 *
 * External ids inside the source: `server`, `account/<name>`, `stream/<account>/<stream>`,
 * `consumer/<account>/<stream>/<consumer>`; the scope is the server (`config.server_name`,
 * default `host:port` of the endpoint).
 */

const KINDS = ['server', 'accounts', 'streams', 'consumers'] as const;

const ConfigSchema = Type.Object({
  server_name: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'The instance name CIs are scoped by (default `host:port` of the endpoint).',
    }),
  ),
  include_ephemeral_consumers: Type.Optional(
    Type.Boolean({
      description:
        'Also record consumers without a durable name (default false: they come and go with their clients, each one a new CI).',
    }),
  ),
});

const RECORDS_PER_BATCH = 1000;
/** Account details asked for at once: enough to hide the round trips, few enough to spare the server. */
const ACCOUNT_REQUESTS = 8;

type Json = Record<string, unknown>;
interface Jsz {
  account_details?: (JetStreamAccount & { stream_detail?: (StreamDetail | undefined)[] })[];
}

/** /varz, which tells whether a NATS monitoring endpoint answers at all: if not, the run fails. */
async function probe(api: MonitorApi, target: Target, context: CollectContext): Promise<Json> {
  let varz: Json;
  try {
    varz = await api.get<Json>('varz');
  } catch (error) {
    if (error instanceof Unreachable || context.signal.aborted || !(error instanceof Error)) throw error;
    throw new Error(
      `the endpoint at ${target.address} does not answer as a NATS monitoring endpoint (${error.message})`,
      { cause: error },
    );
  }
  if (typeof varz.server_id !== 'string' || typeof varz.version !== 'string')
    throw new Error(`the endpoint at ${target.address} does not answer as a NATS monitoring endpoint (/varz)`);
  return varz;
}

/** Collects records and hands them out in batches of at most RECORDS_PER_BATCH. */
class Batches {
  private records: UniversalRecord[] = [];
  constructor(private readonly scopeId: string) {}
  /** Adds one; returns a full batch when there is one to yield. */
  add(record: UniversalRecord): CollectedBatch | undefined {
    this.records.push(record);
    return this.records.length >= RECORDS_PER_BATCH ? this.take() : undefined;
  }
  take(): CollectedBatch | undefined {
    if (this.records.length === 0) return undefined;
    const batch = { scopeId: this.scopeId, records: this.records };
    this.records = [];
    return batch;
  }
}

/**
 * The accounts, when the server has more than its global and system ones: names from /accountz,
 * each one's detail from /accountz?acc=, a few at a time, yielded a thousand at a time.
 */
async function* accountBatches(
  context: CollectContext,
  api: MonitorApi,
  scopeId: string,
  names: string[],
  systemAccount: string | null,
  jetstream: Map<string, JetStreamAccount>,
): AsyncGenerator<CollectedBatch> {
  for (let start = 0; start < names.length; start += RECORDS_PER_BATCH) {
    const chunk = names.slice(start, start + RECORDS_PER_BATCH);
    const records = await loadPart(context, 'accounts', async () => {
      const out: UniversalRecord[] = [];
      for (let i = 0; i < chunk.length; i += ACCOUNT_REQUESTS) {
        context.signal.throwIfAborted();
        const details = await Promise.all(
          chunk
            .slice(i, i + ACCOUNT_REQUESTS)
            .map((name) => api.get<{ account_detail?: Json }>('accountz', { acc: name })),
        );
        details.forEach((d, j) => {
          const name = chunk[i + j]!;
          out.push(accountRecord(name, d.account_detail ?? {}, systemAccount, jetstream.get(name)));
        });
      }
      return out;
    });
    if (!records) return;
    yield { scopeId, records };
  }
  context.component('accounts');
}

/**
 * Streams and consumers, one account's /jsz page at a time (nats-server pages /jsz by account; an
 * account's streams come in one answer). Each stream is let go once turned into records, so that
 * the page and its records are not both held whole. A page that fails is that account's
 * component (`streams:<account>`); the other accounts are still read.
 */
async function* jetstreamBatches(
  context: CollectContext,
  api: MonitorApi,
  scopeId: string,
  accounts: JetStreamAccount[],
  withAccounts: boolean,
): AsyncGenerator<CollectedBatch> {
  const streams = isEnabled(context, 'streams');
  const consumers = isEnabled(context, 'consumers');
  const ephemeral = context.source.config.include_ephemeral_consumers === true;
  const batches = new Batches(scopeId);
  for (const { name: account } of accounts) {
    context.signal.throwIfAborted();
    const query = { acc: account, streams: 'true', consumers: String(consumers), config: 'true' };
    const page = await loadPart(context, `streams:${account}`, () => api.get<Jsz>('jsz', query));
    const details = page?.account_details?.find((a) => a.name === account)?.stream_detail ?? [];
    for (let i = 0; i < details.length; i++) {
      const stream = details[i]!;
      details[i] = undefined;
      const full = streams ? batches.add(streamRecord(account, stream, withAccounts)) : undefined;
      if (full) yield full;
      for (const consumer of consumers ? (stream.consumer_detail ?? []) : []) {
        if (!ephemeral && !isDurable(consumer)) continue;
        const next = batches.add(consumerRecord(account, stream.name, consumer));
        if (next) yield next;
      }
    }
  }
  const rest = batches.take();
  if (rest) yield rest;
  if (streams) context.component('streams');
  if (consumers) context.component('consumers');
}

/** More than the global account and the system one: an operator has set accounts up. */
const several = (names: string[], systemAccount: string | null) =>
  names.some((name) => name !== '$G' && name !== systemAccount);

async function* collectNats(context: CollectContext): AsyncGenerator<CollectedBatch> {
  const target = targetOf(context);
  const api = new MonitorApi(target, context);
  const scopeId = target.serverName;
  const varz = await probe(api, target, context);
  if (isEnabled(context, 'server')) {
    yield { scopeId, records: [serverRecord(varz, target)] };
    context.component('server');
  }
  const systemAccount = typeof varz.system_account === 'string' ? varz.system_account : null;
  const jetstreamOn = typeof (varz.jetstream as Json | undefined)?.config === 'object';
  const wanted = (kind: (typeof KINDS)[number]) => isEnabled(context, kind);
  const jetstream =
    jetstreamOn && (wanted('accounts') || wanted('streams') || wanted('consumers'))
      ? await loadPart(
          context,
          'jetstream',
          async () => (await api.get<Jsz>('jsz', { accounts: 'true' })).account_details ?? [],
        )
      : [];
  const byName = new Map((jetstream ?? []).map((a) => [a.name, a]));
  let withAccounts = false;
  if (wanted('accounts')) {
    const list = await loadPart(context, 'accounts', () => api.get<{ accounts?: string[] }>('accountz'));
    const names = [...(list?.accounts ?? [])].sort();
    withAccounts = several(names, systemAccount);
    if (withAccounts) yield* accountBatches(context, api, scopeId, names, systemAccount, byName);
    else if (list) context.component('accounts');
  }
  if (!jetstream || !(wanted('streams') || wanted('consumers'))) return;
  const accounts = [...jetstream].sort((a, b) => a.name.localeCompare(b.name));
  yield* jetstreamBatches(context, api, scopeId, accounts, withAccounts);
}

export const natsType: CollectorType = {
  type: 'nats',
  description:
    'Discovers a NATS server from its HTTP monitoring endpoint (never as a client; never messages): `nats.server`, ' +
    '`nats.account` (when accounts are configured), JetStream `nats.stream` and `nats.consumer`, with `hosted_on`, ' +
    '`belongs_to`, `consumes` and `replicates_from` relationships. Endpoint `http(s)://host:8222`; credentials none, ' +
    'or `basic` or `token` for a proxy in front of the monitoring port.',
  configSchema: ConfigSchema,
  capabilities: {
    supports_universal_format: false,
    supports_multi_source: true,
    supports_watch: false,
    collects: true,
  },
  collectables: KINDS,
  ciTypes: {
    'nats.server': [
      'version',
      'server_name',
      'cluster_name',
      'jetstream_enabled',
      'jetstream_max_memory',
      'jetstream_max_storage',
      'jetstream_domain',
      'max_payload',
      'max_connections',
      'auth_required',
      'tls_required',
      ...HOST_TYPE_DATA_KEYS,
      'metrics.server_id',
      'metrics.started_at',
      'metrics.uptime_seconds',
      'metrics.connections',
      'metrics.total_connections',
      'metrics.subscriptions',
      'metrics.slow_consumers',
      'metrics.in_msgs',
      'metrics.out_msgs',
      'metrics.in_bytes',
      'metrics.out_bytes',
      'metrics.mem_bytes',
      'metrics.cpu_percent',
      'metrics.routes',
      'metrics.leafnodes',
      'metrics.jetstream_memory_bytes',
      'metrics.jetstream_storage_bytes',
    ],
    'nats.account': [
      'jetstream_enabled',
      'system_account',
      'jetstream_max_memory',
      'jetstream_max_storage',
      'imports',
      'exports',
      'metrics.client_connections',
      'metrics.leafnode_connections',
      'metrics.subscriptions',
      'metrics.jetstream_memory_bytes',
      'metrics.jetstream_storage_bytes',
    ],
    'nats.stream': [
      'account',
      'subjects',
      'retention',
      'storage',
      'replicas',
      'discard',
      'max_msgs',
      'max_bytes',
      'max_age_seconds',
      'max_msgs_per_subject',
      'max_msg_size',
      'max_consumers',
      'duplicate_window_seconds',
      'sealed',
      'mirror',
      'sources',
      'created',
      'metrics.messages',
      'metrics.bytes',
      'metrics.consumer_count',
      'metrics.first_seq',
      'metrics.last_seq',
      'metrics.num_subjects',
      'metrics.num_deleted',
      'metrics.leader',
    ],
    'nats.consumer': [
      'account',
      'stream',
      'durable_name',
      'ack_policy',
      'deliver_policy',
      'replay_policy',
      'filter_subjects',
      'max_deliver',
      'max_ack_pending',
      'ack_wait_seconds',
      'deliver_subject',
      'deliver_group',
      'metrics.num_pending',
      'metrics.num_ack_pending',
      'metrics.num_redelivered',
      'metrics.num_waiting',
      'metrics.delivered_consumer_seq',
      'metrics.delivered_stream_seq',
      'metrics.ack_floor_stream_seq',
      'metrics.leader',
    ],
  },
  endpointSchemes: ['http', 'https'],
  collect: collectNats,
};
