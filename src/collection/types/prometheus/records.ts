import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import { hostFacts, isLoopback } from '../shared/host.js';
import type { ActiveTarget, PrometheusApi, Sample } from './api.js';

/** Filesystems that are memory or kernel views, not storage (a PromQL raw string: no escapes). */
const VIRTUAL_FILESYSTEMS = 'tmpfs|devtmpfs|overlay|squashfs|proc|sysfs|cgroup2?|nsfs|autofs|fuse\\..*|ramfs|rootfs';

/** The server itself: its build, its runtime settings and, under `metrics`, what moves. */
export async function serverRecord(api: PrometheusApi, name: string): Promise<UniversalRecord> {
  const build = await api.get<Record<string, string>>('/api/v1/status/buildinfo');
  const runtime = await api.get<Record<string, unknown>>('/api/v1/status/runtimeinfo');
  return {
    external_id: 'server',
    ci_type: 'prometheus.server',
    name,
    raw_data: {
      build,
      runtime: {
        storageRetention: runtime.storageRetention,
        lastConfigTime: runtime.lastConfigTime,
        reloadConfigSuccess: runtime.reloadConfigSuccess,
        startTime: runtime.startTime,
      },
    },
    type_data: {
      version: build.version,
      revision: build.revision,
      go_version: build.goVersion,
      storage_retention: runtime.storageRetention ?? null,
      config_reloaded_at: runtime.lastConfigTime ?? null,
      config_reload_ok: runtime.reloadConfigSuccess ?? null,
      started_at: runtime.startTime ?? null,
      metrics: {
        goroutines: runtime.goroutineCount ?? null,
        time_series: runtime.timeSeriesCount ?? null,
        corrupted_chunks: runtime.corruptionCount ?? null,
      },
    },
  };
}

const targetId = (target: ActiveTarget) => `target/${target.scrapePool}/${target.scrapeUrl}`;

/** One scrape target; it `describes` the host of its instance when that host is collected too. */
export function targetRecord(target: ActiveTarget, hosts: Set<string>): UniversalRecord {
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
const strip = (labels: Record<string, string>, ...names: string[]) =>
  Object.fromEntries(Object.entries(labels).filter(([k]) => !['__name__', 'instance', 'job', ...names].includes(k)));

/** The host part of an instance label: `host:port`, `[address]:port`, or a host or address alone. */
export function instanceHost(instance: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(instance);
  if (bracketed) return bracketed[1]!;
  // an IPv6 address without brackets has no port after it
  if (instance.indexOf(':') !== instance.lastIndexOf(':')) return instance;
  return instance.replace(/:\d*$/, '');
}

/**
 * The host facts of a node_exporter's machine. It runs on the collector's machine only when both
 * the collector reached Prometheus over loopback and Prometheus scrapes the exporter over loopback:
 * a loopback instance of a Prometheus elsewhere is that Prometheus's machine, not this one.
 */
function exporterHost(instance: string, uname: Record<string, string>, dmi: Sample[] | undefined, local: boolean) {
  const host = instanceHost(instance);
  return hostFacts({
    hostname: uname.nodename ?? null,
    addresses: [host],
    product_uuid: dmi?.[0]?.metric.product_uuid ?? null,
    endpoint: instance,
    local: local && isLoopback(host),
  });
}

/**
 * The node_exporter hosts the server scrapes, one query per attribute set over all of them.
 * `local`: the collector reached the server over loopback.
 */
export async function hostRecords(api: PrometheusApi, local: boolean): Promise<UniversalRecord[]> {
  const [uname, os, cpus, memory, filesystems, interfaces, available, load, dmi] = await Promise.all([
    api.query('node_uname_info'),
    api.query('node_os_info'),
    api.query('count by (instance) (node_cpu_seconds_total{mode="idle"})'),
    api.query('node_memory_MemTotal_bytes'),
    api.query(`node_filesystem_size_bytes{fstype!~\`${VIRTUAL_FILESYSTEMS}\`}`),
    api.query('node_network_info'),
    api.query('node_memory_MemAvailable_bytes'),
    api.query('node_load1'),
    // the dmi collector's labels; its product_uuid only when node_exporter may read it (root)
    api.query('node_dmi_info'),
  ]);
  const [osBy, cpuBy, memoryBy, fsBy, netBy, availableBy, loadBy, dmiBy] = [
    os,
    cpus,
    memory,
    filesystems,
    interfaces,
    available,
    load,
    dmi,
  ].map(byInstance);
  return uname.map(({ metric }) => {
    const instance = metric.instance!;
    const osInfo = osBy!.get(instance)?.[0]?.metric;
    const filesystemList = (fsBy!.get(instance) ?? [])
      .map((s) => ({
        mountpoint: s.metric.mountpoint ?? '',
        device: s.metric.device ?? '',
        fstype: s.metric.fstype ?? '',
        size_bytes: Number(s.value[1]),
      }))
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
      raw_data: {
        uname: strip(metric),
        os: osInfo ? strip(osInfo) : null,
        ...attributes,
        filesystems: filesystemList,
        network_interfaces: interfaceList,
      },
      type_data: {
        ...attributes,
        instance,
        filesystems: filesystemList,
        network_interfaces: interfaceList,
        host: exporterHost(instance, metric, dmiBy!.get(instance), local),
        metrics: { memory_available_bytes: valueOf(availableBy!.get(instance)), load1: valueOf(loadBy!.get(instance)) },
      },
    };
  });
}
