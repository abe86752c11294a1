import { ClusterIndex } from '../types/kubernetes/cluster-index.js';
import { externalId, SPECS, type Kind, type KindSpec, type Obj } from '../types/kubernetes/kinds.js';
import { recordOf } from '../types/kubernetes/records.js';
import type { Usage } from '../types/kubernetes/type-data.js';
import type { UniversalRecord } from '../../inventory/write-path/records.js';
import type { Random } from './random.js';

const SPEC = new Map(SPECS.map((spec) => [spec.singular, spec]));
const specOf = (kind: Kind): KindSpec => SPEC.get(kind)!;

/** The shape of a generated cluster: its teams (namespaces) and how many services each runs. */
export interface ClusterPlan {
  name: string;
  nodes: number;
  teams: readonly { namespace: string; apps: readonly string[] }[];
}

interface PodPlace {
  name: string;
  node: string;
  ip: string;
  started: string;
}

interface App {
  namespace: string;
  name: string;
  image: string;
  version: number;
  replicas: number;
  /** The replica set serving now, by its pod-template hash. */
  hash: string;
  /** Its pods by position: name, node, address and start. */
  pods: PodPlace[];
  env: Record<string, string>;
  config: string | undefined;
  claim: string | undefined;
  crashing: boolean;
}

/**
 * One generated Kubernetes cluster, held as API objects and turned into records by the
 * `kubernetes` collector type's own mapping (recordOf), so that the demo's CIs, type data and
 * relationships are exactly what a collection of such a cluster stores. Every change is a method
 * that returns what a collection would then report: the objects written and the ones gone.
 */
export class DemoCluster {
  private readonly objects = new Map<string, { spec: KindSpec; object: Obj }>();
  private readonly index = new ClusterIndex();
  private readonly apps = new Map<string, App>();
  private readonly touched = new Set<string>();
  private readonly gone = new Set<string>();
  private nodeCount = 0;
  private version = 1000;
  private ip = 10;

  constructor(
    readonly plan: ClusterPlan,
    private readonly random: Random,
    private readonly clock: () => Date,
  ) {
    for (let n = 0; n < plan.nodes; n++) this.addNode();
    for (const team of plan.teams) {
      this.put('namespace', {
        metadata: this.meta(team.namespace, undefined, { 'kubernetes.io/metadata.name': team.namespace }),
        status: { phase: 'Active' },
      });
      for (const name of team.apps) this.addApp(team.namespace, name);
    }
  }

  /** Every object of the cluster as records, in the collector's listing order. */
  all(): UniversalRecord[] {
    return this.recordsOf([...this.objects.keys()]);
  }

  /** What changed since the last call: records of the objects written, and the external ids gone. */
  drain(): { records: UniversalRecord[]; deletions: string[] } {
    // an owner's `manages` and a service's `routes_to` follow their children: write them again too
    for (const id of [...this.touched]) {
      for (const [owner, children] of this.index.children) if (children.has(id)) this.touched.add(owner);
      for (const [service, pods] of this.index.servicePods) if (pods.has(id)) this.touched.add(service);
    }
    const records = this.recordsOf([...this.touched].filter((id) => this.objects.has(id)));
    const deletions = [...this.gone].filter((id) => !this.objects.has(id));
    this.touched.clear();
    this.gone.clear();
    return { records, deletions };
  }

  /** An app's image version and environment, to roll back to. */
  settingsOf(key: string): { version: number; env: Record<string, string> } {
    const app = this.apps.get(key)!;
    return { version: app.version, env: { ...app.env } };
  }

  appNames(): string[] {
    return [...this.apps.keys()];
  }

  nodeNames(): string[] {
    return [...this.objects.values()].filter((o) => o.spec.singular === 'node').map((o) => o.object.metadata!.name!);
  }

  /** A new image: a new replica set takes over and every pod is replaced. */
  rollout(key: string, change: { version?: number; env?: Record<string, string> } = {}): void {
    const app = this.apps.get(key)!;
    app.version = change.version ?? app.version + 1;
    if (change.env) app.env = { ...app.env, ...change.env };
    app.crashing = false;
    const previous = app.hash;
    app.hash = this.random.suffix(10);
    this.replaceReplicaSet(app, previous);
  }

  /** Back to an earlier version and settings (an incident's remedy). */
  rollback(key: string, version: number, env: Record<string, string>): void {
    const app = this.apps.get(key)!;
    app.env = { ...env };
    this.rollout(key, { version });
  }

  scale(key: string, replicas: number): void {
    const app = this.apps.get(key)!;
    const before = app.replicas;
    app.replicas = replicas;
    for (const pod of app.pods.splice(replicas)) this.remove(`pod/${app.namespace}/${pod.name}`);
    for (let i = before; i < replicas; i++) this.putPod(app, i);
    this.putReplicaSet(app, app.hash, replicas);
    this.putDeployment(app);
    this.putSlice(app);
  }

  /** Pods of an app failing to start: restarts climb, readiness goes. */
  crash(key: string, restarts: number): void {
    const app = this.apps.get(key)!;
    app.crashing = true;
    for (let i = 0; i < app.replicas; i++) this.putPod(app, i, restarts);
    this.putReplicaSet(app, app.hash, app.replicas);
    this.putDeployment(app);
    this.putSlice(app);
  }

  /** A new key in an app's config map, as a configuration change ships. */
  configure(key: string, entry: Record<string, string>): void {
    const app = this.apps.get(key)!;
    if (!app.config) return;
    const id = `configmap/${app.namespace}/${app.config}`;
    const current = this.objects.get(id)!.object;
    this.put('configmap', {
      ...current,
      metadata: this.meta(app.config, app.namespace, { app: app.name }),
      data: { ...(current.data as Record<string, string>), ...entry },
    });
  }

  addNode(): string {
    const n = this.nodeCount++;
    const name = `${this.plan.name}-node-${String(n).padStart(2, '0')}`;
    const large = n % 3 === 0;
    this.put('node', {
      metadata: this.meta(name, undefined, {
        'kubernetes.io/hostname': name,
        'topology.kubernetes.io/zone': `${this.plan.name}-${'abc'[n % 3]}`,
        'node.kubernetes.io/instance-type': large ? 'm6i.4xlarge' : 'm6i.2xlarge',
      }),
      spec: {
        providerID: `aws:///${this.plan.name}-${'abc'[n % 3]}/i-0${this.random.suffix(16)}`,
        podCIDR: `10.${this.ip}.${n}.0/24`,
      },
      status: {
        capacity: { cpu: large ? '16' : '8', memory: large ? '64Gi' : '32Gi', pods: '110' },
        allocatable: { cpu: large ? '15800m' : '7800m', memory: large ? '62Gi' : '30Gi', pods: '110' },
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }],
        nodeInfo: {
          kubeletVersion: 'v1.30.4',
          osImage: 'Bottlerocket OS 1.20.3 (aws-k8s-1.30)',
          kernelVersion: '6.1.102',
          containerRuntimeVersion: 'containerd://1.7.20',
          architecture: 'amd64',
        },
        addresses: [
          { type: 'InternalIP', address: `10.${this.ip}.${n}.10` },
          { type: 'Hostname', address: name },
        ],
      },
    });
    return name;
  }

  /** A node drained and gone: its pods come up again on the others. */
  removeNode(name: string): void {
    this.remove(`node/${name}`);
    for (const app of this.apps.values()) {
      app.pods.forEach((pod, i) => {
        if (pod.node !== name) return;
        this.remove(`pod/${app.namespace}/${pod.name}`);
        delete app.pods[i];
        this.putPod(app, i);
      });
      this.putSlice(app);
    }
  }

  /** Kubelet upgrade on one node. */
  upgradeNode(name: string, kubelet: string): void {
    const node = this.objects.get(`node/${name}`)?.object;
    if (!node) return;
    const status = node.status as Record<string, unknown>;
    this.put('node', {
      ...node,
      metadata: this.meta(name, undefined, node.metadata!.labels),
      status: { ...status, nodeInfo: { ...(status.nodeInfo as object), kubeletVersion: kubelet } },
    });
  }

  private addApp(namespace: string, name: string): void {
    const stateful = /db|cache|queue/.test(name);
    const app: App = {
      namespace,
      name,
      image: `registry.example.com/${namespace}/${name}`,
      version: this.random.int(3, 40),
      replicas: this.random.int(2, 6),
      hash: this.random.suffix(10),
      pods: [],
      env: { LOG_LEVEL: 'info', FEATURE_FLAGS: 'default' },
      config: this.random.next() < 0.45 || name === 'checkout' ? `${name}-config` : undefined,
      claim: stateful ? `${name}-data` : undefined,
      crashing: false,
    };
    this.apps.set(`${namespace}/${name}`, app);
    if (app.config) {
      this.put('configmap', {
        metadata: this.meta(app.config, namespace, { app: name }),
        data: { 'app.yaml': 'listen: 8080', 'log.yaml': 'level: info' },
      });
    }
    if (app.claim) {
      this.put('persistentvolumeclaim', {
        metadata: this.meta(app.claim, namespace, { app: name }),
        spec: {
          accessModes: ['ReadWriteOnce'],
          storageClassName: 'gp3',
          resources: { requests: { storage: `${this.random.pick([20, 50, 100])}Gi` } },
        },
        status: { phase: 'Bound', capacity: { storage: '50Gi' } },
      });
    }
    for (let i = 0; i < app.replicas; i++) this.putPod(app, i);
    this.putReplicaSet(app, app.hash, app.replicas);
    this.putDeployment(app);
    this.put('service', {
      metadata: this.meta(name, namespace, { app: name }),
      spec: {
        type: 'ClusterIP',
        clusterIP: `172.20.${this.random.int(0, 255)}.${this.random.int(1, 254)}`,
        selector: { app: name },
        ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
      },
    });
    this.putSlice(app);
    if (this.random.next() < 0.15) {
      this.put('ingress', {
        metadata: this.meta(name, namespace, { app: name }),
        spec: {
          ingressClassName: 'alb',
          rules: [
            {
              host: `${name}.${this.plan.name}.example.com`,
              http: {
                paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name, port: { number: 80 } } } }],
              },
            },
          ],
        },
      });
    }
  }

  private replaceReplicaSet(app: App, previous: string): void {
    for (const pod of app.pods) this.remove(`pod/${app.namespace}/${pod.name}`);
    this.putReplicaSet(app, previous, 0);
    app.pods = [];
    for (let i = 0; i < app.replicas; i++) this.putPod(app, i);
    this.putReplicaSet(app, app.hash, app.replicas);
    this.putDeployment(app);
    this.putSlice(app);
  }

  /** A pod for position `i`: a fresh name on a node picked by spreading the app's pods. */
  private place(app: App, i: number): PodPlace {
    const nodes = this.nodeNames();
    const node = nodes[(i * 7 + app.name.length * 3 + app.namespace.length) % nodes.length]!;
    return {
      name: `${app.name}-${app.hash}-${this.random.suffix(5)}`,
      node,
      ip: `10.${this.ip}.${this.random.int(0, 63)}.${this.random.int(2, 250)}`,
      started: this.clock().toISOString(),
    };
  }

  private containers(app: App) {
    return [
      {
        name: app.name,
        image: `${app.image}:1.${app.version}.0`,
        ports: [{ containerPort: 8080, protocol: 'TCP' }],
        env: Object.entries(app.env).map(([name, value]) => ({ name, value })),
        resources: { requests: { cpu: '250m', memory: '256Mi' }, limits: { memory: '512Mi' } },
      },
    ];
  }

  private volumes(app: App) {
    return [
      ...(app.config ? [{ name: 'config', configMap: { name: app.config } }] : []),
      ...(app.claim ? [{ name: 'data', persistentVolumeClaim: { claimName: app.claim } }] : []),
    ];
  }

  private putDeployment(app: App): void {
    const ready = app.crashing ? 0 : app.replicas;
    this.put('deployment', {
      metadata: { ...this.meta(app.name, app.namespace, { app: app.name }), generation: app.version },
      spec: {
        replicas: app.replicas,
        selector: { matchLabels: { app: app.name } },
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
        template: {
          metadata: { labels: { app: app.name } },
          spec: { containers: this.containers(app), volumes: this.volumes(app) },
        },
      },
      status: {
        observedGeneration: app.version,
        replicas: app.replicas,
        readyReplicas: ready,
        updatedReplicas: app.replicas,
        availableReplicas: ready,
      },
    });
  }

  private putReplicaSet(app: App, hash: string, replicas: number): void {
    const ready = app.crashing && hash === app.hash ? 0 : replicas;
    this.put('replicaset', {
      metadata: {
        ...this.meta(`${app.name}-${hash}`, app.namespace, { app: app.name, 'pod-template-hash': hash }),
        ownerReferences: [{ kind: 'Deployment', name: app.name }],
      },
      spec: {
        replicas,
        selector: { matchLabels: { app: app.name, 'pod-template-hash': hash } },
        template: { spec: { containers: this.containers(app) } },
      },
      status: { replicas, readyReplicas: ready, availableReplicas: ready },
    });
  }

  private putPod(app: App, i: number, restarts = 0): void {
    const pod = (app.pods[i] ??= this.place(app, i));
    const { name, node } = pod;
    this.put('pod', {
      metadata: {
        ...this.meta(name, app.namespace, { app: app.name, 'pod-template-hash': app.hash }),
        ownerReferences: [{ kind: 'ReplicaSet', name: `${app.name}-${app.hash}` }],
      },
      spec: {
        nodeName: node,
        containers: this.containers(app),
        volumes: this.volumes(app),
        serviceAccountName: app.name,
      },
      status: {
        phase: 'Running',
        podIP: pod.ip,
        hostIP: this.hostIp(node),
        qosClass: 'Burstable',
        startTime: pod.started,
        containerStatuses: [
          {
            name: app.name,
            image: `${app.image}:1.${app.version}.0`,
            ready: !app.crashing,
            restartCount: restarts,
            state: app.crashing ? { waiting: { reason: 'CrashLoopBackOff' } } : { running: { startedAt: pod.started } },
          },
        ],
      },
    });
  }

  private putSlice(app: App): void {
    this.put('endpointslice', {
      metadata: this.meta(`${app.name}-http`, app.namespace, { 'kubernetes.io/service-name': app.name }),
      addressType: 'IPv4',
      endpoints: app.pods.map((pod) => ({
        addresses: [pod.ip],
        nodeName: pod.node,
        conditions: { ready: !app.crashing },
        targetRef: { kind: 'Pod', name: pod.name, namespace: app.namespace },
      })),
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    });
  }

  private hostIp(node: string): string {
    const address = (
      this.objects.get(`node/${node}`)?.object.status as { addresses?: { address: string }[] } | undefined
    )?.addresses?.[0]?.address;
    return address ?? `10.${this.ip}.0.10`;
  }

  private meta(name: string, namespace: string | undefined, labels: Record<string, string> | undefined) {
    return {
      name,
      ...(namespace ? { namespace } : {}),
      uid: `${this.random.suffix(8)}-${this.random.suffix(4)}-4${this.random.suffix(3)}-8${this.random.suffix(3)}-${this.random.suffix(12)}`,
      resourceVersion: String(this.version++),
      creationTimestamp: this.clock().toISOString(),
      labels: labels ?? {},
    };
  }

  private put(kind: Kind, object: Obj): void {
    const spec = specOf(kind);
    const id = externalId(spec, object);
    const existing = this.objects.get(id)?.object.metadata;
    // an object written again keeps its identity and creation time
    if (existing)
      object.metadata = { ...object.metadata, uid: existing.uid, creationTimestamp: existing.creationTimestamp };
    this.objects.set(id, { spec, object });
    this.index.register(spec, id, object);
    this.touched.add(id);
    this.gone.delete(id);
  }

  private remove(id: string): void {
    if (!this.objects.delete(id)) return;
    // its owner's `manages` and its service's `routes_to` lose it: write those again
    for (const [owner, children] of this.index.children) if (children.has(id)) this.touched.add(owner);
    for (const [service, pods] of this.index.servicePods) if (pods.has(id)) this.touched.add(service);
    this.index.forget(id);
    this.touched.delete(id);
    this.gone.add(id);
  }

  private recordsOf(ids: string[]): UniversalRecord[] {
    const usage: Usage = { nodes: new Map(), pods: new Map() };
    const order = new Map(SPECS.map((spec, i) => [spec.singular, i]));
    return ids
      .map((id) => this.objects.get(id)!)
      .sort((a, b) => order.get(a.spec.singular)! - order.get(b.spec.singular)!)
      .map(({ spec, object }) => recordOf(spec, object, this.index, usage));
  }
}
