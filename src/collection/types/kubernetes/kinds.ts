/** The kinds of object the `kubernetes` type lists, and the helpers reading those objects. */

/** A kind, as it appears in external ids (`pod/default/web-1`) and in `ci_type` (`k8s.pod`). */
export type Kind =
  | 'namespace'
  | 'node'
  | 'persistentvolume'
  | 'persistentvolumeclaim'
  | 'configmap'
  | 'pod'
  | 'endpointslice'
  | 'service'
  | 'ingress'
  | 'replicaset'
  | 'job'
  | 'statefulset'
  | 'daemonset'
  | 'deployment'
  | 'cronjob';

export interface KindSpec {
  /** What `config.enabled_collectors` names. */
  name: string;
  path: string;
  kind: string;
  singular: Kind;
  namespaced: boolean;
}

// listing order: children before their owners and slices before services, so that `manages` and
// `routes_to` are known when the owner or service is written
export const SPECS: KindSpec[] = [
  { name: 'namespaces', path: '/api/v1/namespaces', kind: 'Namespace', singular: 'namespace', namespaced: false },
  { name: 'nodes', path: '/api/v1/nodes', kind: 'Node', singular: 'node', namespaced: false },
  {
    name: 'persistentvolumes',
    path: '/api/v1/persistentvolumes',
    kind: 'PersistentVolume',
    singular: 'persistentvolume',
    namespaced: false,
  },
  {
    name: 'persistentvolumeclaims',
    path: '/api/v1/persistentvolumeclaims',
    kind: 'PersistentVolumeClaim',
    singular: 'persistentvolumeclaim',
    namespaced: true,
  },
  { name: 'configmaps', path: '/api/v1/configmaps', kind: 'ConfigMap', singular: 'configmap', namespaced: true },
  { name: 'pods', path: '/api/v1/pods', kind: 'Pod', singular: 'pod', namespaced: true },
  {
    name: 'endpointslices',
    path: '/apis/discovery.k8s.io/v1/endpointslices',
    kind: 'EndpointSlice',
    singular: 'endpointslice',
    namespaced: true,
  },
  { name: 'services', path: '/api/v1/services', kind: 'Service', singular: 'service', namespaced: true },
  {
    name: 'ingresses',
    path: '/apis/networking.k8s.io/v1/ingresses',
    kind: 'Ingress',
    singular: 'ingress',
    namespaced: true,
  },
  {
    name: 'replicasets',
    path: '/apis/apps/v1/replicasets',
    kind: 'ReplicaSet',
    singular: 'replicaset',
    namespaced: true,
  },
  { name: 'jobs', path: '/apis/batch/v1/jobs', kind: 'Job', singular: 'job', namespaced: true },
  {
    name: 'statefulsets',
    path: '/apis/apps/v1/statefulsets',
    kind: 'StatefulSet',
    singular: 'statefulset',
    namespaced: true,
  },
  { name: 'daemonsets', path: '/apis/apps/v1/daemonsets', kind: 'DaemonSet', singular: 'daemonset', namespaced: true },
  {
    name: 'deployments',
    path: '/apis/apps/v1/deployments',
    kind: 'Deployment',
    singular: 'deployment',
    namespaced: true,
  },
  { name: 'cronjobs', path: '/apis/batch/v1/cronjobs', kind: 'CronJob', singular: 'cronjob', namespaced: true },
];

export type Obj = {
  metadata?: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    ownerReferences?: { kind: string; name: string }[];
    labels?: Record<string, string>;
    [key: string]: unknown;
  };
  [key: string]: unknown;
};
export type Json = Record<string, unknown>;

export const get = (value: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((v, k) => (v && typeof v === 'object' ? (v as Json)[k] : undefined), value);
export const list = (value: unknown): Json[] => (Array.isArray(value) ? (value as Json[]) : []);
export const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);

export const externalId = (spec: KindSpec, object: Obj) =>
  spec.namespaced
    ? `${spec.singular}/${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`
    : `${spec.singular}/${object.metadata?.name ?? ''}`;

/** The kinds `config.enabled_collectors` asks for (empty or absent: all), in listing order. */
export const enabledSpecs = (config: Json) => {
  const wanted = config.enabled_collectors;
  return Array.isArray(wanted) && wanted.length > 0 ? SPECS.filter((s) => wanted.includes(s.name)) : SPECS;
};

/** A Kubernetes quantity as a number (cores for CPU, bytes for memory). */
export function quantity(text: unknown): number | null {
  if (typeof text !== 'string') return null;
  const match = /^([0-9.]+)([a-zA-Z]*)$/.exec(text.trim());
  if (!match) return null;
  const factors: Record<string, number> = {
    '': 1,
    n: 1e-9,
    u: 1e-6,
    m: 1e-3,
    k: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
    P: 1e15,
    Ki: 2 ** 10,
    Mi: 2 ** 20,
    Gi: 2 ** 30,
    Ti: 2 ** 40,
    Pi: 2 ** 50,
  };
  const factor = factors[match[2]!];
  return factor === undefined ? null : Number(match[1]) * factor;
}
