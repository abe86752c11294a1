import { ClusterIndex } from '../types/kubernetes/cluster-index.js';
import { externalId, SPECS, type Kind, type KindSpec, type Obj } from '../types/kubernetes/kinds.js';
import { recordOf } from '../types/kubernetes/records.js';
import type { Usage } from '../types/kubernetes/type-data.js';
import type { UniversalRecord } from '../../inventory/write-path/records.js';
import {
  claimObject,
  configMapObject,
  deploymentObject,
  ingressObject,
  machineOf,
  nodeObject,
  podObject,
  replicaSetObject,
  serviceObject,
  sliceObject,
  type App,
  type Meta,
  type PodPlace,
} from './cluster-objects.js';
import type { Random } from './random.js';

const SPEC = new Map(SPECS.map((spec) => [spec.singular, spec]));
const specOf = (kind: Kind): KindSpec => SPEC.get(kind)!;

/** The shape of a generated cluster: its teams (namespaces) and how many services each runs. */
export interface ClusterPlan {
  name: string;
  nodes: number;
  /** The second octet of its addresses (10.<network>.…): two clusters' nodes never share an address. */
  network: number;
  teams: readonly { namespace: string; apps: readonly string[] }[];
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
  /** Node name → which machine runs under it (1: the first), for a node whose machine was replaced. */
  private readonly machines = new Map<string, number>();
  private version = 1000;
  private readonly ip: number;

  constructor(
    readonly plan: ClusterPlan,
    private readonly random: Random,
    private readonly clock: () => Date,
  ) {
    this.ip = plan.network;
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

  /** A node's internal address, as the servers running on it listen on it. */
  nodeAddress(name: string): string {
    return this.hostIp(name);
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
    const node = nodeObject(this.plan.name, this.nodeCount++, this.ip, this.meta, this.random);
    this.put('node', node);
    return node.metadata!.name!;
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
    this.patchNodeInfo(name, { kubeletVersion: kubelet });
  }

  /** A new operating system release on one node, as its kubelet reports it. */
  upgradeOs(name: string, osImage: string, kernelVersion: string): void {
    this.patchNodeInfo(name, { osImage, kernelVersion });
  }

  /**
   * The machine under a node replaced by a new one that registers under the same name and address
   * (a new Node object): a new machine id, product UUID and instance.
   */
  replaceMachine(name: string): void {
    const node = this.objects.get(`node/${name}`)?.object;
    if (!node) return;
    const generation = (this.machines.get(name) ?? 1) + 1;
    this.machines.set(name, generation);
    const { machineID, systemUUID, instance } = machineOf(`${this.plan.name}/${name}/${generation}`);
    const spec = node.spec as { providerID: string };
    const status = node.status as Record<string, unknown>;
    // gone and registered again: a new uid and creation time
    this.remove(`node/${name}`);
    this.put('node', {
      metadata: this.meta(name, undefined, node.metadata!.labels),
      spec: { ...spec, providerID: spec.providerID.replace(/i-0\w+$/, instance) },
      status: { ...status, nodeInfo: { ...(status.nodeInfo as object), machineID, systemUUID } },
    });
  }

  /** The product UUID of the machine under a node now, as node_exporter's node_dmi_info reports it. */
  productUuidOf(name: string): string {
    const status = this.objects.get(`node/${name}`)!.object.status as { nodeInfo: { systemUUID: string } };
    return status.nodeInfo.systemUUID.toLowerCase();
  }

  private patchNodeInfo(name: string, info: Record<string, string>): void {
    const node = this.objects.get(`node/${name}`)?.object;
    if (!node) return;
    const status = node.status as Record<string, unknown>;
    this.put('node', {
      ...node,
      metadata: this.meta(name, undefined, node.metadata!.labels),
      status: { ...status, nodeInfo: { ...(status.nodeInfo as object), ...info } },
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
    if (app.config) this.put('configmap', configMapObject(app, this.meta));
    if (app.claim) this.put('persistentvolumeclaim', claimObject(app, this.meta, this.random));
    for (let i = 0; i < app.replicas; i++) this.putPod(app, i);
    this.putReplicaSet(app, app.hash, app.replicas);
    this.putDeployment(app);
    this.put('service', serviceObject(app, this.meta, this.random));
    this.putSlice(app);
    if (this.random.next() < 0.15) this.put('ingress', ingressObject(app, this.plan.name, this.meta));
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

  private putDeployment(app: App): void {
    this.put('deployment', deploymentObject(app, this.meta));
  }

  private putReplicaSet(app: App, hash: string, replicas: number): void {
    this.put('replicaset', replicaSetObject(app, hash, replicas, this.meta));
  }

  private putPod(app: App, i: number, restarts = 0): void {
    const pod = (app.pods[i] ??= this.place(app, i));
    this.put('pod', podObject(app, pod, this.hostIp(pod.node), restarts, this.meta));
  }

  private putSlice(app: App): void {
    this.put('endpointslice', sliceObject(app, this.meta));
  }

  private hostIp(node: string): string {
    const address = (
      this.objects.get(`node/${node}`)?.object.status as { addresses?: { address: string }[] } | undefined
    )?.addresses?.[0]?.address;
    return address ?? `10.${this.ip}.0.10`;
  }

  /** An arrow bound to the cluster, handed to the object builders: each call draws a uid and takes the next resource version. */
  private readonly meta: Meta = (name, namespace, labels) => ({
    name,
    ...(namespace ? { namespace } : {}),
    uid: `${this.random.suffix(8)}-${this.random.suffix(4)}-4${this.random.suffix(3)}-8${this.random.suffix(3)}-${this.random.suffix(12)}`,
    resourceVersion: String(this.version++),
    creationTimestamp: this.clock().toISOString(),
    labels: labels ?? {},
  });

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
