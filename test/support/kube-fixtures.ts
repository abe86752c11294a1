import type { FakeKubeApiServer } from './fake-kube-apiserver.js';

/**
 * A generated cluster of `pods` pods: namespaces of up to 500 pods, a node per 50 pods, deployments
 * of five replicas each with their replica set, service and endpoint slice, and (from 100 pods on)
 * a stateful set, a daemon set and a cron job with its job per namespace, with their pods.
 */
export function populateCluster(fake: FakeKubeApiServer, pods: number): void {
  const namespaces = Math.max(1, Math.round(pods / 500));
  const nodes = Math.max(1, Math.round(pods / 50));
  for (let n = 0; n < namespaces; n++)
    fake.put('namespaces', { metadata: { name: `ns-${n}` }, status: { phase: 'Active' } });
  for (let n = 0; n < nodes; n++) {
    fake.put('nodes', {
      metadata: { name: `node-${n}` },
      status: {
        capacity: { cpu: '16', memory: '64Gi' },
        nodeInfo: { kubeletVersion: 'v1.29.0', architecture: 'amd64' },
        conditions: [{ type: 'Ready', status: 'True' }],
      },
    });
  }
  const perDeployment = 5;
  for (let d = 0; d < pods / perDeployment; d++) {
    const namespace = `ns-${d % namespaces}`;
    const name = `app-${d}`;
    const template = { spec: { containers: [{ name: 'app', image: `registry.example.com/${name}:1.${d % 20}` }] } };
    fake.put('deployments', {
      metadata: { name, namespace },
      spec: { replicas: perDeployment, template },
      status: { readyReplicas: perDeployment },
    });
    fake.put('replicasets', {
      metadata: { name: `${name}-rs`, namespace, ownerReferences: [{ kind: 'Deployment', name }] },
      spec: { replicas: perDeployment, template },
      status: {},
    });
    fake.put('services', {
      metadata: { name, namespace },
      spec: {
        type: 'ClusterIP',
        clusterIP: `10.96.${d >> 8}.${d & 255}`,
        selector: { app: name },
        ports: [{ port: 80 }],
      },
    });
    const podNames: string[] = [];
    for (let p = 0; p < perDeployment; p++) {
      const podName = `${name}-rs-${p}`;
      podNames.push(podName);
      fake.put('pods', {
        metadata: {
          name: podName,
          namespace,
          labels: { app: name },
          ownerReferences: [{ kind: 'ReplicaSet', name: `${name}-rs` }],
        },
        spec: { nodeName: `node-${(d * perDeployment + p) % nodes}`, containers: template.spec.containers },
        status: {
          phase: 'Running',
          podIP: `10.1.${(d * perDeployment + p) >> 8}.${(d * perDeployment + p) & 255}`,
          containerStatuses: [{ name: 'app', ready: true, restartCount: 0 }],
        },
      });
    }
    fake.put('endpointslices', {
      metadata: { name: `${name}-slice`, namespace, labels: { 'kubernetes.io/service-name': name } },
      addressType: 'IPv4',
      endpoints: podNames.map((podName) => ({
        addresses: ['10.1.0.1'],
        targetRef: { kind: 'Pod', name: podName, namespace },
      })),
    });
  }
  if (pods < 100) return;
  for (let n = 0; n < namespaces; n++) {
    const namespace = `ns-${n}`;
    const workload = (kind: string, name: string, image: string) => ({
      metadata: { name, namespace },
      spec: {
        replicas: 2,
        updateStrategy: { type: 'RollingUpdate' },
        template: { spec: { containers: [{ name: 'main', image }] } },
      },
      status: { readyReplicas: 2 },
    });
    const podOf = (name: string, owner: [string, string], node: number, image: string, volumes: unknown[] = []) => ({
      metadata: { name, namespace, ownerReferences: [{ kind: owner[0], name: owner[1] }] },
      spec: { nodeName: `node-${node % nodes}`, containers: [{ name: 'main', image }], volumes },
      status: { phase: 'Running', containerStatuses: [{ name: 'main', ready: true, restartCount: 1 }] },
    });
    fake.put('statefulsets', workload('StatefulSet', 'db', 'postgres:16'));
    for (let i = 0; i < 2; i++) {
      fake.put('persistentvolumes', {
        metadata: { name: `pv-${n}-${i}` },
        spec: { capacity: { storage: '20Gi' }, claimRef: { namespace, name: `data-db-${i}` } },
        status: { phase: 'Bound' },
      });
      fake.put('persistentvolumeclaims', {
        metadata: { name: `data-db-${i}`, namespace },
        spec: { volumeName: `pv-${n}-${i}`, resources: { requests: { storage: '20Gi' } } },
        status: { phase: 'Bound' },
      });
      fake.put(
        'pods',
        podOf(`db-${i}`, ['StatefulSet', 'db'], i, 'postgres:16', [
          { name: 'data', persistentVolumeClaim: { claimName: `data-db-${i}` } },
        ]),
      );
    }
    fake.put('daemonsets', {
      ...workload('DaemonSet', 'log-agent', 'fluent-bit:3'),
      status: { desiredNumberScheduled: nodes, numberReady: nodes },
    });
    for (let node = 0; node < Math.min(nodes, 4); node++)
      fake.put('pods', podOf(`log-agent-${node}`, ['DaemonSet', 'log-agent'], node, 'fluent-bit:3'));
    fake.put('cronjobs', { metadata: { name: 'backup', namespace }, spec: { schedule: '0 2 * * *' }, status: {} });
    fake.put('jobs', {
      metadata: { name: 'backup-1', namespace, ownerReferences: [{ kind: 'CronJob', name: 'backup' }] },
      spec: { completions: 1 },
      status: { succeeded: 1 },
    });
    fake.put('pods', podOf('backup-1-x', ['Job', 'backup-1'], 0, 'backup:1'));
  }
}
