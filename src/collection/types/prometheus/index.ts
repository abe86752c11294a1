import { Type } from '@sinclair/typebox';
import type { CollectContext, CollectedBatch, CollectorType } from '../plugin.js';
import { HOST_TYPE_DATA_KEYS, isLoopback } from '../shared/host.js';
import { isEnabled, loadPart } from '../shared/parts.js';
import { PrometheusApi, type ActiveTarget } from './api.js';
import { hostRecords, serverRecord, targetRecord } from './records.js';

/**
 * The `prometheus` collector type: a Prometheus server, its scrape targets and the Linux hosts its
 * node_exporters describe, from the server's HTTP API (`/api/v1/status/*`, `/api/v1/targets`,
 * `/api/v1/query`).
 *
 * External ids inside the source: `server`, `target/<scrape pool>/<scrape URL>`,
 * `host/<instance>`; the scope is the server (`config.server_name`, default `host:port`). What
 * moves on every scrape (last scrape time and duration, usage) is under `type_data.metrics`, so a
 * quiet re-collection writes no change record.
 */

const KINDS = ['server', 'targets', 'hosts'] as const;

const ConfigSchema = Type.Object({
  server_name: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'The instance name CIs are scoped by (default `host:port` of the endpoint).',
    }),
  ),
});

/** One list of the server: the server itself, the hosts, then the targets (which name the hosts they describe). */
async function* collectPrometheus(context: CollectContext): AsyncGenerator<CollectedBatch> {
  const endpoint = context.source.endpoint;
  if (!endpoint) throw new Error('the source has no endpoint (http(s)://host:9090)');
  const url = new URL(endpoint);
  const scopeId = typeof context.source.config.server_name === 'string' ? context.source.config.server_name : url.host;
  const api = new PrometheusApi(endpoint.endsWith('/') ? endpoint : `${endpoint}/`, context);
  // the targets tell whether the server can be reached at all: if not, the run fails
  const targets = (await api.get<{ activeTargets: ActiveTarget[] }>('/api/v1/targets', { state: 'active' }))
    .activeTargets;
  const part = <T>(name: string, load: () => Promise<T>) => loadPart(context, name, load);
  if (isEnabled(context, 'server')) {
    const server = await part('server', () => serverRecord(api, scopeId));
    if (server) {
      yield { scopeId, records: [server] };
      context.component('server');
    }
  }
  const local = isLoopback(url.hostname);
  const hosts = isEnabled(context, 'hosts') ? await part('hosts', () => hostRecords(api, local)) : undefined;
  if (hosts) {
    yield { scopeId, records: hosts };
    context.component('hosts');
  }
  if (isEnabled(context, 'targets')) {
    const described = new Set((hosts ?? []).map((h) => h.external_id.slice('host/'.length)));
    for (let i = 0; i < targets.length; i += 1000)
      yield { scopeId, records: targets.slice(i, i + 1000).map((t) => targetRecord(t, described)) };
    context.component('targets');
  }
}

export const prometheusType: CollectorType = {
  type: 'prometheus',
  description:
    'Discovers a Prometheus server, its scrape targets and the Linux hosts its node_exporters describe, from its HTTP API: ' +
    '`prometheus.server`, `prometheus.target` and `host.linux`, with `scraped_by` and `describes` relationships. ' +
    'Endpoint `http(s)://host:9090`; credentials none, `basic` or `token`.',
  configSchema: ConfigSchema,
  capabilities: {
    supports_universal_format: false,
    supports_multi_source: true,
    supports_watch: false,
    collects: true,
  },
  collectables: KINDS,
  ciTypes: {
    'prometheus.server': [
      'version',
      'revision',
      'go_version',
      'storage_retention',
      'config_reloaded_at',
      'config_reload_ok',
      'started_at',
      'metrics.goroutines',
      'metrics.time_series',
      'metrics.corrupted_chunks',
    ],
    'prometheus.target': [
      'job',
      'instance',
      'labels',
      'health',
      'last_error',
      'metrics.last_scrape',
      'metrics.last_scrape_duration_seconds',
    ],
    'host.linux': [
      'hostname',
      'os_name',
      'os_version',
      'kernel',
      'architecture',
      'cpu_count',
      'memory_bytes',
      'instance',
      'filesystems',
      'network_interfaces',
      ...HOST_TYPE_DATA_KEYS,
      'metrics.memory_available_bytes',
      'metrics.load1',
    ],
  },
  endpointSchemes: ['http', 'https'],
  collect: collectPrometheus,
};
