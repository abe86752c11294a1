import { get, list, str, type Json, type Kind, type Obj } from './kinds.js';

/** Usage from `metrics.k8s.io`, when the cluster serves it: per node name and per `namespace/pod`. */
export interface Usage {
  nodes: Map<string, Json>;
  pods: Map<string, Json>;
}

/** An object as an extractor reads it: its `status` and `spec` present (empty when absent). */
interface Fields {
  object: Obj;
  status: Json;
  spec: Json;
}

/**
 * What `type_data` holds for a kind: the keys the OpenAPI document names (`metrics.<name>` for a
 * key of `metrics`), and how they are read from the stored object.
 */
interface TypeDataExtractor {
  keys: readonly string[];
  extract(fields: Fields, usage: Usage): Json;
}

const images = (object: unknown) => list(get(object, 'spec', 'template', 'spec', 'containers')).map((c) => c.image);

/** The services an ingress sends traffic to: its default backend and every rule's paths. */
export function backends(object: Obj): Set<string> {
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

const REPLICA_KEYS = [
  'desired_replicas',
  'ready_replicas',
  'updated_replicas',
  'available_replicas',
  'images',
  'strategy',
] as const;

/** Deployments, stateful sets and replica sets report their replicas alike. */
const replicated: TypeDataExtractor = {
  keys: REPLICA_KEYS,
  extract: ({ object, status, spec }) => ({
    desired_replicas: spec.replicas ?? null,
    ready_replicas: status.readyReplicas ?? 0,
    updated_replicas: status.updatedReplicas ?? 0,
    available_replicas: status.availableReplicas ?? 0,
    images: images(object),
    strategy: get(spec, 'strategy', 'type') ?? get(spec, 'updateStrategy', 'type') ?? null,
  }),
};

/** One extractor per kind, in the order the OpenAPI document lists the kinds' `type_data`. */
export const TYPE_DATA: Record<Kind, TypeDataExtractor> = {
  pod: {
    keys: [
      'phase',
      'node',
      'pod_ip',
      'pod_ips',
      'host_ip',
      'qos_class',
      'containers',
      'metrics.cpu_cores',
      'metrics.memory_bytes',
    ],
    extract: ({ object, status, spec }, usage) => {
      const statuses = new Map(list(status.containerStatuses).map((c) => [c.name, c]));
      return {
        phase: status.phase ?? null,
        node: spec.nodeName ?? null,
        pod_ip: status.podIP ?? null,
        pod_ips: list(status.podIPs).map((p) => p.ip),
        host_ip: status.hostIP ?? null,
        qos_class: status.qosClass ?? null,
        containers: list(spec.containers).map((c) => ({
          name: c.name,
          image: c.image,
          ready: get(statuses.get(c.name), 'ready') ?? false,
          restart_count: get(statuses.get(c.name), 'restartCount') ?? 0,
        })),
        metrics: usage.pods.get(`${object.metadata?.namespace}/${object.metadata?.name}`) ?? {},
      };
    },
  },
  node: {
    keys: [
      'capacity',
      'allocatable',
      'kubelet_version',
      'os_image',
      'kernel_version',
      'container_runtime',
      'architecture',
      'unschedulable',
      'conditions',
      'metrics.cpu_cores',
      'metrics.memory_bytes',
    ],
    extract: ({ object, status, spec }, usage) => {
      const info = (status.nodeInfo ?? {}) as Json;
      return {
        capacity: status.capacity ?? {},
        allocatable: status.allocatable ?? {},
        kubelet_version: info.kubeletVersion ?? null,
        os_image: info.osImage ?? null,
        kernel_version: info.kernelVersion ?? null,
        container_runtime: info.containerRuntimeVersion ?? null,
        architecture: info.architecture ?? null,
        unschedulable: spec.unschedulable === true,
        conditions: list(status.conditions).map((c) => ({ type: c.type, status: c.status })),
        metrics: usage.nodes.get(object.metadata?.name ?? '') ?? {},
      };
    },
  },
  deployment: replicated,
  statefulset: replicated,
  replicaset: replicated,
  daemonset: {
    keys: REPLICA_KEYS,
    extract: ({ object, status, spec }) => ({
      desired_replicas: status.desiredNumberScheduled ?? 0,
      ready_replicas: status.numberReady ?? 0,
      updated_replicas: status.updatedNumberScheduled ?? 0,
      available_replicas: status.numberAvailable ?? 0,
      images: images(object),
      strategy: get(spec, 'updateStrategy', 'type') ?? null,
    }),
  },
  service: {
    keys: ['type', 'cluster_ip', 'ports', 'selector'],
    extract: ({ spec }) => ({
      type: spec.type ?? 'ClusterIP',
      cluster_ip: spec.clusterIP ?? null,
      ports: spec.ports ?? [],
      selector: spec.selector ?? {},
    }),
  },
  namespace: {
    keys: ['phase', 'labels'],
    extract: ({ object, status }) => ({ phase: status.phase ?? null, labels: object.metadata?.labels ?? {} }),
  },
  configmap: {
    keys: ['keys', 'binary_keys'],
    // the stored object holds the key names only (see rawOf)
    extract: ({ object }) => ({
      keys: (object.data_keys as string[] | undefined) ?? [],
      binary_keys: (object.binary_data_keys as string[] | undefined) ?? [],
    }),
  },
  persistentvolume: {
    keys: ['capacity', 'access_modes', 'storage_class', 'reclaim_policy', 'phase', 'claim'],
    extract: ({ status, spec }) => ({
      capacity: get(spec, 'capacity', 'storage') ?? null,
      access_modes: spec.accessModes ?? [],
      storage_class: spec.storageClassName ?? null,
      reclaim_policy: spec.persistentVolumeReclaimPolicy ?? null,
      phase: status.phase ?? null,
      claim: spec.claimRef ? `${str(get(spec, 'claimRef', 'namespace'))}/${str(get(spec, 'claimRef', 'name'))}` : null,
    }),
  },
  persistentvolumeclaim: {
    keys: ['phase', 'volume', 'storage_class', 'requested', 'access_modes'],
    extract: ({ status, spec }) => ({
      phase: status.phase ?? null,
      volume: spec.volumeName ?? null,
      storage_class: spec.storageClassName ?? null,
      requested: get(spec, 'resources', 'requests', 'storage') ?? null,
      access_modes: spec.accessModes ?? [],
    }),
  },
  job: {
    keys: ['completions', 'parallelism', 'active', 'succeeded', 'failed'],
    extract: ({ status, spec }) => ({
      completions: spec.completions ?? null,
      parallelism: spec.parallelism ?? null,
      active: status.active ?? 0,
      succeeded: status.succeeded ?? 0,
      failed: status.failed ?? 0,
    }),
  },
  cronjob: {
    keys: ['schedule', 'suspend', 'last_schedule_time'],
    extract: ({ status, spec }) => ({
      schedule: spec.schedule ?? null,
      suspend: spec.suspend === true,
      last_schedule_time: status.lastScheduleTime ?? null,
    }),
  },
  endpointslice: {
    keys: ['service', 'address_type', 'endpoints', 'ports'],
    extract: ({ object }) => ({
      service: object.metadata?.labels?.['kubernetes.io/service-name'] ?? null,
      address_type: object.addressType ?? null,
      endpoints: list(object.endpoints).length,
      ports: object.ports ?? [],
    }),
  },
  ingress: {
    keys: ['ingress_class', 'hosts', 'services'],
    extract: ({ object, spec }) => ({
      ingress_class: spec.ingressClassName ?? null,
      hosts: list(spec.rules)
        .map((r) => r.host)
        .filter(Boolean),
      services: [...backends(object)],
    }),
  },
};

/** The `type_data` of an object as stored (see rawOf). */
export function typeDataOf(kind: Kind, object: Obj, usage: Usage): Json {
  const extractor = TYPE_DATA[kind] as TypeDataExtractor | undefined;
  return extractor
    ? extractor.extract({ object, status: (object.status ?? {}) as Json, spec: (object.spec ?? {}) as Json }, usage)
    : {};
}

/** The documented `type_data` keys per `ci_type`, for the OpenAPI document and the tests that hold the data to it. */
export const CI_TYPES: Readonly<Record<string, readonly string[]>> = Object.fromEntries(
  Object.entries(TYPE_DATA).map(([kind, extractor]) => [`k8s.${kind}`, extractor.keys]),
);
