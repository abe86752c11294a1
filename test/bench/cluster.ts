/**
 * A generated Kubernetes cluster in the universal format, shaped like what the Kubernetes
 * collector produces: namespaces, nodes, deployments with their replica sets, pods, services,
 * config maps, ingresses and volume claims, with the relationships between them and metrics on
 * pods and nodes. Deterministic: the same arguments give the same objects in every process.
 *
 * `collection` moves what moves on every real collection (metrics, node heartbeats); objects whose
 * index is a multiple of `changeEvery` get a new image and resource version in `generation`.
 */
import type { UniversalRecord } from '../../src/inventory/write-path/records.js';

export interface ClusterShape {
  pods: number;
  nodes: number;
  namespaces: number;
  deployments: number;
}

/** 100 000 pods and the objects around them: 143 834 objects in all. */
export const LARGE_CLUSTER: ClusterShape = { pods: 100_000, nodes: 1_000, namespaces: 400, deployments: 8_000 };

export interface Collection {
  /** Moves metrics and heartbeats only. */
  collection: number;
  /** Bumped for the objects picked by `changeEvery`. */
  generation: number;
  changeEvery?: number;
}

const uid = (kind: number, i: number) =>
  `${kind.toString(16).padStart(8, '0')}-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;
const stamp = '2026-10-01T08:00:00Z';

function changed(i: number, at: Collection): number {
  return at.changeEvery !== undefined && i % at.changeEvery === 0 ? at.generation : 0;
}

function metadata(
  kind: number,
  i: number,
  name: string,
  namespace: string | null,
  version: number,
  labels: Record<string, string>,
  annotated = true,
) {
  return {
    name,
    ...(namespace ? { namespace } : {}),
    uid: uid(kind, i),
    resourceVersion: String(1_000_000 + i * 7 + version),
    creationTimestamp: stamp,
    labels,
    ...(annotated
      ? {
          annotations: {
            'meta.helm.sh/release-name': labels.app ?? name,
            'meta.helm.sh/release-namespace': namespace ?? 'default',
          },
        }
      : {}),
  };
}

export function* cluster(shape: ClusterShape, at: Collection): Generator<UniversalRecord> {
  const { pods, nodes, namespaces, deployments } = shape;
  const nsOf = (d: number) => `team-${d % namespaces}`;
  const app = (d: number) => `svc-${d}`;
  const heartbeat = new Date(Date.parse(stamp) + at.collection * 60_000).toISOString();

  for (let n = 0; n < namespaces; n++) {
    const name = `team-${n}`;
    yield {
      external_id: `namespace/${name}`,
      ci_type: 'k8s.namespace',
      name,
      raw_data: {
        metadata: metadata(1, n, name, null, 0, { 'kubernetes.io/metadata.name': name }),
        status: { phase: 'Active' },
      },
      type_data: { phase: 'Active' },
    };
  }

  for (let n = 0; n < nodes; n++) {
    const name = `node-${n}`;
    const version = changed(n, at);
    yield {
      external_id: `node/${name}`,
      ci_type: 'k8s.node',
      name,
      raw_data: {
        metadata: metadata(2, n, name, null, version, {
          'kubernetes.io/hostname': name,
          'topology.kubernetes.io/zone': `zone-${n % 3}`,
          'node.kubernetes.io/instance-type': n % 4 === 0 ? 'm6i.4xlarge' : 'm6i.2xlarge',
        }),
        spec: {
          podCIDR: `10.${n >> 8}.${n & 255}.0/24`,
          providerID: `aws:///zone-${n % 3}/i-${n.toString(16).padStart(17, '0')}`,
        },
        status: {
          capacity: { cpu: n % 4 === 0 ? '16' : '8', memory: n % 4 === 0 ? '64Gi' : '32Gi', pods: '110' },
          allocatable: { cpu: n % 4 === 0 ? '15800m' : '7800m', memory: n % 4 === 0 ? '62Gi' : '30Gi', pods: '110' },
          conditions: ['MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready'].map((type) => ({
            type,
            status: type === 'Ready' ? 'True' : 'False',
            lastHeartbeatTime: heartbeat,
            lastTransitionTime: stamp,
          })),
          nodeInfo: {
            kubeletVersion: `v1.30.${version % 10}`,
            containerRuntimeVersion: 'containerd://1.7.13',
            osImage: 'Bottlerocket OS 1.19.2',
          },
          addresses: [{ type: 'InternalIP', address: `10.0.${n >> 8}.${n & 255}` }],
        },
      },
      type_data: {
        kubelet: `v1.30.${version % 10}`,
        zone: `zone-${n % 3}`,
        metrics: {
          cpu_millicores: 1000 + ((n * 37 + at.collection * 101) % 6000),
          memory_bytes: 8e9 + ((n * 53 + at.collection * 97) % 1000) * 1e7,
        },
      },
    };
  }

  for (let d = 0; d < deployments; d++) {
    const namespace = nsOf(d);
    const version = changed(d, at);
    yield {
      external_id: `deployment/${namespace}/${app(d)}`,
      ci_type: 'k8s.deployment',
      name: app(d),
      namespace,
      raw_data: {
        metadata: metadata(3, d, app(d), namespace, version, { app: app(d) }),
        spec: {
          replicas: Math.ceil(pods / deployments),
          selector: { matchLabels: { app: app(d) } },
          strategy: { type: 'RollingUpdate' },
        },
        status: {
          replicas: Math.ceil(pods / deployments),
          readyReplicas: Math.ceil(pods / deployments),
          observedGeneration: 1 + version,
        },
      },
      type_data: { replicas: Math.ceil(pods / deployments), image: `registry.example/${app(d)}:1.${version}.0` },
    };
    for (const [generation, replicas] of [
      [0, Math.ceil(pods / deployments)],
      [1, 0],
    ] as const) {
      const name = `${app(d)}-${(d * 2 + generation).toString(36).padStart(9, 'x')}`;
      yield {
        external_id: `replicaset/${namespace}/${name}`,
        ci_type: 'k8s.replicaset',
        name,
        namespace,
        raw_data: {
          metadata: {
            ...metadata(4, d * 2 + generation, name, namespace, 0, { app: app(d) }),
            ownerReferences: [{ kind: 'Deployment', name: app(d) }],
          },
          spec: { replicas, selector: { matchLabels: { app: app(d), 'pod-template-hash': name.slice(-9) } } },
          status: { replicas, readyReplicas: replicas },
        },
        type_data: { replicas },
        relationships: [{ type: 'managed_by', target_external_id: `deployment/${namespace}/${app(d)}` }],
      };
    }
  }

  for (let p = 0; p < pods; p++) {
    const d = p % deployments;
    const namespace = nsOf(d);
    const version = changed(p, at);
    const replicaset = `${app(d)}-${(d * 2).toString(36).padStart(9, 'x')}`;
    const name = `${replicaset}-${p.toString(36).padStart(5, '0')}`;
    const node = `node-${(p * 7919) % nodes}`;
    yield {
      external_id: `pod/${namespace}/${name}`,
      ci_type: 'k8s.pod',
      name,
      namespace,
      raw_data: {
        metadata: {
          ...metadata(
            5,
            p,
            name,
            namespace,
            version,
            { app: app(d), 'pod-template-hash': replicaset.slice(-9) },
            false,
          ),
          ownerReferences: [{ kind: 'ReplicaSet', name: replicaset, controller: true }],
        },
        spec: {
          nodeName: node,
          containers: [
            {
              name: 'app',
              image: `registry.example/${app(d)}:1.${version}.0`,
              ports: [{ containerPort: 8080, protocol: 'TCP' }],
              resources: { requests: { cpu: '100m', memory: '128Mi' } },
            },
            { name: 'proxy', image: 'registry.example/mesh-proxy:2.1.4' },
          ],
        },
        status: {
          phase: 'Running',
          hostIP: `10.0.${((p * 7919) % nodes) >> 8}.${((p * 7919) % nodes) & 255}`,
          podIP: `10.${64 + (p >> 16)}.${(p >> 8) & 255}.${p & 255}`,
          conditions: ['Ready', 'PodScheduled'].map((type) => ({
            type,
            status: 'True',
            lastProbeTime: null,
            lastTransitionTime: stamp,
          })),
          containerStatuses: [
            { name: 'app', ready: true, restartCount: 0 },
            { name: 'proxy', ready: true, restartCount: 0 },
          ],
        },
      },
      type_data: {
        phase: 'Running',
        node,
        restarts: 0,
        metrics: {
          cpu_millicores: (p * 13 + at.collection * 7) % 500,
          memory_bytes: 6e7 + ((p * 31 + at.collection * 11) % 4000) * 1e5,
        },
      },
      relationships: [
        { type: 'runs_on', target_external_id: `node/${node}` },
        { type: 'managed_by', target_external_id: `replicaset/${namespace}/${replicaset}` },
      ],
    };
  }

  for (let d = 0; d < deployments; d++) {
    const namespace = nsOf(d);
    yield {
      external_id: `service/${namespace}/${app(d)}`,
      ci_type: 'k8s.service',
      name: app(d),
      namespace,
      raw_data: {
        metadata: metadata(6, d, app(d), namespace, 0, { app: app(d) }),
        spec: {
          type: 'ClusterIP',
          clusterIP: `172.20.${d >> 8}.${d & 255}`,
          selector: { app: app(d) },
          ports: [{ port: 80, targetPort: 8080, protocol: 'TCP' }],
        },
      },
      type_data: { type: 'ClusterIP', cluster_ip: `172.20.${d >> 8}.${d & 255}` },
      relationships: [{ type: 'routes_to', target_external_id: `deployment/${namespace}/${app(d)}` }],
    };
    yield {
      external_id: `configmap/${namespace}/${app(d)}-config`,
      ci_type: 'k8s.configmap',
      name: `${app(d)}-config`,
      namespace,
      raw_data: {
        metadata: metadata(7, d, `${app(d)}-config`, namespace, 0, { app: app(d) }),
        data: { 'app.yaml': `port: 8080\nname: ${app(d)}\n` },
      },
      type_data: { keys: 1 },
    };
  }

  const rest = 143_834 - 100_000 - 1_000 - 400 - 8_000 * 5;
  const extra = Math.round((rest * pods) / 100_000);
  for (let e = 0; e < extra; e++) {
    const d = e % deployments;
    const namespace = nsOf(d);
    const ingress = e < extra / 2;
    const name = ingress ? `${app(d)}-ingress-${e}` : `${app(d)}-data-${e}`;
    yield ingress
      ? {
          external_id: `ingress/${namespace}/${name}`,
          ci_type: 'k8s.ingress',
          name,
          namespace,
          raw_data: {
            metadata: metadata(8, e, name, namespace, 0, { app: app(d) }),
            spec: {
              rules: [
                {
                  host: `${app(d)}.example.com`,
                  http: { paths: [{ path: '/', backend: { service: { name: app(d), port: { number: 80 } } } }] },
                },
              ],
            },
          },
          type_data: { hosts: [`${app(d)}.example.com`] },
          relationships: [{ type: 'routes_to', target_external_id: `service/${namespace}/${app(d)}` }],
        }
      : {
          external_id: `persistentvolumeclaim/${namespace}/${name}`,
          ci_type: 'k8s.persistentvolumeclaim',
          name,
          namespace,
          raw_data: {
            metadata: metadata(9, e, name, namespace, 0, { app: app(d) }),
            spec: {
              accessModes: ['ReadWriteOnce'],
              resources: { requests: { storage: '20Gi' } },
              storageClassName: 'gp3',
            },
            status: { phase: 'Bound' },
          },
          type_data: { storage: '20Gi', phase: 'Bound' },
        };
  }
}
