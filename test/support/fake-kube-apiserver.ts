import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import path from 'node:path';

export interface ClusterCertificates {
  /** The cluster's CA, which signed both certificates below. */
  ca: string;
  server: { cert: string; key: string };
  /** A client certificate for user `cinv-reader`, accepted by the API server. */
  client: { cert: string; key: string };
}

/** A CA with a server certificate for 127.0.0.1 and a client certificate, made by openssl in a throwaway directory. */
export function clusterCertificates(): ClusterCertificates {
  const dir = mkdtempSync(path.join(tmpdir(), 'cinv-fake-kube-'));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  try {
    openssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=fake-kubernetes-ca',
      '-keyout',
      file('ca.key'),
      '-out',
      file('ca.crt'),
    );
    const issue = (name: string, subject: string, extensions: string) => {
      openssl(
        'req',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-subj',
        subject,
        '-keyout',
        file(`${name}.key`),
        '-out',
        file(`${name}.csr`),
      );
      writeFileSync(file(`${name}.ext`), extensions);
      openssl(
        'x509',
        '-req',
        '-in',
        file(`${name}.csr`),
        '-CA',
        file('ca.crt'),
        '-CAkey',
        file('ca.key'),
        '-CAcreateserial',
        '-days',
        '1',
        '-extfile',
        file(`${name}.ext`),
        '-out',
        file(`${name}.crt`),
      );
      return { cert: readFileSync(file(`${name}.crt`), 'utf8'), key: readFileSync(file(`${name}.key`), 'utf8') };
    };
    const server = issue('server', '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
    const client = issue('client', '/CN=cinv-reader/O=cinv', 'extendedKeyUsage=clientAuth\n');
    return { ca: readFileSync(file('ca.crt'), 'utf8'), server, client };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A fake Kubernetes API server: no API server can run on these machines, so this one speaks the
 * wire protocol a real one does for what cinv and `kubectl get` use — discovery (`/version`, `/api`,
 * `/apis`, group versions), lists with `limit` and `continue` (410 Expired for a continue token
 * older than the last compaction), single gets, watches as newline-delimited JSON events from a
 * `resourceVersion` (ADDED, MODIFIED, DELETED, BOOKMARK with `allowWatchBookmarks`, and an ERROR
 * event with a 410 Status for a version older than the compaction), `metrics.k8s.io`, and bearer
 * token or client-certificate authentication over TLS (401 Status otherwise). Tests change the
 * cluster through its methods.
 */

export interface ResourceKind {
  group: string;
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
  singular: string;
  shortNames?: string[];
}

export const KINDS: ResourceKind[] = [
  {
    group: '',
    version: 'v1',
    resource: 'namespaces',
    kind: 'Namespace',
    namespaced: false,
    singular: 'namespace',
    shortNames: ['ns'],
  },
  {
    group: '',
    version: 'v1',
    resource: 'nodes',
    kind: 'Node',
    namespaced: false,
    singular: 'node',
    shortNames: ['no'],
  },
  { group: '', version: 'v1', resource: 'pods', kind: 'Pod', namespaced: true, singular: 'pod', shortNames: ['po'] },
  {
    group: '',
    version: 'v1',
    resource: 'services',
    kind: 'Service',
    namespaced: true,
    singular: 'service',
    shortNames: ['svc'],
  },
  {
    group: '',
    version: 'v1',
    resource: 'configmaps',
    kind: 'ConfigMap',
    namespaced: true,
    singular: 'configmap',
    shortNames: ['cm'],
  },
  { group: '', version: 'v1', resource: 'secrets', kind: 'Secret', namespaced: true, singular: 'secret' },
  {
    group: '',
    version: 'v1',
    resource: 'persistentvolumes',
    kind: 'PersistentVolume',
    namespaced: false,
    singular: 'persistentvolume',
    shortNames: ['pv'],
  },
  {
    group: '',
    version: 'v1',
    resource: 'persistentvolumeclaims',
    kind: 'PersistentVolumeClaim',
    namespaced: true,
    singular: 'persistentvolumeclaim',
    shortNames: ['pvc'],
  },
  {
    group: 'apps',
    version: 'v1',
    resource: 'deployments',
    kind: 'Deployment',
    namespaced: true,
    singular: 'deployment',
    shortNames: ['deploy'],
  },
  {
    group: 'apps',
    version: 'v1',
    resource: 'replicasets',
    kind: 'ReplicaSet',
    namespaced: true,
    singular: 'replicaset',
    shortNames: ['rs'],
  },
  {
    group: 'apps',
    version: 'v1',
    resource: 'statefulsets',
    kind: 'StatefulSet',
    namespaced: true,
    singular: 'statefulset',
    shortNames: ['sts'],
  },
  {
    group: 'apps',
    version: 'v1',
    resource: 'daemonsets',
    kind: 'DaemonSet',
    namespaced: true,
    singular: 'daemonset',
    shortNames: ['ds'],
  },
  { group: 'batch', version: 'v1', resource: 'jobs', kind: 'Job', namespaced: true, singular: 'job' },
  {
    group: 'batch',
    version: 'v1',
    resource: 'cronjobs',
    kind: 'CronJob',
    namespaced: true,
    singular: 'cronjob',
    shortNames: ['cj'],
  },
  {
    group: 'discovery.k8s.io',
    version: 'v1',
    resource: 'endpointslices',
    kind: 'EndpointSlice',
    namespaced: true,
    singular: 'endpointslice',
  },
  {
    group: 'networking.k8s.io',
    version: 'v1',
    resource: 'ingresses',
    kind: 'Ingress',
    namespaced: true,
    singular: 'ingress',
    shortNames: ['ing'],
  },
];

type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; uid?: string; [key: string]: unknown };
  [key: string]: unknown;
};

interface Event {
  rv: number;
  resource: string;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: KubeObject;
}

const apiVersionOf = (kind: ResourceKind) => (kind.group === '' ? kind.version : `${kind.group}/${kind.version}`);

export class FakeKubeApiServer {
  readonly requests: {
    method: string;
    path: string;
    query: Record<string, string>;
    user: 'token' | 'client-certificate';
  }[] = [];
  private readonly objects = new Map<string, Map<string, KubeObject>>(KINDS.map((k) => [k.resource, new Map()]));
  private readonly events: Event[] = [];
  private readonly watchers = new Set<{
    resource: string;
    namespace?: string;
    response: ServerResponse;
    bookmarks: boolean;
  }>();
  private rv = 1000;
  /** Each resource's keys in list order, kept until an object is added or removed: pages are served from it. */
  private readonly order = new Map<string, string[]>();
  private compactedBelow = 0;
  private uid = 0;
  private server: Server | undefined;
  url = '';
  /** Called before each list page is served (a test may compact the history there). */
  beforeList: ((path: string, query: Record<string, string>) => void) | undefined;
  /** Node and pod usage served by metrics.k8s.io; null: the API group is not served. */
  metrics: {
    nodes: Record<string, { cpu: string; memory: string }>;
    pods: Record<string, { cpu: string; memory: string }>;
  } | null = { nodes: {}, pods: {} };

  /**
   * Serves https with `certificates` (bearer tokens or client certificates the CA signed), http
   * without (bearer tokens only).
   */
  constructor(
    readonly token: string,
    private readonly certificates?: ClusterCertificates,
  ) {}

  async start(): Promise<string> {
    const handler = (request: IncomingMessage, response: ServerResponse) => this.handle(request, response);
    const tls = this.certificates;
    this.server = tls
      ? createHttpsServer({ ...tls.server, ca: tls.ca, requestCert: true, rejectUnauthorized: false }, handler)
      : createServer(handler);
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `${tls ? 'https' : 'http'}://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    this.dropWatches();
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  /** Creates or replaces an object, as a controller would; watchers see ADDED or MODIFIED. */
  put(resource: string, object: KubeObject): KubeObject {
    const kind = this.kind(resource);
    const store = this.objects.get(resource)!;
    const key = this.keyOf(object);
    const existing = store.get(key);
    const stored: KubeObject = structuredClone({
      apiVersion: apiVersionOf(kind),
      kind: kind.kind,
      ...object,
      metadata: {
        uid: existing?.metadata.uid ?? `00000000-0000-4000-8000-${(++this.uid).toString(16).padStart(12, '0')}`,
        creationTimestamp: existing?.metadata.creationTimestamp ?? '2026-11-01T00:00:00Z',
        ...object.metadata,
        resourceVersion: String(++this.rv),
        managedFields: [{ manager: 'kubectl', operation: 'Update', time: new Date().toISOString() }],
      },
    });
    store.set(key, stored);
    if (!existing) this.order.delete(resource);
    this.emit({ rv: this.rv, resource, type: existing ? 'MODIFIED' : 'ADDED', object: stored });
    return stored;
  }

  remove(resource: string, name: string, namespace?: string): void {
    const store = this.objects.get(resource)!;
    const key = namespace ? `${namespace}/${name}` : name;
    const existing = store.get(key);
    if (!existing) return;
    store.delete(key);
    this.order.delete(resource);
    const gone = { ...existing, metadata: { ...existing.metadata, resourceVersion: String(++this.rv) } };
    this.emit({ rv: this.rv, resource, type: 'DELETED', object: gone });
  }

  /** Forgets history before now, as etcd compaction does: older watches and continue tokens get 410. */
  compact(): void {
    this.compactedBelow = ++this.rv;
    this.events.length = 0;
  }

  /** Ends every open watch, as an API server restart or a load balancer timeout does. */
  dropWatches(): void {
    for (const watcher of this.watchers) watcher.response.end();
    this.watchers.clear();
  }

  /** Objects of a resource the cluster holds now. */
  count(resource: string): number {
    return this.objects.get(resource)!.size;
  }

  get openWatches(): number {
    return this.watchers.size;
  }

  private kind(resource: string): ResourceKind {
    const kind = KINDS.find((k) => k.resource === resource);
    if (!kind) throw new Error(`unknown resource ${resource}`);
    return kind;
  }

  private keyOf(object: KubeObject): string {
    return object.metadata.namespace ? `${object.metadata.namespace}/${object.metadata.name}` : object.metadata.name;
  }

  private emit(event: Event): void {
    this.events.push(event);
    for (const watcher of this.watchers) {
      if (watcher.resource !== event.resource) continue;
      if (watcher.namespace && event.object.metadata.namespace !== watcher.namespace) continue;
      if (watcher.response.writableEnded) continue;
      watcher.response.write(`${JSON.stringify({ type: event.type, object: event.object })}\n`);
    }
  }

  private status(response: ServerResponse, code: number, reason: string, message: string): void {
    response.writeHead(code, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code }),
    );
  }

  private json(response: ServerResponse, body: unknown): void {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    const url = new URL(request.url ?? '/', 'http://fake');
    const query = Object.fromEntries(url.searchParams);
    const certified = this.certificates !== undefined && (request.socket as TLSSocket).authorized === true;
    this.requests.push({
      method: request.method ?? 'GET',
      path: url.pathname,
      query,
      user: certified ? 'client-certificate' : 'token',
    });
    if (!certified && request.headers.authorization !== `Bearer ${this.token}`)
      return this.status(response, 401, 'Unauthorized', 'Unauthorized');
    if (request.method !== 'GET') return this.status(response, 405, 'MethodNotAllowed', 'this fake serves reads only');
    const path = url.pathname.replace(/\/+$/, '');
    if (path === '/version')
      return this.json(response, { major: '1', minor: '29', gitVersion: 'v1.29.0-fake', platform: 'linux/amd64' });
    if (path === '/api')
      return this.json(response, {
        kind: 'APIVersions',
        versions: ['v1'],
        serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: new URL(this.url).host }],
      });
    if (path === '/apis') return this.json(response, this.groupList());
    const parts = path.split('/').filter(Boolean);
    // /api/v1/... or /apis/<group>/<version>/...
    const [group, version, rest] =
      parts[0] === 'api' ? ['', parts[1], parts.slice(2)] : [parts[1], parts[2], parts.slice(3)];
    if (group === 'metrics.k8s.io') return this.metricsRoute(response, rest ?? []);
    if (!rest || rest.length === 0) return this.resourceList(response, group ?? '', version ?? '');
    let namespace: string | undefined;
    let tail = rest;
    if (tail[0] === 'namespaces' && tail.length >= 3) {
      namespace = tail[1];
      tail = tail.slice(2);
    }
    const kind = KINDS.find((k) => k.group === group && k.version === version && k.resource === tail[0]);
    if (!kind) return this.status(response, 404, 'NotFound', `the server could not find the requested resource`);
    if (tail.length === 2) {
      const found = this.objects.get(kind.resource)!.get(namespace ? `${namespace}/${tail[1]}` : tail[1]!);
      return found
        ? this.json(response, found)
        : this.status(response, 404, 'NotFound', `${kind.resource} "${tail[1]}" not found`);
    }
    if (query.watch === 'true' || query.watch === '1') return this.watch(request, response, kind, namespace, query);
    return this.list(response, kind, namespace, query);
  }

  private groupList() {
    const groups = [...new Set(KINDS.filter((k) => k.group !== '').map((k) => k.group))];
    if (this.metrics) groups.push('metrics.k8s.io');
    return {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: groups.map((name) => {
        const version = name === 'metrics.k8s.io' ? 'v1beta1' : 'v1';
        return {
          name,
          versions: [{ groupVersion: `${name}/${version}`, version }],
          preferredVersion: { groupVersion: `${name}/${version}`, version },
        };
      }),
    };
  }

  private resourceList(response: ServerResponse, group: string, version: string): void {
    const kinds = KINDS.filter((k) => k.group === group && k.version === version);
    if (kinds.length === 0)
      return this.status(response, 404, 'NotFound', 'the server could not find the requested resource');
    this.json(response, {
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: group === '' ? version : `${group}/${version}`,
      resources: kinds.map((k) => ({
        name: k.resource,
        singularName: k.singular,
        namespaced: k.namespaced,
        kind: k.kind,
        verbs: ['get', 'list', 'watch'],
        shortNames: k.shortNames,
      })),
    });
  }

  private list(
    response: ServerResponse,
    kind: ResourceKind,
    namespace: string | undefined,
    query: Record<string, string>,
  ): void {
    this.beforeList?.(`/${kind.group === '' ? 'api' : `apis/${kind.group}`}/${kind.version}/${kind.resource}`, query);
    let after = '';
    if (query.continue) {
      let token: { rv: number; after: string };
      try {
        token = JSON.parse(Buffer.from(query.continue, 'base64url').toString('utf8')) as { rv: number; after: string };
      } catch {
        return this.status(response, 400, 'BadRequest', 'invalid continue token');
      }
      if (token.rv < this.compactedBelow) {
        return this.status(
          response,
          410,
          'Expired',
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
        );
      }
      after = token.after;
    }
    // a page costs what it holds, as etcd's does: sorting the resource's every key per page made a
    // list of 100 000 pods in pages of 500 take time in the square of its size
    const store = this.objects.get(kind.resource)!;
    const keys = this.keysInOrder(kind.resource);
    const limit = query.limit ? Number(query.limit) : Infinity;
    const matches = (key: string) => !namespace || store.get(key)!.metadata.namespace === namespace;
    const page: [string, KubeObject][] = [];
    let next = firstAfter(keys, after);
    for (; next < keys.length && page.length < limit; next++)
      if (matches(keys[next]!)) page.push([keys[next]!, store.get(keys[next]!)!]);
    const rest = namespace ? keys.slice(next).filter(matches).length : keys.length - next;
    const more = rest > 0;
    const last = page.at(-1)?.[0] ?? after;
    this.json(response, {
      kind: `${kind.kind}List`,
      apiVersion: apiVersionOf(kind),
      metadata: {
        resourceVersion: String(this.rv),
        ...(more
          ? {
              continue: Buffer.from(JSON.stringify({ rv: this.rv, after: last })).toString('base64url'),
              remainingItemCount: rest,
            }
          : {}),
      },
      items: page.map(([, o]) => o),
    });
  }

  private keysInOrder(resource: string): string[] {
    let keys = this.order.get(resource);
    if (!keys) {
      keys = [...this.objects.get(resource)!.keys()].sort();
      this.order.set(resource, keys);
    }
    return keys;
  }

  private watch(
    request: IncomingMessage,
    response: ServerResponse,
    kind: ResourceKind,
    namespace: string | undefined,
    query: Record<string, string>,
  ): void {
    const from = Number(query.resourceVersion ?? this.rv);
    response.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    // as an API server does: the client learns at once that the watch is open
    response.flushHeaders();
    if (from < this.compactedBelow) {
      const status = {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message: `too old resource version: ${from} (${this.compactedBelow})`,
        reason: 'Expired',
        code: 410,
      };
      response.end(`${JSON.stringify({ type: 'ERROR', object: status })}\n`);
      return;
    }
    for (const event of this.events) {
      if (event.rv <= from || event.resource !== kind.resource) continue;
      if (namespace && event.object.metadata.namespace !== namespace) continue;
      response.write(`${JSON.stringify({ type: event.type, object: event.object })}\n`);
    }
    const watcher = { resource: kind.resource, namespace, response, bookmarks: query.allowWatchBookmarks === 'true' };
    this.watchers.add(watcher);
    const bookmark = watcher.bookmarks
      ? setInterval(() => {
          // the watch may have ended (its timeout) before its close event stopped this timer
          if (response.writableEnded) return;
          response.write(
            `${JSON.stringify({ type: 'BOOKMARK', object: { kind: kind.kind, apiVersion: apiVersionOf(kind), metadata: { resourceVersion: String(this.rv) } } })}\n`,
          );
        }, 500)
      : undefined;
    const timeout = query.timeoutSeconds
      ? setTimeout(() => response.end(), Number(query.timeoutSeconds) * 1000)
      : undefined;
    const end = () => {
      clearInterval(bookmark);
      clearTimeout(timeout);
      this.watchers.delete(watcher);
    };
    request.on('close', end);
    response.on('finish', end);
    response.on('close', end);
  }

  private metricsRoute(response: ServerResponse, rest: string[]): void {
    if (!this.metrics)
      return this.status(response, 404, 'NotFound', 'the server could not find the requested resource');
    const [resource] = rest;
    if (resource === undefined) {
      return this.json(response, {
        kind: 'APIResourceList',
        groupVersion: 'metrics.k8s.io/v1beta1',
        resources: [
          { name: 'nodes', namespaced: false, kind: 'NodeMetrics', verbs: ['get', 'list'] },
          { name: 'pods', namespaced: true, kind: 'PodMetrics', verbs: ['get', 'list'] },
        ],
      });
    }
    const now = new Date().toISOString();
    if (resource === 'nodes') {
      return this.json(response, {
        kind: 'NodeMetricsList',
        apiVersion: 'metrics.k8s.io/v1beta1',
        metadata: {},
        items: Object.entries(this.metrics.nodes).map(([name, usage]) => ({
          metadata: { name },
          timestamp: now,
          window: '10s',
          usage,
        })),
      });
    }
    if (resource === 'pods') {
      return this.json(response, {
        kind: 'PodMetricsList',
        apiVersion: 'metrics.k8s.io/v1beta1',
        metadata: {},
        items: Object.entries(this.metrics.pods).map(([key, usage]) => {
          const [namespace, name] = key.split('/');
          return { metadata: { name, namespace }, timestamp: now, window: '10s', containers: [{ name: 'app', usage }] };
        }),
      });
    }
    this.status(response, 404, 'NotFound', 'the server could not find the requested resource');
  }
}

/** The index of the first key after `after` in sorted `keys`. */
function firstAfter(keys: readonly string[], after: string): number {
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (keys[middle]! <= after) low = middle + 1;
    else high = middle;
  }
  return low;
}
