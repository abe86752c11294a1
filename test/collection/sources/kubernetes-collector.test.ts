import { expect } from 'chai';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CollectionWorker } from '../../../src/collection/collectors/runs/worker.js';
import { createKey, useTestApp } from '../../support/app.js';
import { resetDatabase } from '../../support/db.js';
import { describeWith } from '../../support/dependencies.js';
import { expectDocumentedTypeData } from '../../support/type-data.js';
import { clusterCertificates, FakeKubeApiServer } from '../../support/fake-kube-apiserver.js';
import { populateCluster } from '../../support/kube-fixtures.js';

const TOKEN = 'kube-token-for-tests';
const CONFIG_VALUE = 'config-map-value-never-collected';
const SECRET_VALUE = 'secret-value-never-collected';
const execFileAsync = promisify(execFile);
const KUBECTL = spawnSync('sh', ['-c', 'command -v kubectl']).status === 0;

const meta = (name: string, namespace?: string, extra: Record<string, unknown> = {}) => ({
  metadata: { name, ...(namespace ? { namespace } : {}), ...extra },
});
const owned = (kind: string, name: string) => ({
  ownerReferences: [{ apiVersion: 'v1', kind, name, uid: `uid-${name}`, controller: true }],
});

function pod(
  name: string,
  extra: { owner?: [string, string]; node?: string; image?: string; volumes?: unknown[] } = {},
) {
  return {
    ...meta(name, 'shop', { labels: { app: 'web' }, ...(extra.owner ? owned(...extra.owner) : {}) }),
    spec: {
      nodeName: extra.node ?? 'node-1',
      containers: [{ name: 'app', image: extra.image ?? 'shop/web:1.0' }],
      volumes: extra.volumes ?? [],
    },
    status: {
      phase: 'Running',
      podIP: '10.1.0.5',
      podIPs: [{ ip: '10.1.0.5' }],
      hostIP: '192.168.0.11',
      qosClass: 'Burstable',
      containerStatuses: [{ name: 'app', ready: true, restartCount: 0 }],
      conditions: [{ type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: '2026-11-01T00:00:00Z' }],
    },
  };
}

/** A small shop: a deployment with its replica set and pods, a stateful set, a daemon set, a cron job, storage, a service with its slice, an ingress. */
function seed(fake: FakeKubeApiServer): void {
  for (const ns of ['shop', 'kube-system']) fake.put('namespaces', { ...meta(ns), status: { phase: 'Active' } });
  for (const [name, ip] of [
    ['node-1', '192.168.0.11'],
    ['node-2', '192.168.0.12'],
  ] as const) {
    fake.put('nodes', {
      ...meta(name),
      spec: {},
      status: {
        capacity: { cpu: '4', memory: '16Gi' },
        allocatable: { cpu: '3800m', memory: '15Gi' },
        nodeInfo: {
          kubeletVersion: 'v1.29.0',
          osImage: 'Debian GNU/Linux 12',
          kernelVersion: '6.1.0',
          containerRuntimeVersion: 'containerd://1.7',
          architecture: 'amd64',
        },
        addresses: [{ type: 'InternalIP', address: ip }],
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            lastHeartbeatTime: '2026-11-23T10:00:00Z',
            lastTransitionTime: '2026-11-01T00:00:00Z',
          },
        ],
      },
    });
  }
  fake.put('persistentvolumes', {
    ...meta('pv-1'),
    spec: {
      capacity: { storage: '10Gi' },
      accessModes: ['ReadWriteOnce'],
      storageClassName: 'fast',
      claimRef: { namespace: 'shop', name: 'data' },
    },
    status: { phase: 'Bound' },
  });
  fake.put('persistentvolumeclaims', {
    ...meta('data', 'shop'),
    spec: {
      volumeName: 'pv-1',
      storageClassName: 'fast',
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: '10Gi' } },
    },
    status: { phase: 'Bound' },
  });
  fake.put('configmaps', { ...meta('settings', 'shop'), data: { 'app.properties': CONFIG_VALUE, mode: 'production' } });
  fake.put('secrets', {
    ...meta('db-password', 'shop'),
    data: { password: Buffer.from(SECRET_VALUE).toString('base64') },
  });
  const volumes = [
    { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
    { name: 'settings', configMap: { name: 'settings' } },
  ];
  fake.put('deployments', {
    ...meta('web', 'shop'),
    spec: {
      replicas: 2,
      strategy: { type: 'RollingUpdate' },
      template: { spec: { containers: [{ name: 'app', image: 'shop/web:1.0' }] } },
    },
    status: { readyReplicas: 2, updatedReplicas: 2, availableReplicas: 2 },
  });
  fake.put('replicasets', {
    ...meta('web-abc', 'shop', owned('Deployment', 'web')),
    spec: { replicas: 2, template: { spec: { containers: [{ name: 'app', image: 'shop/web:1.0' }] } } },
    status: { readyReplicas: 2 },
  });
  fake.put('pods', pod('web-abc-1', { owner: ['ReplicaSet', 'web-abc'], volumes }));
  fake.put('pods', pod('web-abc-2', { owner: ['ReplicaSet', 'web-abc'], node: 'node-2' }));
  fake.put('statefulsets', {
    ...meta('db', 'shop'),
    spec: {
      replicas: 1,
      updateStrategy: { type: 'RollingUpdate' },
      template: { spec: { containers: [{ name: 'pg', image: 'postgres:16' }] } },
    },
    status: { readyReplicas: 1 },
  });
  fake.put('pods', pod('db-0', { owner: ['StatefulSet', 'db'], image: 'postgres:16' }));
  fake.put('daemonsets', {
    ...meta('agent', 'shop'),
    spec: { template: { spec: { containers: [{ name: 'agent', image: 'agent:2' }] } } },
    status: { desiredNumberScheduled: 2, numberReady: 2 },
  });
  fake.put('pods', pod('agent-n1', { owner: ['DaemonSet', 'agent'], image: 'agent:2' }));
  fake.put('cronjobs', { ...meta('nightly', 'shop'), spec: { schedule: '0 3 * * *' }, status: {} });
  fake.put('jobs', {
    ...meta('nightly-1', 'shop', owned('CronJob', 'nightly')),
    spec: { completions: 1 },
    status: { succeeded: 1 },
  });
  fake.put('pods', pod('nightly-1-p', { owner: ['Job', 'nightly-1'], image: 'shop/report:1' }));
  fake.put('services', {
    ...meta('web', 'shop'),
    spec: {
      type: 'ClusterIP',
      clusterIP: '10.96.0.10',
      ports: [{ port: 80, targetPort: 8080 }],
      selector: { app: 'web' },
    },
  });
  fake.put('endpointslices', {
    ...meta('web-xyz', 'shop', { labels: { 'kubernetes.io/service-name': 'web' } }),
    addressType: 'IPv4',
    endpoints: ['web-abc-1', 'web-abc-2'].map((name) => ({
      addresses: ['10.1.0.5'],
      targetRef: { kind: 'Pod', name, namespace: 'shop' },
    })),
    ports: [{ port: 8080 }],
  });
  fake.put('ingresses', {
    ...meta('web', 'shop'),
    spec: {
      ingressClassName: 'nginx',
      rules: [
        {
          host: 'shop.example.com',
          http: { paths: [{ path: '/', backend: { service: { name: 'web', port: { number: 80 } } } }] },
        },
      ],
    },
  });
  fake.metrics = {
    nodes: { 'node-1': { cpu: '1250m', memory: '6Gi' } },
    pods: { 'shop/web-abc-1': { cpu: '250m', memory: '256Mi' } },
  };
}

describe('the kubernetes collector type against a fake Kubernetes API server (fake: no API server runs here)', function () {
  this.timeout(60_000);
  const app = useTestApp();
  let fake: FakeKubeApiServer;
  let admin: string;
  const certificates = clusterCertificates();

  beforeEach(async () => {
    fake = new FakeKubeApiServer(TOKEN, certificates);
    await fake.start();
    // a few hundred generated pods across workloads, then the hand-made shop the assertions name
    populateCluster(fake, 200);
    seed(fake);
    // every test reads the whole inventory: each starts from an empty one
    await resetDatabase(app.current.sql);
    admin = await createKey(app.current.sql, 'adm');
  });
  afterEach(async () => {
    await fake.stop();
  });

  // token credentials carry no CA: those sources skip verification; client certificates come with the cluster's CA
  const addSource = async (
    name: string,
    config: Record<string, unknown> = {},
    credentials: Record<string, unknown> = { type: 'token', token: TOKEN },
  ) => {
    const added = await app.current.request('POST', '/api/v1/sources', {
      key: admin,
      body: {
        name,
        collector_type: 'kubernetes',
        endpoint: fake.url,
        config: { cluster_name: name, ...(credentials.type === 'token' ? { verify_ssl: false } : {}), ...config },
        schedule_config: { enabled: false, interval_minutes: 1 },
      },
    });
    expect(added.status, added.text).to.equal(201);
    const source = added.body as { id: number; collector_id: number };
    expect(
      (await app.current.request('PUT', `/api/v1/sources/${source.id}/credentials`, { key: admin, body: credentials }))
        .status,
    ).to.equal(204);
    return source;
  };
  const podCount = async () => fake.count('pods');
  const trigger = async (source: { id: number; collector_id: number }) =>
    (
      await app.current.request('POST', `/api/v1/collectors/${source.collector_id}/trigger?source_id=${source.id}`, {
        key: admin,
      })
    ).body.run_id as string;
  const collect = async (source: { id: number; collector_id: number }) => {
    const runId = await trigger(source);
    const worker = new CollectionWorker(app.current.context, { concurrency: 1, leaseMs: 10_000, pollMs: 60_000 });
    await worker.tick();
    await worker.idle();
    await worker.stop();
    return (await app.current.get(`/api/v1/collection-runs/${runId}`, admin)).body;
  };
  const cis = async () => {
    const reply = await app.current.get('/api/v1/configuration-items?status=all&limit=1000', admin);
    expect(reply.status, reply.text).to.equal(200);
    return reply.body.items as {
      ci_id: string;
      ci_type: string;
      name: string;
      namespace: string | null;
      status: string;
      raw_data: Record<string, unknown>;
    }[];
  };
  const edges = async (ciId: string) =>
    (
      (await app.current.get(`/api/v1/configuration-items/${ciId}/relationships?direction=outgoing&limit=100`, admin))
        .body.items as { relationship_type: string; related_ci_type: string; related_ci_name: string }[]
    )
      .map((r) => `${r.relationship_type} ${r.related_ci_type}/${r.related_ci_name}`)
      .sort();

  describeWith(KUBECTL)(
    'with the real kubectl (skipped outside CI when kubectl is not installed; under CI=true a missing kubectl fails)',
    () =>
      it('the fake answers the real kubectl: discovery, lists, gets and a watch', async () => {
        const ca = path.join(mkdtempSync(path.join(tmpdir(), 'cinv-kubectl-')), 'ca.pem');
        writeFileSync(ca, certificates.ca);
        // kubectl runs beside the fake, which answers from this process: never block it with a sync call
        const kubectl = async (token: string, ...args: string[]) => {
          try {
            const { stdout } = await execFileAsync(
              'kubectl',
              [`--server=${fake.url}`, `--certificate-authority=${ca}`, `--token=${token}`, ...args],
              { encoding: 'utf8', timeout: 20_000 },
            );
            return stdout;
          } catch (error) {
            return `failed: ${(error as { stderr?: string }).stderr ?? String(error)}`;
          }
        };
        const pods = JSON.parse(await kubectl(TOKEN, 'get', 'pods', '--all-namespaces', '-o', 'json')) as {
          items: { metadata: { name: string; namespace: string } }[];
        };
        expect(
          pods.items
            .filter((p) => p.metadata.namespace === 'shop')
            .map((p) => p.metadata.name)
            .sort(),
        ).to.deep.equal(['agent-n1', 'db-0', 'nightly-1-p', 'web-abc-1', 'web-abc-2']);
        expect(pods.items.length).to.be.above(200);
        const nodes = JSON.parse(await kubectl(TOKEN, 'get', 'nodes', '-o', 'json')) as {
          items: { metadata: { name: string } }[];
        };
        expect(nodes.items.map((n) => n.metadata.name)).to.include.members(['node-1', 'node-2']);
        expect((await kubectl(TOKEN, 'get', 'deployments', '-n', 'shop', '-o', 'name')).trim()).to.equal(
          'deployment.apps/web',
        );
        expect(
          JSON.parse(await kubectl(TOKEN, 'get', 'node', 'node-2', '-o', 'json')).status.nodeInfo.kubeletVersion,
        ).to.equal('v1.29.0');
        expect(await kubectl(TOKEN, 'api-resources', '--api-group=apps', '-o', 'name')).to.include('deployments');
        const refused = await kubectl('wrong', 'get', 'pods');
        expect(refused)
          .to.match(/^failed: /)
          .and.match(/Unauthorized|must be logged in/);

        // a watch: kubectl prints the list, then the events as they come
        const watching = spawn('kubectl', [
          `--server=${fake.url}`,
          `--certificate-authority=${ca}`,
          `--token=${TOKEN}`,
          'get',
          'pods',
          '-n',
          'shop',
          '--watch',
          '-o',
          'json',
        ]);
        let printed = '';
        watching.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString('utf8')));
        try {
          await waitFor(async () => printed.includes('"web-abc-2"'), 15_000);
          fake.put('pods', pod('web-abc-9', { owner: ['ReplicaSet', 'web-abc'] }));
          await waitFor(async () => printed.includes('"web-abc-9"'), 15_000);
        } finally {
          watching.kill();
        }
      }),
  );

  it('lists every kind page by page into CIs with their type data and relationships, and never collects secrets or config values (fake API server)', async () => {
    const source = await addSource('shop-1', { page_size: 2 });
    const run = await collect(source);
    expect(run.status, run.error).to.equal('succeeded');
    const items = await cis();
    const byKey = new Map(items.map((i) => [`${i.ci_type}/${i.namespace ? `${i.namespace}/` : ''}${i.name}`, i]));
    expect([...new Set(items.map((i) => i.ci_type))].sort()).to.deep.equal(
      [
        'configmap',
        'cronjob',
        'daemonset',
        'deployment',
        'endpointslice',
        'ingress',
        'job',
        'namespace',
        'node',
        'persistentvolume',
        'persistentvolumeclaim',
        'pod',
        'replicaset',
        'service',
        'statefulset',
      ].map((k) => `k8s.${k}`),
    );
    expect(items.filter((i) => i.ci_type === 'k8s.pod')).to.have.length(await podCount());
    expect(JSON.stringify(items))
      .to.not.include(SECRET_VALUE)
      .and.not.include(CONFIG_VALUE)
      .and.not.include('db-password');
    expect(byKey.get('k8s.configmap/shop/settings')!.raw_data).to.deep.include({
      data_keys: ['app.properties', 'mode'],
    });
    expect((byKey.get('k8s.pod/shop/web-abc-1')!.raw_data.metadata as Record<string, unknown>).managedFields).to.equal(
      undefined,
    );
    // pages of two, each list continued with its token
    const podLists = fake.requests.filter((r) => r.path === '/api/v1/pods');
    expect(podLists.length).to.equal(Math.ceil((await podCount()) / 2));
    expect(podLists.every((r) => r.query.limit === '2')).to.equal(true);
    expect(podLists.filter((r) => r.query.continue)).to.have.length(podLists.length - 1);

    expect(await edges(byKey.get('k8s.pod/shop/web-abc-1')!.ci_id)).to.deep.equal([
      'member_of k8s.namespace/shop',
      'mounts k8s.configmap/settings',
      'mounts k8s.persistentvolumeclaim/data',
      'runs_on k8s.node/node-1',
    ]);
    expect(await edges(byKey.get('k8s.deployment/shop/web')!.ci_id)).to.deep.equal([
      'manages k8s.replicaset/web-abc',
      'member_of k8s.namespace/shop',
    ]);
    expect(await edges(byKey.get('k8s.replicaset/shop/web-abc')!.ci_id)).to.deep.equal([
      'manages k8s.pod/web-abc-1',
      'manages k8s.pod/web-abc-2',
      'member_of k8s.namespace/shop',
    ]);
    expect(await edges(byKey.get('k8s.service/shop/web')!.ci_id)).to.deep.equal([
      'member_of k8s.namespace/shop',
      'routes_to k8s.pod/web-abc-1',
      'routes_to k8s.pod/web-abc-2',
    ]);
    expect(await edges(byKey.get('k8s.persistentvolumeclaim/shop/data')!.ci_id)).to.deep.equal([
      'bound_to k8s.persistentvolume/pv-1',
      'member_of k8s.namespace/shop',
    ]);
    expect(await edges(byKey.get('k8s.ingress/shop/web')!.ci_id)).to.deep.equal([
      'exposes k8s.service/web',
      'member_of k8s.namespace/shop',
    ]);
    expect(await edges(byKey.get('k8s.cronjob/shop/nightly')!.ci_id)).to.deep.equal([
      'manages k8s.job/nightly-1',
      'member_of k8s.namespace/shop',
    ]);
    expect(await edges(byKey.get('k8s.job/shop/nightly-1')!.ci_id)).to.deep.equal([
      'manages k8s.pod/nightly-1-p',
      'member_of k8s.namespace/shop',
    ]);
    expect(await edges(byKey.get('k8s.statefulset/shop/db')!.ci_id)).to.deep.equal([
      'manages k8s.pod/db-0',
      'member_of k8s.namespace/shop',
    ]);
    expect(await edges(byKey.get('k8s.daemonset/shop/agent')!.ci_id)).to.deep.equal([
      'manages k8s.pod/agent-n1',
      'member_of k8s.namespace/shop',
    ]);

    const typed = (
      await app.current.get(
        '/api/v1/configuration-items?limit=1000&include_type_data=true&filter=ci_type:eq:k8s.pod',
        admin,
      )
    ).body.items as { attributes: { name: string; pod: Record<string, unknown> } }[];
    const web1 = typed.find((t) => t.attributes.name === 'web-abc-1')!.attributes.pod;
    expect(web1).to.deep.include({ phase: 'Running', node: 'node-1', pod_ip: '10.1.0.5', qos_class: 'Burstable' });
    expect(web1.containers).to.deep.equal([{ name: 'app', image: 'shop/web:1.0', ready: true, restart_count: 0 }]);
    expect(web1.metrics).to.deep.equal({ cpu_cores: 0.25, memory_bytes: 256 * 2 ** 20 });
    const nodes = (
      await app.current.get(
        '/api/v1/configuration-items?limit=1000&include_type_data=true&filter=ci_type:eq:k8s.node',
        admin,
      )
    ).body.items as { attributes: { name: string; node: Record<string, unknown> } }[];
    expect(nodes.find((n) => n.attributes.name === 'node-1')!.attributes.node).to.deep.include({
      kubelet_version: 'v1.29.0',
      architecture: 'amd64',
      metrics: { cpu_cores: 1.25, memory_bytes: 6 * 2 ** 30 },
    });

    await expectDocumentedTypeData(app.current, admin, 'kubernetes');

    // a quiet cluster re-collected (heartbeats and resource versions moved) writes nothing
    fake.put('nodes', {
      ...meta('node-1'),
      spec: {},
      status: {
        ...(await rawStatus('node-1')),
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            lastHeartbeatTime: '2026-11-23T11:00:00Z',
            lastTransitionTime: '2026-11-01T00:00:00Z',
          },
        ],
      },
    });
    fake.metrics!.pods['shop/web-abc-1'] = { cpu: '900m', memory: '300Mi' };
    const quiet = await collect(source);
    expect(quiet.status).to.equal('succeeded');
    expect(quiet.counts.changes).to.equal(0);

    async function rawStatus(name: string) {
      const found = items.find((i) => i.ci_type === 'k8s.node' && i.name === name)!;
      return found.raw_data.status as Record<string, unknown>;
    }
  });

  it('authenticates with a client certificate, verifying the API server against the cluster CA (fake API server)', async () => {
    const source = await addSource(
      'shop-tls',
      {},
      {
        type: 'tls',
        client_certificate: certificates.client.cert,
        client_key: certificates.client.key,
        ca_certificate: certificates.ca,
      },
    );
    const run = await collect(source);
    expect(run.status, run.error).to.equal('succeeded');
    expect(
      fake.requests.filter((r) => r.path === '/api/v1/pods').every((r) => r.user === 'client-certificate'),
    ).to.equal(true);
    // another CA: the server's certificate does not verify, and nothing is collected
    const other = clusterCertificates();
    const wrongCa = await addSource(
      'shop-other-ca',
      {},
      {
        type: 'tls',
        client_certificate: certificates.client.cert,
        client_key: certificates.client.key,
        ca_certificate: other.ca,
      },
    );
    const refused = await collect(wrongCa);
    expect(refused.status).to.equal('failed');
    expect(refused.error).to.match(/certificate/i);
  });

  it('fails the run on a wrong token, records the error and degraded health, and archives nothing (fake API server)', async () => {
    const source = await addSource('shop-auth');
    expect((await collect(source)).status).to.equal('succeeded');
    const collected = (await cis()).length;
    await app.current.request('PUT', `/api/v1/sources/${source.id}/credentials`, {
      key: admin,
      body: { type: 'token', token: 'revoked-token' },
    });
    const run = await collect(source);
    expect(run.status).to.equal('failed');
    expect(run.error).to.include('401');
    const detail = (await app.current.get(`/api/v1/sources/${source.id}`, admin)).body;
    expect(detail.last_error).to.include('401');
    expect(detail.health_status.status).to.equal('unhealthy');
    expect((await app.current.get(`/api/v1/collectors/${source.collector_id}/health`, admin)).body.status).to.equal(
      'degraded',
    );
    const after = await cis();
    expect(after).to.have.length(collected);
    expect(after.every((i) => i.status === 'active')).to.equal(true);
    expect(JSON.stringify(detail)).to.not.include('revoked-token');
  });

  it('restarts a list whose continue token expired, and fails no other kind (fake API server)', async () => {
    const source = await addSource('shop-2', { page_size: 2 });
    let compacted = false;
    fake.beforeList = (path, query) => {
      if (path === '/api/v1/pods' && query.continue && !compacted) {
        compacted = true;
        fake.compact();
      }
    };
    const run = await collect(source);
    expect(run.status, run.error).to.equal('succeeded');
    const podLists = fake.requests.filter((r) => r.path === '/api/v1/pods');
    // first page, the expired continuation, then the list again from the start
    expect(podLists.slice(0, 3).map((r) => (r.query.continue ? 'continue' : 'start'))).to.deep.equal([
      'start',
      'continue',
      'start',
    ]);
    expect(podLists.slice(3).every((r) => r.query.continue)).to.equal(true);
    expect((await cis()).filter((i) => i.ci_type === 'k8s.pod')).to.have.length(await podCount());
  });

  it('in hybrid mode watches every kind from its list and writes events as deltas; reconnects; lists again on 410 Gone (fake API server)', async () => {
    const source = await addSource('shop-3', { collection_mode: 'hybrid' });
    const runId = await trigger(source);
    const worker = new CollectionWorker(app.current.context, {
      concurrency: 1,
      leaseMs: 600,
      pollMs: 60_000,
      watchBatchWaitMs: 100,
      watchRetryMs: 50,
    });
    try {
      await worker.tick();
      await waitFor(async () => fake.openWatches === 15);
      const watches = fake.requests.filter((r) => r.query.watch === 'true');
      expect(
        watches.every((w) => w.query.allowWatchBookmarks === 'true' && Number(w.query.resourceVersion) > 0),
      ).to.equal(true);

      fake.put('pods', pod('web-abc-3', { owner: ['ReplicaSet', 'web-abc'], node: 'node-2' }));
      fake.put('pods', pod('web-abc-1', { owner: ['ReplicaSet', 'web-abc'], image: 'shop/web:1.1' }));
      fake.remove('pods', 'db-0', 'shop');
      const pods = async () =>
        new Map((await cis()).filter((i) => i.ci_type === 'k8s.pod').map((i) => [`${i.namespace}/${i.name}`, i]));
      await waitFor(
        async () => (await pods()).get('shop/db-0')?.status === 'archived' && (await pods()).has('shop/web-abc-3'),
      );
      const web1 = (await pods()).get('shop/web-abc-1')!;
      const history = (await app.current.get(`/api/v1/ci-changes/${web1.ci_id}`, admin)).body.items as {
        change_type: string;
        changes: { field: string; old_value: unknown; new_value: unknown }[];
      }[];
      expect(history.find((c) => c.change_type === 'UPDATED')!.changes).to.deep.include({
        field: 'raw_data.spec.containers',
        old_value: [{ name: 'app', image: 'shop/web:1.0' }],
        new_value: [{ name: 'app', image: 'shop/web:1.1' }],
      });
      expect(await edges((await pods()).get('shop/web-abc-3')!.ci_id)).to.include('runs_on k8s.node/node-2');

      // a change to another kind only: the pods watch sees a bookmark, which moves its start point
      const podWatches = () => fake.requests.filter((r) => r.path === '/api/v1/pods' && r.query.watch === 'true');
      const listedAt = Number(podWatches()[0]!.query.resourceVersion);
      fake.put('configmaps', { ...meta('feature-flags', 'shop'), data: { beta: 'on' } });
      await new Promise((resolve) => setTimeout(resolve, 1200));

      // the server drops its watches: the worker watches again from where it was
      const before = fake.requests.filter((r) => r.query.watch === 'true').length;
      fake.dropWatches();
      await waitFor(
        async () =>
          fake.openWatches === 15 && fake.requests.filter((r) => r.query.watch === 'true').length >= before + 15,
      );
      expect(
        fake.requests.filter((r) => r.path === '/api/v1/pods' && !r.query.watch),
        'no list for a reconnect',
      ).to.have.length(Math.ceil((await podCount()) / 500));
      const resumedAt = Number(podWatches().at(-1)!.query.resourceVersion);
      expect(resumedAt, 'the bookmark moved the pods watch past the configmap change').to.be.above(listedAt + 3);

      // history compacted and watches dropped: the old versions are gone, so the run lists again
      fake.compact();
      fake.dropWatches();
      await waitFor(
        async () => (await app.current.get(`/api/v1/collection-runs/${runId}`, admin)).body.counts?.lists === 2,
        10_000,
      );
      // nothing lost or duplicated: one CI per pod the cluster has, plus the deleted one archived
      const after = [...(await pods()).values()];
      expect(after.filter((p) => p.status === 'active')).to.have.length(await podCount());
      expect(after.filter((p) => p.status !== 'active').map((p) => `${p.namespace}/${p.name}`)).to.deep.equal([
        'shop/db-0',
      ]);
    } finally {
      await worker.stop();
    }
  });
});

async function waitFor(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
