import type { RequestOptions } from 'node:https';
import { isIP } from 'node:net';
import { Type } from '@sinclair/typebox';
import { KubeConfig, Watch } from '@kubernetes/client-node';
import type { UniversalRecord } from '../inventory/records.js';
import { guardedAddress } from '../net/endpoint.js';
import { guardedGet, type GuardedRequestOptions } from './http.js';
import type { CollectContext, CollectedBatch, CollectorType, WatchBatch, WatchContext } from './types.js';
import { WatchExpired } from './watch.js';

/**
 * The `kubernetes` collector type: the objects of one cluster, listed page by page (`limit` and
 * `continue`, the list restarted when a continue token expires) and, in hybrid mode, watched per
 * kind from the list's `resourceVersion` with bookmarks. The official client
 * (@kubernetes/client-node) turns the credentials into request options and runs the watches;
 * lists go through the request-forgery guard, and watches connect to the address it checked.
 *
 * External ids: `<kind>/<namespace>/<name>` (`<kind>/<name>` for cluster objects), kind in lower
 * case (`pod/default/web-1`, `node/worker-1`). Secrets are never collected; config maps without
 * their values.
 */

interface KindSpec {
  /** What `config.enabled_collectors` names. */
  name: string;
  path: string;
  kind: string;
  singular: string;
  namespaced: boolean;
}

// listing order: children before their owners and slices before services, so that `manages` and
// `routes_to` are known when the owner or service is written
const SPECS: KindSpec[] = [
  { name: 'namespaces', path: '/api/v1/namespaces', kind: 'Namespace', singular: 'namespace', namespaced: false },
  { name: 'nodes', path: '/api/v1/nodes', kind: 'Node', singular: 'node', namespaced: false },
  { name: 'persistentvolumes', path: '/api/v1/persistentvolumes', kind: 'PersistentVolume', singular: 'persistentvolume', namespaced: false },
  { name: 'persistentvolumeclaims', path: '/api/v1/persistentvolumeclaims', kind: 'PersistentVolumeClaim', singular: 'persistentvolumeclaim', namespaced: true },
  { name: 'configmaps', path: '/api/v1/configmaps', kind: 'ConfigMap', singular: 'configmap', namespaced: true },
  { name: 'pods', path: '/api/v1/pods', kind: 'Pod', singular: 'pod', namespaced: true },
  { name: 'endpointslices', path: '/apis/discovery.k8s.io/v1/endpointslices', kind: 'EndpointSlice', singular: 'endpointslice', namespaced: true },
  { name: 'services', path: '/api/v1/services', kind: 'Service', singular: 'service', namespaced: true },
  { name: 'ingresses', path: '/apis/networking.k8s.io/v1/ingresses', kind: 'Ingress', singular: 'ingress', namespaced: true },
  { name: 'replicasets', path: '/apis/apps/v1/replicasets', kind: 'ReplicaSet', singular: 'replicaset', namespaced: true },
  { name: 'jobs', path: '/apis/batch/v1/jobs', kind: 'Job', singular: 'job', namespaced: true },
  { name: 'statefulsets', path: '/apis/apps/v1/statefulsets', kind: 'StatefulSet', singular: 'statefulset', namespaced: true },
  { name: 'daemonsets', path: '/apis/apps/v1/daemonsets', kind: 'DaemonSet', singular: 'daemonset', namespaced: true },
  { name: 'deployments', path: '/apis/apps/v1/deployments', kind: 'Deployment', singular: 'deployment', namespaced: true },
  { name: 'cronjobs', path: '/apis/batch/v1/cronjobs', kind: 'CronJob', singular: 'cronjob', namespaced: true },
];

const ConfigSchema = Type.Object({
  cluster_name: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'The cluster name CIs are scoped by (default the API server host).' })),
  page_size: Type.Optional(Type.Integer({ minimum: 1, maximum: 5000, description: 'Objects per list request (`limit`, default 500).' })),
});

type Obj = { metadata?: { name?: string; namespace?: string; resourceVersion?: string; ownerReferences?: { kind: string; name: string }[]; labels?: Record<string, string>; [key: string]: unknown }; [key: string]: unknown };
type Json = Record<string, unknown>;

const get = (value: unknown, ...path: string[]): unknown => path.reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Json)[k] : undefined), value);
const list = (value: unknown): Json[] => (Array.isArray(value) ? (value as Json[]) : []);
const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** A Kubernetes quantity as a number (cores for CPU, bytes for memory). */
export function quantity(text: unknown): number | null {
  if (typeof text !== 'string') return null;
  const match = /^([0-9.]+)([a-zA-Z]*)$/.exec(text.trim());
  if (!match) return null;
  const factors: Record<string, number> = {
    '': 1, n: 1e-9, u: 1e-6, m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15,
    Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50,
  };
  const factor = factors[match[2]!];
  return factor === undefined ? null : Number(match[1]) * factor;
}

/** What one object's record needs from the others: owners' children and services' pods. */
class ClusterIndex {
  readonly children = new Map<string, Set<string>>();
  readonly servicePods = new Map<string, Set<string>>();
  private readonly ownersOf = new Map<string, string[]>();
  private readonly slicePods = new Map<string, { service: string; pods: string[] }>();

  register(spec: KindSpec, id: string, object: Obj): void {
    this.forget(id);
    const namespace = object.metadata?.namespace;
    const owners = (object.metadata?.ownerReferences ?? []).map((o) => `${o.kind.toLowerCase()}/${namespace}/${o.name}`);
    this.ownersOf.set(id, owners);
    for (const owner of owners) this.add(this.children, owner, id);
    if (spec.singular === 'endpointslice') {
      const service = object.metadata?.labels?.['kubernetes.io/service-name'];
      if (service) {
        const pods = list(object.endpoints)
          .map((e) => get(e, 'targetRef') as { kind?: string; name?: string; namespace?: string } | undefined)
          .filter((t) => t?.kind === 'Pod' && t.name)
          .map((t) => `pod/${t!.namespace ?? namespace}/${t!.name}`);
        const key = `service/${namespace}/${service}`;
        this.slicePods.set(id, { service: key, pods });
        for (const pod of pods) this.add(this.servicePods, key, pod);
      }
    }
  }

  forget(id: string): void {
    for (const owner of this.ownersOf.get(id) ?? []) this.children.get(owner)?.delete(id);
    this.ownersOf.delete(id);
    const slice = this.slicePods.get(id);
    if (slice) {
      this.slicePods.delete(id);
      const still = new Set([...this.slicePods.values()].filter((s) => s.service === slice.service).flatMap((s) => s.pods));
      this.servicePods.set(slice.service, still);
    }
  }

  private add(map: Map<string, Set<string>>, key: string, value: string): void {
    let set = map.get(key);
    if (!set) map.set(key, (set = new Set()));
    set.add(value);
  }
}

/** The index of each source's cluster, kept from its list for its watch. */
const indexes = new Map<string, ClusterIndex>();

const externalId = (spec: KindSpec, object: Obj) =>
  spec.namespaced ? `${spec.singular}/${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}` : `${spec.singular}/${object.metadata?.name ?? ''}`;

const images = (object: unknown) => list(get(object, 'spec', 'template', 'spec', 'containers')).map((c) => c.image);

function typeDataOf(spec: KindSpec, object: Obj, usage: Usage): Json {
  const status = (object.status ?? {}) as Json;
  const objectSpec = (object.spec ?? {}) as Json;
  switch (spec.singular) {
    case 'pod': {
      const statuses = new Map(list(status.containerStatuses).map((c) => [c.name, c]));
      return {
        phase: status.phase ?? null,
        node: objectSpec.nodeName ?? null,
        pod_ip: status.podIP ?? null,
        pod_ips: list(status.podIPs).map((p) => p.ip),
        host_ip: status.hostIP ?? null,
        qos_class: status.qosClass ?? null,
        containers: list(objectSpec.containers).map((c) => ({
          name: c.name,
          image: c.image,
          ready: get(statuses.get(c.name), 'ready') ?? false,
          restart_count: get(statuses.get(c.name), 'restartCount') ?? 0,
        })),
        metrics: usage.pods.get(`${object.metadata?.namespace}/${object.metadata?.name}`) ?? {},
      };
    }
    case 'node': {
      const info = (status.nodeInfo ?? {}) as Json;
      return {
        capacity: status.capacity ?? {},
        allocatable: status.allocatable ?? {},
        kubelet_version: info.kubeletVersion ?? null,
        os_image: info.osImage ?? null,
        kernel_version: info.kernelVersion ?? null,
        container_runtime: info.containerRuntimeVersion ?? null,
        architecture: info.architecture ?? null,
        unschedulable: objectSpec.unschedulable === true,
        conditions: list(status.conditions).map((c) => ({ type: c.type, status: c.status })),
        metrics: usage.nodes.get(object.metadata?.name ?? '') ?? {},
      };
    }
    case 'deployment':
    case 'statefulset':
    case 'replicaset':
      return {
        desired_replicas: objectSpec.replicas ?? null,
        ready_replicas: status.readyReplicas ?? 0,
        updated_replicas: status.updatedReplicas ?? 0,
        available_replicas: status.availableReplicas ?? 0,
        images: images(object),
        strategy: get(objectSpec, 'strategy', 'type') ?? get(objectSpec, 'updateStrategy', 'type') ?? null,
      };
    case 'daemonset':
      return {
        desired_replicas: status.desiredNumberScheduled ?? 0,
        ready_replicas: status.numberReady ?? 0,
        updated_replicas: status.updatedNumberScheduled ?? 0,
        available_replicas: status.numberAvailable ?? 0,
        images: images(object),
        strategy: get(objectSpec, 'updateStrategy', 'type') ?? null,
      };
    case 'service':
      return { type: objectSpec.type ?? 'ClusterIP', cluster_ip: objectSpec.clusterIP ?? null, ports: objectSpec.ports ?? [], selector: objectSpec.selector ?? {} };
    case 'namespace':
      return { phase: status.phase ?? null, labels: object.metadata?.labels ?? {} };
    case 'configmap':
      return { keys: (object.data_keys as string[] | undefined) ?? [], binary_keys: (object.binary_data_keys as string[] | undefined) ?? [] };
    case 'persistentvolume':
      return {
        capacity: get(objectSpec, 'capacity', 'storage') ?? null,
        access_modes: objectSpec.accessModes ?? [],
        storage_class: objectSpec.storageClassName ?? null,
        reclaim_policy: objectSpec.persistentVolumeReclaimPolicy ?? null,
        phase: status.phase ?? null,
        claim: objectSpec.claimRef ? `${str(get(objectSpec, 'claimRef', 'namespace'))}/${str(get(objectSpec, 'claimRef', 'name'))}` : null,
      };
    case 'persistentvolumeclaim':
      return {
        phase: status.phase ?? null,
        volume: objectSpec.volumeName ?? null,
        storage_class: objectSpec.storageClassName ?? null,
        requested: get(objectSpec, 'resources', 'requests', 'storage') ?? null,
        access_modes: objectSpec.accessModes ?? [],
      };
    case 'job':
      return { completions: objectSpec.completions ?? null, parallelism: objectSpec.parallelism ?? null, active: status.active ?? 0, succeeded: status.succeeded ?? 0, failed: status.failed ?? 0 };
    case 'cronjob':
      return { schedule: objectSpec.schedule ?? null, suspend: objectSpec.suspend === true, last_schedule_time: status.lastScheduleTime ?? null };
    case 'endpointslice':
      return {
        service: object.metadata?.labels?.['kubernetes.io/service-name'] ?? null,
        address_type: object.addressType ?? null,
        endpoints: list(object.endpoints).length,
        ports: object.ports ?? [],
      };
    case 'ingress':
      return {
        ingress_class: objectSpec.ingressClassName ?? null,
        hosts: list(objectSpec.rules).map((r) => r.host).filter(Boolean),
        services: [...backends(object)],
      };
    default:
      return {};
  }
}

function backends(object: Obj): Set<string> {
  const names = new Set<string>();
  const fallback = str(get(object, 'spec', 'defaultBackend', 'service', 'name'));
  if (fallback) names.add(fallback);
  for (const rule of list(get(object, 'spec', 'rules'))) {
    for (const path of list(get(rule, 'http', 'paths'))) {
      const name = str(get(path, 'backend', 'service', 'name'));
      if (name) names.add(name);
    }
  }
  return names;
}

function relationshipsOf(spec: KindSpec, id: string, object: Obj, index: ClusterIndex): { type: string; target_external_id: string }[] {
  const namespace = object.metadata?.namespace;
  const out: { type: string; target_external_id: string }[] = [];
  const to = (type: string, target: string) => out.push({ type, target_external_id: target });
  if (spec.namespaced && namespace) to('member_of', `namespace/${namespace}`);
  if (spec.singular === 'pod') {
    const node = str(get(object, 'spec', 'nodeName'));
    if (node) to('runs_on', `node/${node}`);
    for (const volume of list(get(object, 'spec', 'volumes'))) {
      const claim = str(get(volume, 'persistentVolumeClaim', 'claimName'));
      if (claim) to('mounts', `persistentvolumeclaim/${namespace}/${claim}`);
      const configMap = str(get(volume, 'configMap', 'name'));
      if (configMap) to('mounts', `configmap/${namespace}/${configMap}`);
    }
  }
  if (spec.singular === 'persistentvolumeclaim') {
    const volume = str(get(object, 'spec', 'volumeName'));
    if (volume) to('bound_to', `persistentvolume/${volume}`);
  }
  if (spec.singular === 'service') for (const pod of [...(index.servicePods.get(id) ?? [])].sort()) to('routes_to', pod);
  if (spec.singular === 'ingress') for (const service of [...backends(object)].sort()) to('exposes', `service/${namespace}/${service}`);
  for (const child of [...(index.children.get(id) ?? [])].sort()) to('manages', child);
  return out;
}

/** The object as stored: without managedFields; a config map with its keys and not its values. */
function rawOf(spec: KindSpec, object: Obj): Json {
  const metadata = { ...(object.metadata ?? {}) };
  delete metadata.managedFields;
  const raw: Json = { ...object, metadata };
  if (spec.singular === 'configmap') {
    raw.data_keys = Object.keys((object.data as Json | undefined) ?? {}).sort();
    raw.binary_data_keys = Object.keys((object.binaryData as Json | undefined) ?? {}).sort();
    delete raw.data;
    delete raw.binaryData;
  }
  return raw;
}

function recordOf(spec: KindSpec, object: Obj, index: ClusterIndex, usage: Usage): UniversalRecord {
  const id = externalId(spec, object);
  const raw = rawOf(spec, object);
  return {
    external_id: id,
    ci_type: `k8s.${spec.singular}`,
    name: object.metadata?.name ?? id,
    namespace: object.metadata?.namespace ?? null,
    raw_data: raw,
    type_data: typeDataOf(spec, raw as Obj, usage),
    relationships: relationshipsOf(spec, id, object, index),
  };
}

interface Usage {
  nodes: Map<string, Json>;
  pods: Map<string, Json>;
}

class KubeApi {
  readonly kc = new KubeConfig();
  private request: Pick<GuardedRequestOptions, 'headers' | 'tls' | 'verifyTls'> = {};

  private constructor(
    readonly base: string,
    private readonly context: CollectContext,
  ) {}

  static async connect(context: CollectContext): Promise<KubeApi> {
    const endpoint = context.source.endpoint;
    if (!endpoint) throw new Error('the source has no endpoint (the API server URL)');
    const url = new URL(endpoint);
    const address = await guardedAddress(url.hostname, context.allowedHosts);
    const pinned = new URL(endpoint);
    pinned.hostname = address.includes(':') ? `[${address}]` : address;
    const credentials = context.credentials;
    const user: Json = { name: 'cinv' };
    const cluster: Json = {
      name: 'cluster',
      server: pinned.href.replace(/\/$/, ''),
      // the name the certificate is checked against, now that the connection goes to an address
      ...(isIP(url.hostname.replace(/^\[|\]$/g, '')) === 0 ? { tlsServerName: url.hostname } : {}),
      // the client refuses plain http unless told there is nothing to verify
      skipTLSVerify: context.source.config.verify_ssl === false || url.protocol === 'http:',
    };
    if (credentials?.type === 'token') user.token = credentials.token;
    else if (credentials?.type === 'tls') {
      user.certData = Buffer.from(credentials.client_certificate).toString('base64');
      user.keyData = Buffer.from(credentials.client_key).toString('base64');
      if (credentials.ca_certificate) cluster.caData = Buffer.from(credentials.ca_certificate).toString('base64');
    } else if (credentials?.type === 'basic') {
      throw new Error('kubernetes sources take token or tls credentials (the API server has no basic authentication)');
    }
    const api = new KubeApi(endpoint.replace(/\/$/, ''), context);
    api.kc.loadFromOptions({ clusters: [cluster], users: [user], contexts: [{ name: 'cinv', cluster: 'cluster', user: 'cinv' }], currentContext: 'cinv' });
    const options: RequestOptions = { headers: {} };
    await api.kc.applyToHTTPSOptions(options);
    const pem = (value: unknown) => (value === undefined ? undefined : Buffer.isBuffer(value) ? value.toString('utf8') : String(value));
    api.request = {
      headers: options.headers as Record<string, string>,
      tls: { ca: pem(options.ca), cert: pem(options.cert), key: pem(options.key) },
      verifyTls: options.rejectUnauthorized !== false,
    };
    return api;
  }

  /** A GET of the API; a 410 answer is `WatchExpired` (a continue token too old), a 404 is null. */
  async get(path: string, query: Record<string, string> = {}): Promise<Json | null> {
    const url = new URL(`${this.base}${path}`);
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    const timeout = typeof this.context.source.config.timeout === 'number' ? this.context.source.config.timeout * 1000 : 60_000;
    const reply = await guardedGet(url.href, { ...this.request, allowedHosts: this.context.allowedHosts, signal: AbortSignal.any([this.context.signal, AbortSignal.timeout(timeout)]) });
    if (reply.status === 404) return null;
    if (reply.status === 410) throw new WatchExpired(`${path}: the list's continue token expired`);
    if (reply.status !== 200) {
      let message = `HTTP ${reply.status}`;
      try {
        message = String((JSON.parse(reply.body.toString('utf8')) as Json).message ?? message);
      } catch {
        // not a Status
      }
      throw new Error(`${path} answered ${reply.status}: ${message.slice(0, 300)}`);
    }
    return JSON.parse(reply.body.toString('utf8')) as Json;
  }
}

const enabledSpecs = (config: Json) => {
  const wanted = config.enabled_collectors;
  return Array.isArray(wanted) && wanted.length > 0 ? SPECS.filter((s) => wanted.includes(s.name)) : SPECS;
};

const scopeOf = (context: CollectContext) =>
  typeof context.source.config.cluster_name === 'string' ? context.source.config.cluster_name : new URL(context.source.endpoint ?? 'https://cluster').hostname;

async function usageOf(api: KubeApi, context: CollectContext): Promise<Usage> {
  const usage: Usage = { nodes: new Map(), pods: new Map() };
  try {
    const nodes = await api.get('/apis/metrics.k8s.io/v1beta1/nodes');
    const pods = await api.get('/apis/metrics.k8s.io/v1beta1/pods');
    for (const item of list(nodes?.items)) {
      usage.nodes.set(String(get(item, 'metadata', 'name')), { cpu_cores: quantity(get(item, 'usage', 'cpu')), memory_bytes: quantity(get(item, 'usage', 'memory')) });
    }
    for (const item of list(pods?.items)) {
      const containers = list(item.containers);
      const sum = (resource: string) => containers.reduce((total, c) => total + (quantity(get(c, 'usage', resource)) ?? 0), 0);
      usage.pods.set(`${String(get(item, 'metadata', 'namespace'))}/${String(get(item, 'metadata', 'name'))}`, { cpu_cores: sum('cpu'), memory_bytes: sum('memory') });
    }
    if (nodes || pods) context.component('metrics');
  } catch (error) {
    context.signal.throwIfAborted();
    context.component('metrics', error);
  }
  return usage;
}

/** Lists every enabled kind, page by page, restarting a kind's list when its continue token expires. */
async function* collectKubernetes(context: CollectContext): AsyncGenerator<CollectedBatch> {
  const api = await KubeApi.connect(context);
  const scopeId = scopeOf(context);
  const pageSize = typeof context.source.config.page_size === 'number' ? context.source.config.page_size : 500;
  const index = new ClusterIndex();
  // the server must answer before anything else: if not, the run fails
  await api.get('/version');
  const usage = await usageOf(api, context);
  for (const spec of enabledSpecs(context.source.config)) {
    let restarts = 0;
    for (;;) {
      try {
        let token: string | undefined;
        do {
          const page = await api.get(spec.path, { limit: String(pageSize), ...(token ? { continue: token } : {}) });
          if (!page) throw new Error(`${spec.path} is not served by this cluster`);
          const objects = list(page.items) as Obj[];
          for (const object of objects) index.register(spec, externalId(spec, object), object);
          token = str(get(page, 'metadata', 'continue')) ?? undefined;
          const version = str(get(page, 'metadata', 'resourceVersion'));
          yield {
            scopeId,
            records: objects.map((o) => recordOf(spec, o, index, usage)),
            ...(token === undefined && version ? { resume: { key: spec.name, version } } : {}),
          };
        } while (token);
        context.component(spec.name);
        break;
      } catch (error) {
        context.signal.throwIfAborted();
        if (error instanceof WatchExpired && restarts++ < 3) continue;
        context.component(spec.name, error);
        break;
      }
    }
  }
  indexes.set(context.source.id, index);
}

interface Queued {
  batch?: WatchBatch;
  error?: unknown;
  end?: boolean;
}

/** One watch per enabled kind from the list's versions, as a stream of single-event batches. */
async function* watchKubernetes(context: WatchContext): AsyncGenerator<WatchBatch> {
  const api = await KubeApi.connect(context);
  const scopeId = scopeOf(context);
  const index = indexes.get(context.source.id) ?? new ClusterIndex();
  const usage: Usage = { nodes: new Map(), pods: new Map() };
  const queue: Queued[] = [];
  let wake: (() => void) | undefined;
  const push = (item: Queued) => {
    queue.push(item);
    wake?.();
  };
  const watcher = new Watch(api.kc);
  const controllers: AbortController[] = [];
  const stopAll = () => {
    controllers.forEach((c) => c.abort());
    wake?.();
  };
  context.signal.addEventListener('abort', stopAll, { once: true });
  try {
    const watched = enabledSpecs(context.source.config).filter((spec) => context.from[spec.name] !== undefined);
    // opened together: each waits for its response headers
    await Promise.all(watched.map(async (spec) => {
      const from = context.from[spec.name]!;
      const controller = await watcher.watch(
        spec.path,
        { resourceVersion: from, allowWatchBookmarks: true },
        (phase: string, object: Obj) => {
          const version = object?.metadata?.resourceVersion;
          const resume = version ? { key: spec.name, version } : undefined;
          if (phase === 'ERROR') {
            const code = get(object, 'code');
            push({ error: code === 410 ? new WatchExpired(`${spec.path}: ${str(get(object, 'message')) ?? 'resource version too old'}`) : new Error(`${spec.path}: ${str(get(object, 'message')) ?? 'watch error'}`) });
          } else if (phase === 'BOOKMARK') {
            push({ batch: { scopeId, upserts: [], deletions: [], resume } });
          } else if (phase === 'DELETED') {
            const id = externalId(spec, object);
            index.forget(id);
            push({ batch: { scopeId, upserts: [], deletions: [id], resume } });
          } else {
            const id = externalId(spec, object);
            index.register(spec, id, object);
            push({ batch: { scopeId, upserts: [recordOf(spec, object, index, usage)], deletions: [], resume } });
          }
        },
        (error: unknown) => {
          if (context.signal.aborted) return;
          const status = (error as { statusCode?: number } | null)?.statusCode;
          if (status === 410) push({ error: new WatchExpired(`${spec.path}: watch answered 410 Gone`) });
          else if (error) push({ error });
          else push({ end: true });
        },
      );
      controllers.push(controller);
    }));
    for (;;) {
      while (queue.length === 0) {
        context.signal.throwIfAborted();
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
      const item = queue.shift()!;
      if (item.error) throw item.error instanceof Error ? item.error : new Error(String(item.error));
      // one watch ended (a server-side timeout): end all, so the worker reconnects every kind from its newest version
      if (item.end) return;
      yield item.batch!;
    }
  } finally {
    context.signal.removeEventListener('abort', stopAll);
    stopAll();
  }
}

export const kubernetesType: CollectorType = {
  type: 'kubernetes',
  description:
    'Discovers a Kubernetes cluster through its API server: `k8s.<kind>` CIs for nodes, namespaces, pods, workloads, ' +
    'services, endpoint slices, ingresses, volumes, claims and config maps (keys only; secrets never), with `runs_on`, ' +
    '`manages`, `routes_to`, `bound_to`, `mounts`, `member_of` and `exposes` relationships, and usage from ' +
    '`metrics.k8s.io` when served. `collection_mode: hybrid` watches every kind between lists. Credentials `token` or `tls`.',
  configSchema: ConfigSchema,
  capabilities: { supports_universal_format: false, supports_multi_source: true, supports_watch: true, collects: true },
  collectables: SPECS.map((s) => s.name),
  ciTypes: {
    'k8s.pod': ['phase', 'node', 'pod_ip', 'pod_ips', 'host_ip', 'qos_class', 'containers', 'metrics.cpu_cores', 'metrics.memory_bytes'],
    'k8s.node': ['capacity', 'allocatable', 'kubelet_version', 'os_image', 'kernel_version', 'container_runtime', 'architecture', 'unschedulable', 'conditions', 'metrics.cpu_cores', 'metrics.memory_bytes'],
    'k8s.deployment': ['desired_replicas', 'ready_replicas', 'updated_replicas', 'available_replicas', 'images', 'strategy'],
    'k8s.statefulset': ['desired_replicas', 'ready_replicas', 'updated_replicas', 'available_replicas', 'images', 'strategy'],
    'k8s.replicaset': ['desired_replicas', 'ready_replicas', 'updated_replicas', 'available_replicas', 'images', 'strategy'],
    'k8s.daemonset': ['desired_replicas', 'ready_replicas', 'updated_replicas', 'available_replicas', 'images', 'strategy'],
    'k8s.service': ['type', 'cluster_ip', 'ports', 'selector'],
    'k8s.namespace': ['phase', 'labels'],
    'k8s.configmap': ['keys', 'binary_keys'],
    'k8s.persistentvolume': ['capacity', 'access_modes', 'storage_class', 'reclaim_policy', 'phase', 'claim'],
    'k8s.persistentvolumeclaim': ['phase', 'volume', 'storage_class', 'requested', 'access_modes'],
    'k8s.job': ['completions', 'parallelism', 'active', 'succeeded', 'failed'],
    'k8s.cronjob': ['schedule', 'suspend', 'last_schedule_time'],
    'k8s.endpointslice': ['service', 'address_type', 'endpoints', 'ports'],
    'k8s.ingress': ['ingress_class', 'hosts', 'services'],
  },
  endpointSchemes: ['http', 'https'],
  collect: collectKubernetes,
  watch: watchKubernetes,
};
