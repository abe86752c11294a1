import { createHash } from 'node:crypto';
import type { Obj } from '../types/kubernetes/kinds.js';
import type { Random } from './random.js';

/**
 * The API objects of a generated cluster, kind by kind, as a Kubernetes API would return them. Each
 * takes its metadata from the cluster (`meta`: a fresh uid and resource version); the order in which
 * they draw from the cluster's Random is part of the demo, which is the same on every run.
 */

export interface PodPlace {
  name: string;
  node: string;
  ip: string;
  started: string;
}

export interface App {
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

/** An object's metadata as its cluster stamps it. */
export type Meta = (
  name: string,
  namespace: string | undefined,
  labels: Record<string, string> | undefined,
) => NonNullable<Obj['metadata']>;

/**
 * A machine's identities as its kubelet reports them: /etc/machine-id (`machineID`) and the SMBIOS
 * product UUID (`systemUUID`, which EC2 starts with `EC2`), and its EC2 instance id; derived from
 * the machine's name (a node's, and which machine under that name) so that they are the same on
 * every run without drawing from the cluster's Random.
 */
export function machineOf(machine: string): { machineID: string; systemUUID: string; instance: string } {
  const hex = createHash('sha256').update(`cinv-demo/${machine}`).digest('hex');
  const uuid = `ec2${hex.slice(35, 40)}-${hex.slice(40, 44)}-${hex.slice(44, 48)}-${hex.slice(48, 52)}-${hex.slice(52, 64)}`;
  return { machineID: hex.slice(0, 32), systemUUID: uuid.toUpperCase(), instance: `i-0${hex.slice(32, 48)}` };
}

/** The `n`th node of a cluster, every third one large; `ip` is the cluster's second address octet. */
export function nodeObject(cluster: string, n: number, ip: number, meta: Meta, random: Random): Obj {
  const name = `${cluster}-node-${String(n).padStart(2, '0')}`;
  const large = n % 3 === 0;
  const { machineID, systemUUID } = machineOf(`${cluster}/${name}`);
  return {
    metadata: meta(name, undefined, {
      'kubernetes.io/hostname': name,
      'topology.kubernetes.io/zone': `${cluster}-${'abc'[n % 3]}`,
      'node.kubernetes.io/instance-type': large ? 'm6i.4xlarge' : 'm6i.2xlarge',
    }),
    spec: {
      providerID: `aws:///${cluster}-${'abc'[n % 3]}/i-0${random.suffix(16)}`,
      podCIDR: `10.${ip}.${n}.0/24`,
    },
    status: {
      capacity: { cpu: large ? '16' : '8', memory: large ? '64Gi' : '32Gi', pods: '110' },
      allocatable: { cpu: large ? '15800m' : '7800m', memory: large ? '62Gi' : '30Gi', pods: '110' },
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady' }],
      nodeInfo: {
        machineID,
        systemUUID,
        kubeletVersion: 'v1.30.4',
        osImage: 'Bottlerocket OS 1.20.3 (aws-k8s-1.30)',
        kernelVersion: '6.1.102',
        containerRuntimeVersion: 'containerd://1.7.20',
        architecture: 'amd64',
      },
      addresses: [
        { type: 'InternalIP', address: `10.${ip}.${n}.10` },
        { type: 'Hostname', address: name },
      ],
    },
  };
}

export function configMapObject(app: App, meta: Meta): Obj {
  return {
    metadata: meta(app.config!, app.namespace, { app: app.name }),
    data: { 'app.yaml': 'listen: 8080', 'log.yaml': 'level: info' },
  };
}

export function claimObject(app: App, meta: Meta, random: Random): Obj {
  return {
    metadata: meta(app.claim!, app.namespace, { app: app.name }),
    spec: {
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'gp3',
      resources: { requests: { storage: `${random.pick([20, 50, 100])}Gi` } },
    },
    status: { phase: 'Bound', capacity: { storage: '50Gi' } },
  };
}

export function serviceObject(app: App, meta: Meta, random: Random): Obj {
  return {
    metadata: meta(app.name, app.namespace, { app: app.name }),
    spec: {
      type: 'ClusterIP',
      clusterIP: `172.20.${random.int(0, 255)}.${random.int(1, 254)}`,
      selector: { app: app.name },
      ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }],
    },
  };
}

export function ingressObject(app: App, cluster: string, meta: Meta): Obj {
  const { name } = app;
  return {
    metadata: meta(name, app.namespace, { app: name }),
    spec: {
      ingressClassName: 'alb',
      rules: [
        {
          host: `${name}.${cluster}.example.com`,
          http: {
            paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name, port: { number: 80 } } } }],
          },
        },
      ],
    },
  };
}

function containers(app: App) {
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

function volumes(app: App) {
  return [
    ...(app.config ? [{ name: 'config', configMap: { name: app.config } }] : []),
    ...(app.claim ? [{ name: 'data', persistentVolumeClaim: { claimName: app.claim } }] : []),
  ];
}

export function deploymentObject(app: App, meta: Meta): Obj {
  const ready = app.crashing ? 0 : app.replicas;
  return {
    metadata: { ...meta(app.name, app.namespace, { app: app.name }), generation: app.version },
    spec: {
      replicas: app.replicas,
      selector: { matchLabels: { app: app.name } },
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
      template: {
        metadata: { labels: { app: app.name } },
        spec: { containers: containers(app), volumes: volumes(app) },
      },
    },
    status: {
      observedGeneration: app.version,
      replicas: app.replicas,
      readyReplicas: ready,
      updatedReplicas: app.replicas,
      availableReplicas: ready,
    },
  };
}

/** The replica set of the app's pod template `hash`: the serving one, or one scaled to 0 by a rollout. */
export function replicaSetObject(app: App, hash: string, replicas: number, meta: Meta): Obj {
  const ready = app.crashing && hash === app.hash ? 0 : replicas;
  return {
    metadata: {
      ...meta(`${app.name}-${hash}`, app.namespace, { app: app.name, 'pod-template-hash': hash }),
      ownerReferences: [{ kind: 'Deployment', name: app.name }],
    },
    spec: {
      replicas,
      selector: { matchLabels: { app: app.name, 'pod-template-hash': hash } },
      template: { spec: { containers: containers(app) } },
    },
    status: { replicas, readyReplicas: ready, availableReplicas: ready },
  };
}

export function podObject(app: App, pod: PodPlace, hostIp: string, restarts: number, meta: Meta): Obj {
  const { name, node } = pod;
  return {
    metadata: {
      ...meta(name, app.namespace, { app: app.name, 'pod-template-hash': app.hash }),
      ownerReferences: [{ kind: 'ReplicaSet', name: `${app.name}-${app.hash}` }],
    },
    spec: {
      nodeName: node,
      containers: containers(app),
      volumes: volumes(app),
      serviceAccountName: app.name,
    },
    status: {
      phase: 'Running',
      podIP: pod.ip,
      hostIP: hostIp,
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
  };
}

export function sliceObject(app: App, meta: Meta): Obj {
  return {
    metadata: meta(`${app.name}-http`, app.namespace, { 'kubernetes.io/service-name': app.name }),
    addressType: 'IPv4',
    endpoints: app.pods.map((pod) => ({
      addresses: [pod.ip],
      nodeName: pod.node,
      conditions: { ready: !app.crashing },
      targetRef: { kind: 'Pod', name: pod.name, namespace: app.namespace },
    })),
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
  };
}
