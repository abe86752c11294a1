import { Type } from '@sinclair/typebox';
import type { UniversalRecord } from '../inventory/records.js';
import { guardedGet } from './http.js';
import { isEnabled, loadPart } from './parts.js';
import type { CollectContext, CollectedBatch, CollectorType } from './types.js';

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
  server_name: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'The instance name CIs are scoped by (default `host:port` of the endpoint).' })),
});

/** Filesystems that are memory or kernel views, not storage (a PromQL raw string: no escapes). */
const VIRTUAL_FILESYSTEMS = 'tmpfs|devtmpfs|overlay|squashfs|proc|sysfs|cgroup2?|nsfs|autofs|fuse\\..*|ramfs|rootfs';

interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

interface ActiveTarget {
  scrapePool: string;
  scrapeUrl: string;
  globalUrl?: string;
  labels: Record<string, string>;
  health: string;
  lastError: string;
  lastScrape: string;
  lastScrapeDuration: number;
  scrapeInterval?: string;
  scrapeTimeout?: string;
}

class PrometheusApi {
  private readonly headers: Record<string, string> = { accept: 'application/json' };

  constructor(
    private readonly base: string,
    private readonly context: CollectContext,
  ) {
    const credentials = context.credentials;
    if (credentials?.type === 'token') this.headers.authorization = `Bearer ${credentials.token}`;
    else if (credentials?.type === 'basic') this.headers.authorization = `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
    else if (credentials?.type === 'tls') throw new Error('prometheus sources take basic or token credentials, or none');
  }

  async get<T>(path: string, query: Record<string, string> = {}): Promise<T> {
    const url = new URL(path.replace(/^\//, ''), this.base);
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    const reply = await guardedGet(url.href, {
      allowedHosts: this.context.allowedHosts,
      signal: this.context.signal,
      headers: this.headers,
      verifyTls: this.context.source.config.verify_ssl !== false,
      maxBytes: 256 * 1024 * 1024,
    });
    if (reply.status !== 200) throw new Error(`${url.pathname} answered HTTP ${reply.status}`);
    const body = JSON.parse(reply.body.toString('utf8')) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`${url.pathname}: ${body.error ?? 'the API answered an error'}`);
    return body.data;
  }

  async query(expression: string): Promise<Sample[]> {
    const data = await this.get<{ resultType: string; result: Sample[] }>('/api/v1/query', { query: expression });
    return data.resultType === 'vector' ? data.result : [];
  }
}

async function serverRecord(api: PrometheusApi, name: string): Promise<UniversalRecord> {
  const build = await api.get<Record<string, string>>('/api/v1/status/buildinfo');
  const runtime = await api.get<Record<string, unknown>>('/api/v1/status/runtimeinfo');
  return {
    external_id: 'server',
    ci_type: 'prometheus.server',
    name,
    raw_data: {
      build,
      runtime: { storageRetention: runtime.storageRetention, lastConfigTime: runtime.lastConfigTime, reloadConfigSuccess: runtime.reloadConfigSuccess, startTime: runtime.startTime },
    },
    type_data: {
      version: build.version,
      revision: build.revision,
      go_version: build.goVersion,
      storage_retention: runtime.storageRetention ?? null,
      config_reloaded_at: runtime.lastConfigTime ?? null,
      config_reload_ok: runtime.reloadConfigSuccess ?? null,
      started_at: runtime.startTime ?? null,
      metrics: { goroutines: runtime.goroutineCount ?? null, time_series: runtime.timeSeriesCount ?? null, corrupted_chunks: runtime.corruptionCount ?? null },
    },
  };
}

const targetId = (target: ActiveTarget) => `target/${target.scrapePool}/${target.scrapeUrl}`;

function targetRecord(target: ActiveTarget, hosts: Set<string>): UniversalRecord {
  const instance = target.labels.instance ?? target.scrapeUrl;
  const relationships = [{ type: 'scraped_by', target_external_id: 'server' }];
  if (hosts.has(instance)) relationships.push({ type: 'describes', target_external_id: `host/${instance}` });
  return {
    external_id: targetId(target),
    ci_type: 'prometheus.target',
    name: instance,
    namespace: target.labels.job ?? target.scrapePool,
    raw_data: {
      scrapePool: target.scrapePool,
      scrapeUrl: target.scrapeUrl,
      labels: target.labels,
      health: target.health,
      lastError: target.lastError,
      scrapeInterval: target.scrapeInterval ?? null,
      scrapeTimeout: target.scrapeTimeout ?? null,
    },
    type_data: {
      job: target.labels.job ?? null,
      instance,
      labels: target.labels,
      health: target.health,
      last_error: target.lastError || null,
      metrics: { last_scrape: target.lastScrape, last_scrape_duration_seconds: target.lastScrapeDuration },
    },
    relationships,
  };
}

/** Samples grouped by their `instance` label. */
function byInstance(samples: Sample[]): Map<string, Sample[]> {
  const grouped = new Map<string, Sample[]>();
  for (const sample of samples) {
    const instance = sample.metric.instance;
    if (instance === undefined) continue;
    const list = grouped.get(instance) ?? [];
    list.push(sample);
    grouped.set(instance, list);
  }
  return grouped;
}

const valueOf = (samples: Sample[] | undefined) => (samples?.[0] ? Number(samples[0].value[1]) : null);
const strip = (labels: Record<string, string>, ...names: string[]) => Object.fromEntries(Object.entries(labels).filter(([k]) => !['__name__', 'instance', 'job', ...names].includes(k)));

/** The node_exporter hosts the server scrapes, one query per attribute set over all of them. */
async function hostRecords(api: PrometheusApi): Promise<UniversalRecord[]> {
  const [uname, os, cpus, memory, filesystems, interfaces, available, load] = await Promise.all([
    api.query('node_uname_info'),
    api.query('node_os_info'),
    api.query('count by (instance) (node_cpu_seconds_total{mode="idle"})'),
    api.query('node_memory_MemTotal_bytes'),
    api.query(`node_filesystem_size_bytes{fstype!~\`${VIRTUAL_FILESYSTEMS}\`}`),
    api.query('node_network_info'),
    api.query('node_memory_MemAvailable_bytes'),
    api.query('node_load1'),
  ]);
  const [osBy, cpuBy, memoryBy, fsBy, netBy, availableBy, loadBy] = [os, cpus, memory, filesystems, interfaces, available, load].map(byInstance);
  return uname.map(({ metric }) => {
    const instance = metric.instance!;
    const osInfo = osBy!.get(instance)?.[0]?.metric;
    const filesystemList = (fsBy!.get(instance) ?? [])
      .map((s) => ({ mountpoint: s.metric.mountpoint ?? '', device: s.metric.device ?? '', fstype: s.metric.fstype ?? '', size_bytes: Number(s.value[1]) }))
      .sort((a, b) => a.mountpoint.localeCompare(b.mountpoint));
    const interfaceList = (netBy!.get(instance) ?? [])
      .map((s) => strip(s.metric))
      .sort((a, b) => (a.device ?? '').localeCompare(b.device ?? ''));
    const attributes = {
      hostname: metric.nodename ?? instance,
      os_name: osInfo?.name ?? metric.sysname ?? null,
      os_version: osInfo?.version ?? osInfo?.version_id ?? null,
      kernel: metric.release ?? null,
      architecture: metric.machine ?? null,
      cpu_count: valueOf(cpuBy!.get(instance)),
      memory_bytes: valueOf(memoryBy!.get(instance)),
    };
    return {
      external_id: `host/${instance}`,
      ci_type: 'host.linux',
      name: attributes.hostname,
      raw_data: { uname: strip(metric), os: osInfo ? strip(osInfo) : null, ...attributes, filesystems: filesystemList, network_interfaces: interfaceList },
      type_data: {
        ...attributes,
        instance,
        filesystems: filesystemList,
        network_interfaces: interfaceList,
        metrics: { memory_available_bytes: valueOf(availableBy!.get(instance)), load1: valueOf(loadBy!.get(instance)) },
      },
    };
  });
}

async function* collectPrometheus(context: CollectContext): AsyncGenerator<CollectedBatch> {
  const endpoint = context.source.endpoint;
  if (!endpoint) throw new Error('the source has no endpoint (http(s)://host:9090)');
  const url = new URL(endpoint);
  const scopeId = typeof context.source.config.server_name === 'string' ? context.source.config.server_name : url.host;
  const api = new PrometheusApi(endpoint.endsWith('/') ? endpoint : `${endpoint}/`, context);
  // the targets tell whether the server can be reached at all: if not, the run fails
  const targets = (await api.get<{ activeTargets: ActiveTarget[] }>('/api/v1/targets', { state: 'active' })).activeTargets;
  const part = <T>(name: string, load: () => Promise<T>) => loadPart(context, name, load);
  if (isEnabled(context, 'server')) {
    const server = await part('server', () => serverRecord(api, scopeId));
    if (server) {
      yield { scopeId, records: [server] };
      context.component('server');
    }
  }
  const hosts = isEnabled(context, 'hosts') ? await part('hosts', () => hostRecords(api)) : undefined;
  if (hosts) {
    yield { scopeId, records: hosts };
    context.component('hosts');
  }
  if (isEnabled(context, 'targets')) {
    const described = new Set((hosts ?? []).map((h) => h.external_id.slice('host/'.length)));
    for (let i = 0; i < targets.length; i += 1000) yield { scopeId, records: targets.slice(i, i + 1000).map((t) => targetRecord(t, described)) };
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
  capabilities: { supports_universal_format: false, supports_multi_source: true, supports_watch: false, collects: true },
  collectables: KINDS,
  ciTypes: {
    'prometheus.server': ['version', 'revision', 'go_version', 'storage_retention', 'config_reloaded_at', 'config_reload_ok', 'started_at', 'metrics.goroutines', 'metrics.time_series', 'metrics.corrupted_chunks'],
    'prometheus.target': ['job', 'instance', 'labels', 'health', 'last_error', 'metrics.last_scrape', 'metrics.last_scrape_duration_seconds'],
    'host.linux': ['hostname', 'os_name', 'os_version', 'kernel', 'architecture', 'cpu_count', 'memory_bytes', 'instance', 'filesystems', 'network_interfaces', 'metrics.memory_available_bytes', 'metrics.load1'],
  },
  endpointSchemes: ['http', 'https'],
  collect: collectPrometheus,
};
