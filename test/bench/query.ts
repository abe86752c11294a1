/**
 * The query language (POST /api/v1/query) on a generated Kubernetes estate, through `cinv serve`:
 * each answer timed beside the same answer assembled from today's endpoints.
 *
 *   npm run bench -- query [CIs]        (default 1 000 000 CIs, five change records each)
 *
 * The estate is generated in SQL into cinv_bench_query (kept between runs for the same size): seven
 * clusters (one source each, the cluster as its instance) of 150 namespaces, deployments each with
 * two replica sets (the current one owning 1 to 15 pods), a service and a config map, and nodes of
 * about 100 pods each; relationships as the Kubernetes collector writes them (`manages`,
 * `runs_on`, `member_of`, `routes_to`). Every CI has five change records, six days apart, the
 * latest at its updated_at, over the last 30 days; the writes of the last two days also have their
 * way back (ci_undo), so that the inventory of a day ago is taken back as the time machine does.
 *
 * Targets (p95 of sequential requests), at 1 000 000 CIs: a selective predicate's first page
 * ≤ 100 ms; a deployment → its pods → their nodes ≤ 300 ms; `count by ci_type, namespace` over the
 * whole inventory ≤ 500 ms; a history predicate over one day ≤ 500 ms, the same as_of a day back
 * ≤ 2× that; explain ≤ 50 ms. Each is reported beside today's way of getting the same answer, as
 * `today's ÷ query` of their medians (above 1: the query is faster).
 */
import { readFileSync } from 'node:fs';
import type { Sql } from '../../src/platform/db/database.js';
import { issueApiKey } from '../../src/platform/auth/api-keys.js';
import { ensureSource } from '../../src/collection/sources/store.js';
import { foldCiCounts } from '../../src/inventory/configuration-items/counts.js';
import {
  addMonths,
  CHANGE_RECORDS,
  CI_UNDO,
  createMonthPartition,
  monthOf,
  partitionName,
} from '../../src/platform/db/partitions.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import {
  BENCH_SECRET,
  benchDatabase,
  benchKey,
  serveBench,
  settlePartitions,
  type Figure,
  type RunningServer,
} from './common.js';
import { SERVE_ENV } from './list.js';

const GENERATOR = 'query-v1';
const DATABASE = 'cinv_bench_query';
const DAY_MS = 86_400_000;
const CLUSTERS = 7;
const NAMESPACES = 150;
const PODS_PER_NODE = 100;
const RECORDS_PER_CI = 5;
/** Days between a CI's change records: five of them cover the 30 days. */
const EDIT_EVERY_DAYS = 6;
/** How far back the writes keep their way back (ci_undo): the reads of the past go a day back. */
const UNDO_DAYS = 2;
const NAMESPACED = ['k8s.deployment', 'k8s.replicaset', 'k8s.pod', 'k8s.service', 'k8s.configmap'];

/** Pods of deployment g: 1 to 15, 8 on average. */
const podsOf = (g: number) => 1 + ((g * 37) % 15);

interface Estate {
  deployments: number;
  pods: number;
  nodesPerCluster: number;
  cis: number;
}

/** The estate of about `size` CIs: per deployment 13 CIs on average (itself, 2 replica sets, 8 pods, a service, a config map). */
export function estateOf(size: number): Estate {
  const deployments = Math.max(CLUSTERS, Math.floor((size - CLUSTERS * NAMESPACES) / 13.08));
  let pods = 0;
  for (let g = 0; g < deployments; g++) pods += podsOf(g);
  const nodesPerCluster = Math.max(1, Math.ceil(pods / PODS_PER_NODE / CLUSTERS));
  const cis = deployments * 5 + pods + nodesPerCluster * CLUSTERS + CLUSTERS * NAMESPACES;
  return { deployments, pods, nodesPerCluster, cis };
}

/** The generated estate as a later run finds it. */
interface Seeded {
  estate: Estate;
  /** The generation's moment: the history ends there. */
  end: Date;
  sources: string[];
}

async function markerOf(sql: Sql): Promise<string | null> {
  const [row] = await sql<
    { marker: string | null }[]
  >`select obj_description('configuration_items'::regclass, 'pg_class') as marker`;
  return row?.marker ?? null;
}

/*
 * The SQL below is written as text with the estate's integers inlined (they are computed here, never
 * read from outside) and four parameters: $1 the tenant, $2 the first moment (35 days before the
 * end), $3 the end, $4 the sources of the clusters (bigint[], cluster c is element c + 1).
 */

/** Derived values of deployment `g` (a generate_series column) as the lateral `v`. */
const deploymentValues = (g: string) => `cross join lateral (
    select ${g} % ${CLUSTERS} as c, (${g} / ${CLUSTERS}) % ${NAMESPACES} as nsn, 1 + (${g}::bigint * 37) % 15 as p,
           (array['web', 'api', 'worker', 'db'])[1 + ${g} % 4] as tier,
           'registry.local/team-' || ((${g} / ${CLUSTERS}) % ${NAMESPACES}) || '/app-' || ${g} || ':1.' || (${g} % 40) as image,
           'app-' || ${g} as app,
           'team-' || ((${g} / ${CLUSTERS}) % ${NAMESPACES}) as ns) v`;

const rsName = (g: string, r: string) =>
  `('app-' || ${g} || '-' || substr(md5('qb:h:' || ${g} || ':' || ${r}), 1, 10))`;
/** The pod's five-letter suffix, its last letter its place in the replica set: no two pods of one share a name. */
const podName = (g: string, k: string) =>
  `(${rsName(g, '0')} || '-' || substr(md5('qb:p:' || ${g} || ':' || ${k}), 1, 4) || chr(96 + ${k}::int))`;
const nsId = (c: string, nsn: string) => `md5('qb:ns:' || ${c} || ':' || ${nsn})::uuid`;
const source = (c: string) => `($4::bigint[])[1 + ${c}]`;
const scope = (c: string) => `('cluster-' || ${c})`;
const container = `jsonb_build_array(jsonb_build_object('name', 'app', 'image', v.image,
    'ports', jsonb_build_array(jsonb_build_object('containerPort', 8080, 'protocol', 'TCP')),
    'resources', jsonb_build_object('requests', jsonb_build_object('cpu', '100m', 'memory', '128Mi'),
                                    'limits', jsonb_build_object('cpu', '500m', 'memory', '512Mi'))))`;
const meta = (name: string, namespace: string | null, id: string, labels: string, extra = '') =>
  `jsonb_build_object('name', ${name}, ${namespace ? `'namespace', ${namespace}, ` : ''}'uid', ${id}, 'resourceVersion', (1000000 + abs(hashtext(${id}::text)) % 1000000)::text,
     'creationTimestamp', to_char($2::timestamptz at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), 'labels', ${labels} ${extra})`;

/** Each kind's CIs, as rows of (ci_id, source_id, scope_id, external_id, ci_type, name, namespace, status, raw_data, type_data). */
function kindRows(estate: Estate, from: number, to: number): string[] {
  const g = 'g';
  const range = `generate_series(${from}, ${to}) g ${deploymentValues(g)}`;
  const deployment = `
    select md5('qb:d:' || g)::uuid as ci_id, ${source('v.c')} as source_id, ${scope('v.c')} as scope_id,
           'deployment/' || v.ns || '/' || v.app as external_id, 'k8s.deployment' as ci_type, v.app as name, v.ns as namespace,
           'active' as status,
           jsonb_build_object(
             'metadata', ${meta('v.app', 'v.ns', "md5('qb:d:' || g)::uuid", "jsonb_build_object('app', v.app, 'team', v.ns, 'tier', v.tier)", `, 'generation', 3, 'annotations', jsonb_build_object('deployment.kubernetes.io/revision', '3', 'meta.helm.sh/release-name', v.app)`)},
             'spec', jsonb_build_object('replicas', v.p, 'selector', jsonb_build_object('matchLabels', jsonb_build_object('app', v.app)),
               'strategy', jsonb_build_object('type', 'RollingUpdate'),
               'template', jsonb_build_object('metadata', jsonb_build_object('labels', jsonb_build_object('app', v.app, 'tier', v.tier)),
                                              'spec', jsonb_build_object('containers', ${container}))),
             'status', jsonb_build_object('replicas', v.p, 'readyReplicas', v.p, 'availableReplicas', v.p, 'observedGeneration', 3)) as raw_data,
           jsonb_build_object('replicas', v.p, 'ready_replicas', v.p, 'image', v.image) as type_data
    from ${range}`;
  const replicaset = `
    select md5('qb:r:' || g || ':' || r)::uuid, ${source('v.c')}, ${scope('v.c')}, 'replicaset/' || v.ns || '/' || ${rsName(g, 'r')},
           'k8s.replicaset', ${rsName(g, 'r')}, v.ns, 'active',
           jsonb_build_object(
             'metadata', ${meta(rsName(g, 'r'), 'v.ns', "md5('qb:r:' || g || ':' || r)::uuid", `jsonb_build_object('app', v.app, 'pod-template-hash', substr(md5('qb:h:' || g || ':' || r), 1, 10))`, `, 'ownerReferences', jsonb_build_array(jsonb_build_object('kind', 'Deployment', 'name', v.app, 'controller', true))`)},
             'spec', jsonb_build_object('replicas', case when r = 0 then v.p else 0 end,
               'template', jsonb_build_object('spec', jsonb_build_object('containers', ${container}))),
             'status', jsonb_build_object('replicas', case when r = 0 then v.p else 0 end, 'readyReplicas', case when r = 0 then v.p else 0 end)),
           jsonb_build_object('replicas', case when r = 0 then v.p else 0 end)
    from ${range} cross join generate_series(0, 1) r`;
  const pod = `
    select md5('qb:p:' || g || ':' || k)::uuid, ${source('v.c')}, ${scope('v.c')}, 'pod/' || v.ns || '/' || ${podName(g, 'k')},
           'k8s.pod', ${podName(g, 'k')}, v.ns, case when (g + k * 7) % 50 = 0 then 'inactive' else 'active' end,
           jsonb_build_object(
             'metadata', ${meta(podName(g, 'k'), 'v.ns', "md5('qb:p:' || g || ':' || k)::uuid", `jsonb_build_object('app', v.app, 'tier', v.tier, 'pod-template-hash', substr(md5('qb:h:' || g || ':0'), 1, 10))`, `, 'ownerReferences', jsonb_build_array(jsonb_build_object('kind', 'ReplicaSet', 'name', ${rsName(g, '0')}, 'controller', true))`)},
             'spec', jsonb_build_object('nodeName', 'node-' || v.c || '-' || ((g::bigint * 131 + k * 17) % ${estate.nodesPerCluster}),
               'containers', ${container}, 'restartPolicy', 'Always', 'serviceAccountName', 'default', 'dnsPolicy', 'ClusterFirst'),
             'status', jsonb_build_object('phase', case when (g + k * 7) % 50 = 0 then 'Failed' else 'Running' end,
               'podIP', '10.' || (100 + v.c) || '.' || ((g::bigint * 16 + k) / 256 % 256) || '.' || ((g::bigint * 16 + k) % 256),
               'hostIP', '10.0.' || v.c || '.' || ((g::bigint * 131 + k * 17) % ${estate.nodesPerCluster} % 256), 'qosClass', 'Burstable',
               'containerStatuses', jsonb_build_array(jsonb_build_object('name', 'app', 'ready', true, 'restartCount', k % 4, 'image', v.image)))),
           jsonb_build_object('phase', case when (g + k * 7) % 50 = 0 then 'Failed' else 'Running' end, 'restarts', k % 4,
             'node', 'node-' || v.c || '-' || ((g::bigint * 131 + k * 17) % ${estate.nodesPerCluster}))
    from ${range} cross join lateral generate_series(1, v.p) k`;
  const service = `
    select md5('qb:s:' || g)::uuid, ${source('v.c')}, ${scope('v.c')}, 'service/' || v.ns || '/' || v.app, 'k8s.service', v.app, v.ns, 'active',
           jsonb_build_object('metadata', ${meta('v.app', 'v.ns', "md5('qb:s:' || g)::uuid", "jsonb_build_object('app', v.app, 'team', v.ns)")},
             'spec', jsonb_build_object('type', 'ClusterIP', 'clusterIP', '172.20.' || (g / 256 % 256) || '.' || (g % 256),
               'selector', jsonb_build_object('app', v.app), 'ports', jsonb_build_array(jsonb_build_object('port', 80, 'targetPort', 8080, 'protocol', 'TCP')))),
           jsonb_build_object('type', 'ClusterIP', 'cluster_ip', '172.20.' || (g / 256 % 256) || '.' || (g % 256))
    from ${range}`;
  const configmap = `
    select md5('qb:c:' || g)::uuid, ${source('v.c')}, ${scope('v.c')}, 'configmap/' || v.ns || '/' || v.app || '-config', 'k8s.configmap',
           v.app || '-config', v.ns, 'active',
           jsonb_build_object('metadata', ${meta("v.app || '-config'", 'v.ns', "md5('qb:c:' || g)::uuid", "jsonb_build_object('app', v.app)")},
             'data_keys', jsonb_build_array('application.yaml', 'logging.properties'), 'binary_data_keys', '[]'::jsonb),
           jsonb_build_object('keys', 2)
    from ${range}`;
  return [deployment, replicaset, pod, service, configmap];
}

/** Nodes and namespaces, once per cluster. */
function clusterRows(estate: Estate): string[] {
  const node = `
    select md5('qb:n:' || c || ':' || m)::uuid, ${source('c')}, ${scope('c')}, 'node/node-' || c || '-' || m, 'k8s.node',
           'node-' || c || '-' || m, null::text, 'active',
           jsonb_build_object(
             'metadata', ${meta("'node-' || c || '-' || m", null, "md5('qb:n:' || c || ':' || m)::uuid", `jsonb_build_object('kubernetes.io/hostname', 'node-' || c || '-' || m, 'topology.kubernetes.io/zone', 'zone-' || (m % 3), 'node.kubernetes.io/instance-type', case when m % 4 = 0 then 'm6i.4xlarge' else 'm6i.2xlarge' end)`)},
             'spec', jsonb_build_object('podCIDR', '10.' || c || '.' || (m % 256) || '.0/24', 'providerID', 'aws:///zone-' || (m % 3) || '/i-' || substr(md5('qb:n:' || c || ':' || m), 1, 17)),
             'status', jsonb_build_object(
               'capacity', jsonb_build_object('cpu', '16', 'memory', '64Gi', 'pods', '110'),
               'allocatable', jsonb_build_object('cpu', '15800m', 'memory', '62Gi', 'pods', '110'),
               'nodeInfo', jsonb_build_object('kubeletVersion', 'v1.30.' || (m % 5), 'containerRuntimeVersion', 'containerd://1.7.13', 'osImage', 'Bottlerocket OS 1.19.2'),
               'conditions', jsonb_build_array(jsonb_build_object('type', 'Ready', 'status', 'True'), jsonb_build_object('type', 'MemoryPressure', 'status', 'False')),
               'addresses', jsonb_build_array(jsonb_build_object('type', 'InternalIP', 'address', '10.0.' || c || '.' || (m % 256))))),
           jsonb_build_object('kubelet', 'v1.30.' || (m % 5), 'cpu', '16', 'memory', '64Gi')
    from generate_series(0, ${CLUSTERS - 1}) c cross join generate_series(0, ${estate.nodesPerCluster - 1}) m`;
  const namespace = `
    select ${nsId('c', 'n')}, ${source('c')}, ${scope('c')}, 'namespace/team-' || n, 'k8s.namespace', 'team-' || n, null::text, 'active',
           jsonb_build_object('metadata', ${meta("'team-' || n", null, nsId('c', 'n'), "jsonb_build_object('kubernetes.io/metadata.name', 'team-' || n, 'team', 'team-' || n)")},
             'spec', jsonb_build_object('finalizers', jsonb_build_array('kubernetes')), 'status', jsonb_build_object('phase', 'Active')),
           jsonb_build_object('phase', 'Active')
    from generate_series(0, ${CLUSTERS - 1}) c cross join generate_series(0, ${NAMESPACES - 1}) n`;
  return [node, namespace];
}

/** A number of 28 bits from a CI's id: where its writes fall in time. */
const idHash = (id: string, at = 1) => `(('x' || substr(md5(${id}::text), ${at}, 7))::bit(28)::int)`;

/**
 * The CI's latest write: anywhere in the last six days, spread evenly by its id; its records are
 * six days apart back from there.
 */
const latestWrite = (estate: Estate, id: string) =>
  `($3::timestamptz - (${idHash(id)} % ${estate.cis})::float8 * ${(EDIT_EVERY_DAYS * DAY_MS) / estate.cis} * interval '1 millisecond')`;

async function insertCis(sql: Sql, estate: Estate, params: unknown[], rows: string): Promise<void> {
  await sql.unsafe(
    `insert into configuration_items (ci_id, tenant_id, source_id, scope_id, external_id, ci_type, name, namespace, status,
                                      status_updated_at, raw_data, type_data, content_hash, created_at, updated_at)
     select k.ci_id, $1, k.source_id, k.scope_id, k.external_id, k.ci_type, k.name, k.namespace, k.status,
            case when k.status <> 'active' then ${latestWrite(estate, 'k.ci_id')} end,
            k.raw_data, k.type_data, '\\x00'::bytea,
            $2::timestamptz + (${idHash('k.ci_id', 9)} % 86400) * interval '1 second', ${latestWrite(estate, 'k.ci_id')}
     from (${rows}) k(ci_id, source_id, scope_id, external_id, ci_type, name, namespace, status, raw_data, type_data)`,
    params as never[],
  );
}

/** The relationships of deployments from..to, as the Kubernetes collector writes them. */
async function insertRelationships(sql: Sql, estate: Estate, params: unknown[], from: number, to: number) {
  const range = `generate_series(${from}, ${to}) g ${deploymentValues('g')}`;
  const edges = `
    select v.c, md5('qb:d:' || g)::uuid, md5('qb:r:' || g || ':' || r)::uuid, 'manages' from ${range} cross join generate_series(0, 1) r
    union all
    select v.c, md5('qb:r:' || g || ':0')::uuid, md5('qb:p:' || g || ':' || k)::uuid, 'manages' from ${range} cross join lateral generate_series(1, v.p) k
    union all
    select v.c, md5('qb:p:' || g || ':' || k)::uuid, md5('qb:n:' || v.c || ':' || ((g::bigint * 131 + k * 17) % ${estate.nodesPerCluster}))::uuid, 'runs_on'
    from ${range} cross join lateral generate_series(1, v.p) k
    union all
    select v.c, md5('qb:s:' || g)::uuid, md5('qb:p:' || g || ':' || k)::uuid, 'routes_to' from ${range} cross join lateral generate_series(1, v.p) k
    union all
    select v.c, m.id, ${nsId('v.c', 'v.nsn')}, 'member_of' from ${range}
    cross join lateral (select md5('qb:d:' || g)::uuid union all select md5('qb:s:' || g)::uuid union all select md5('qb:c:' || g)::uuid
                        union all select md5('qb:r:' || g || ':' || r)::uuid from generate_series(0, 1) r
                        union all select md5('qb:p:' || g || ':' || k)::uuid from generate_series(1, v.p) k) m(id)`;
  await sql.unsafe(
    `insert into relationships (tenant_id, source_id, from_ci_id, to_ci_id, relationship_type, created_at, last_seen, from_scope_id, to_scope_id)
     select $1, ${source('e.c')}, e.from_id, e.to_id, e.type, $2::timestamptz + interval '23 hours', $3::timestamptz, ${scope('e.c')}, ${scope('e.c')}
     from (${edges}) e(c, from_id, to_id, type)`,
    params as never[],
  );
}

/**
 * What each write changed, by CI type: three kinds of edit per type, a CI's record j taking edit
 * (hash + j) % 3. `old` is the value before the write (the new one is the CI's value now).
 */
const EDITS = `(values
  ('k8s.pod', 0, 'raw_data.status.phase', '{status,phase}'::text[], '"Pending"'::jsonb),
  ('k8s.pod', 1, 'raw_data.status.podIP', '{status,podIP}', '"10.255.0.1"'),
  ('k8s.pod', 2, 'raw_data.metadata.resourceVersion', '{metadata,resourceVersion}', '"1"'),
  ('k8s.deployment', 0, 'raw_data.spec.replicas', '{spec,replicas}', '1'),
  ('k8s.deployment', 1, 'raw_data.spec.template.spec.containers', '{spec,template,spec,containers}', '[{"name": "app", "image": "registry.local/app:0.9"}]'),
  ('k8s.deployment', 2, 'raw_data.status.readyReplicas', '{status,readyReplicas}', '0'),
  ('k8s.replicaset', 0, 'raw_data.status.replicas', '{status,replicas}', '0'),
  ('k8s.replicaset', 1, 'raw_data.status.readyReplicas', '{status,readyReplicas}', '0'),
  ('k8s.replicaset', 2, 'raw_data.metadata.resourceVersion', '{metadata,resourceVersion}', '"1"'),
  ('k8s.node', 0, 'raw_data.status.allocatable', '{status,allocatable}', '{"cpu": "15000m", "memory": "60Gi", "pods": "110"}'),
  ('k8s.node', 1, 'raw_data.status.nodeInfo.kubeletVersion', '{status,nodeInfo,kubeletVersion}', '"v1.29.9"'),
  ('k8s.node', 2, 'raw_data.metadata.resourceVersion', '{metadata,resourceVersion}', '"1"'),
  ('k8s.service', 0, 'raw_data.spec.ports', '{spec,ports}', '[]'),
  ('k8s.service', 1, 'raw_data.metadata.labels', '{metadata,labels}', '{}'),
  ('k8s.service', 2, 'raw_data.metadata.resourceVersion', '{metadata,resourceVersion}', '"1"'),
  ('k8s.configmap', 0, 'raw_data.data_keys', '{data_keys}', '[]'),
  ('k8s.configmap', 1, 'raw_data.metadata.labels', '{metadata,labels}', '{}'),
  ('k8s.configmap', 2, 'raw_data.metadata.resourceVersion', '{metadata,resourceVersion}', '"1"'),
  ('k8s.namespace', 0, 'raw_data.metadata.labels', '{metadata,labels}', '{}'),
  ('k8s.namespace', 1, 'raw_data.metadata.resourceVersion', '{metadata,resourceVersion}', '"1"'),
  ('k8s.namespace', 2, 'raw_data.status.phase', '{status,phase}', '"Terminating"')
) as e(ci_type, variant, field, path, old)`;

const editOf = (j: string) =>
  `join ${EDITS} on e.ci_type = c.ci_type and e.variant = (${idHash('c.ci_id', 17)} + ${j}) % 3`;

/**
 * The change records, one month's partition at a time: each filled as a table of its own and then
 * attached, so that its indexes are built once over the month instead of row by row. Ids follow
 * the records' times, as the write order gives them.
 */
async function insertChangeRecords(sql: Sql, end: Date): Promise<number> {
  let written = 0;
  const first = new Date(end.getTime() - RECORDS_PER_CI * EDIT_EVERY_DAYS * DAY_MS);
  for (let month = monthOf(first); month <= end; month = addMonths(month, 1)) {
    const name = partitionName(CHANGE_RECORDS, month);
    const next = addMonths(month, 1);
    await sql.unsafe(`drop table if exists ${name}`);
    await sql.unsafe(`create table ${name} (like change_records including defaults including constraints)`);
    // oldest first: record j of every CI lies in the six days j × 6 days before the CIs' latest writes
    for (let j = RECORDS_PER_CI - 1; j >= 0; j--) {
      const lower = new Date(Math.max(month.getTime(), end.getTime() - (j + 1) * EDIT_EVERY_DAYS * DAY_MS - 1));
      const upper = new Date(Math.min(next.getTime(), end.getTime() - j * EDIT_EVERY_DAYS * DAY_MS + 1));
      if (lower >= upper) continue;
      const [row] = await sql.unsafe<{ n: number }[]>(
        `with rows as (
           select c.tenant_id, c.ci_id, c.source_id, c.scope_id, c.name, c.namespace, c.ci_type, w.at,
                  jsonb_build_array(jsonb_build_object('field', e.field, 'old_value', e.old, 'new_value', c.raw_data #> e.path)) as changes,
                  array[e.field] as changed_fields
           from configuration_items c
           cross join lateral (select c.updated_at - ${j} * interval '${EDIT_EVERY_DAYS} days' as at) w
           ${editOf(String(j))}
           where w.at >= $1::timestamptz and w.at < $2::timestamptz and w.at >= $3::timestamptz and w.at < $4::timestamptz
         ), written as (
           insert into ${name} (id, tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at,
                                changes, changed_fields, search_vector)
           select ${written} + row_number() over (order by at, ci_id), tenant_id, ci_id, source_id, scope_id, name, namespace, ci_type,
                  'UPDATED', at, changes, changed_fields, ''::tsvector
           from rows
           returning 1)
         select count(*)::int as n from written`,
        [month.toISOString(), next.toISOString(), lower.toISOString(), upper.toISOString()],
      );
      written += row!.n;
    }
    await sql.begin(async (tx) => {
      await tx`set local maintenance_work_mem = '512MB'`;
      await tx.unsafe(
        `alter table change_records attach partition ${name} for values from ('${month.toISOString()}') to ('${next.toISOString()}')`,
      );
    });
    console.log(`  change records of ${name}: ${written} in all so far`);
  }
  await sql`select setval(pg_get_serial_sequence('change_records', 'id'), ${written})`;
  return written;
}

/** The way back of the writes of the last UNDO_DAYS days: each CI's latest write there (edit j = 0). */
async function insertUndo(sql: Sql, end: Date): Promise<void> {
  const since = new Date(end.getTime() - UNDO_DAYS * DAY_MS);
  for (let month = monthOf(since); month <= end; month = addMonths(month, 1))
    await createMonthPartition(sql, CI_UNDO, 'ci_undo', month, 0);
  await sql.unsafe(
    `insert into ci_undo (tenant_id, ci_id, at, undo, source_id, ci_type, status, versioned)
     select c.tenant_id, c.ci_id, c.updated_at,
            jsonb_build_array(jsonb_build_object('p', to_jsonb(array['raw_data'] || e.path), 'v', e.old),
                              jsonb_build_object('p', '["updated_at"]'::jsonb, 'v', to_jsonb(c.updated_at - interval '${EDIT_EVERY_DAYS} days'))),
            c.source_id, c.ci_type, c.status, false
     from configuration_items c ${editOf('0')}
     where c.updated_at > $1::timestamptz`,
    [since.toISOString()],
  );
}

async function seed(sql: Sql, size: number): Promise<Seeded> {
  const estate = estateOf(size);
  const marker = `${GENERATOR}:${size}`;
  const sources: string[] = [];
  for (let c = 0; c < CLUSTERS; c++)
    sources.push(String((await ensureSource(sql, DEFAULT_TENANT_ID, `bench-query-${c}`, 'kubernetes')).id));
  const found = await markerOf(sql);
  if (found?.startsWith(`${marker}@`)) return { estate, end: new Date(found.slice(marker.length + 1)), sources };
  const end = new Date(Math.floor(Date.now() / 60_000) * 60_000);
  const start = new Date(end.getTime() - 35 * DAY_MS);
  console.log(
    `generating ${estate.cis} CIs (${estate.deployments} deployments, ${estate.pods} pods, ${estate.nodesPerCluster * CLUSTERS} nodes) ` +
      `and ${RECORDS_PER_CI * estate.cis} change records over 30 days (kept for later runs) ...`,
  );
  const started = performance.now();
  const step = (what: string) => console.log(`  ${what}: ${((performance.now() - started) / 1000).toFixed(0)} s`);
  await sql.unsafe(
    'truncate outbox, relationships, pending_relationships, change_records, change_stats_queue, ci_last_seen, configuration_items, ' +
      'ci_counts, ci_type_counts, ci_count_deltas, ci_undo, ci_tombstones, ci_versions, relationship_history restart identity cascade',
  );
  await sql`update time_machine set exact_since = '-infinity'`;
  const params = [DEFAULT_TENANT_ID, start.toISOString(), end.toISOString(), sources];
  for (const rows of clusterRows(estate)) await insertCis(sql, estate, params, rows);
  const chunk = 10_000;
  for (let from = 0; from < estate.deployments; from += chunk) {
    const to = Math.min(estate.deployments, from + chunk) - 1;
    for (const rows of kindRows(estate, from, to)) await insertCis(sql, estate, params, rows);
    if ((from / chunk) % 2 === 1 || to === estate.deployments - 1) step(`CIs of ${to + 1} deployments`);
  }
  await sql.unsafe(
    `insert into ci_last_seen (ci_id, tenant_id, last_seen)
     select ci_id, tenant_id, coalesce(status_updated_at, $1::timestamptz - (${idHash('ci_id', 20)} % 300) * interval '1 second')
     from configuration_items`,
    [end.toISOString()],
  );
  step('last seen');
  for (let from = 0; from < estate.deployments; from += chunk)
    await insertRelationships(sql, estate, params, from, Math.min(estate.deployments, from + chunk) - 1);
  step('relationships');
  await insertChangeRecords(sql, end);
  step('change records');
  await insertUndo(sql, end);
  step('the way back of the last two days');
  await settlePartitions(sql);
  await foldCiCounts(sql);
  for (const table of [
    'configuration_items',
    'ci_last_seen',
    'ci_versions',
    'relationships',
    'change_records',
    'ci_undo',
    'ci_counts',
    'ci_type_counts',
  ])
    await sql.unsafe(`vacuum analyze ${table}`);
  step('statistics');
  await sql.unsafe(`comment on table configuration_items is '${marker}@${end.toISOString()}'`);
  return { estate, end, sources };
}

// ---------------------------------------------------------------------------------------------
// measuring

interface Timing {
  p50: number;
  p95: number;
}

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;

/** `runs` sequential runs of `once(i)` after two that warm the caches, in ms. */
async function timed(runs: number, once: (i: number) => Promise<unknown>): Promise<Timing> {
  const ms: number[] = [];
  for (let i = 0; i < runs + 2; i++) {
    const started = performance.now();
    await once(i);
    if (i >= 2) ms.push(performance.now() - started);
  }
  return { p50: percentile(ms, 50), p95: percentile(ms, 95) };
}

/** At most `width` at a time, in order. */
async function inParallel<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await work(items[i]!);
      }
    }),
  );
  return out;
}

class Client {
  constructor(
    private readonly base: string,
    private readonly key: string,
  ) {}

  async get<T = any>(path: string): Promise<T> {
    const reply = await fetch(this.base + path, { headers: { 'x-api-key': this.key } });
    const body = await reply.json();
    if (reply.status !== 200) throw new Error(`GET ${path}: ${reply.status} ${JSON.stringify(body)}`);
    return body as T;
  }

  async query<T = any>(body: Record<string, unknown>): Promise<T> {
    const reply = await fetch(`${this.base}/api/v1/query`, {
      method: 'POST',
      headers: { 'x-api-key': this.key, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const answer = await reply.json();
    if (reply.status !== 200)
      throw new Error(`query ${JSON.stringify(body)}: ${reply.status} ${JSON.stringify(answer)}`);
    return answer as T;
  }
}

const CIS = '/api/v1/configuration-items';
const idsOf = (body: { items: { ci_id: string }[] }) => body.items.map((item) => item.ci_id);
const sameList = (label: string, ours: readonly string[], theirs: readonly string[]) => {
  if (ours.join() !== theirs.join())
    throw new Error(`${label}: the query answers ${ours.length} CIs, today's endpoints ${theirs.length}, not the same`);
};

/** The selective query: the active pods on one node, by name. */
const selective = (node: string) => `ci_type = k8s.pod and raw_data.spec.nodeName = "${node}"`;
const selectiveToday = (node: string) =>
  `${CIS}?filter=ci_type:eq:k8s.pod&filter=raw_data.spec.nodeName:eq:${node}&sort_by=name&sort_order=asc&limit=100`;

/** The nodes the pods of a deployment run on, by the relationship lists walked by hand. */
async function nodesByHand(client: Client, g: number): Promise<string[]> {
  const [deployment] = idsOf(
    await client.get(`${CIS}?filter=ci_type:eq:k8s.deployment&filter=name:eq:app-${g}&limit=1`),
  );
  const related = async (id: string, type: string, ciType: string) =>
    (
      await client.get<{ items: { related_ci_id: string; related_ci_type: string }[] }>(
        `${CIS}/${id}/relationships?relationship_types=${type}&direction=outgoing&limit=5000`,
      )
    ).items
      .filter((item) => item.related_ci_type === ciType)
      .map((item) => item.related_ci_id);
  const replicaSets = await related(deployment!, 'manages', 'k8s.replicaset');
  const pods = (await inParallel(replicaSets, 8, (rs) => related(rs, 'manages', 'k8s.pod'))).flat();
  const nodes = (await inParallel(pods, 8, (pod) => related(pod, 'runs_on', 'k8s.node'))).flat();
  return [...new Set(nodes)].sort();
}

interface Change {
  ci_id: string;
  ci_name: string;
}

/**
 * The first page of the CIs of a type with a change under `field` in a window, by name, from the
 * change list (every page of it) and then each CI of the page (now, or at `asOf`).
 */
async function changedByHand(
  client: Client,
  window: { since: string; until?: string; asOf?: string },
  field: string,
  ciType: string,
): Promise<string[]> {
  const seen = new Map<string, string>();
  for (let offset = 0; ; offset += 1000) {
    const until = window.until ? `&end_date=${encodeURIComponent(window.until)}` : '';
    const page = await client.get<{ items: Change[] }>(
      `/api/v1/changes?start_date=${encodeURIComponent(window.since)}${until}&filter=ci_type:eq:${ciType}` +
        `&filter=changed_field:startswith:${field}&limit=1000&offset=${offset}`,
    );
    for (const change of page.items) seen.set(change.ci_id, change.ci_name);
    if (page.items.length < 1000) break;
  }
  const byName = [...seen].sort(([a, an], [b, bn]) => (an < bn ? -1 : an > bn ? 1 : a < b ? -1 : 1)).slice(0, 120);
  const asOf = window.asOf ? `?as_of=${encodeURIComponent(window.asOf)}` : '';
  const details = await inParallel(byName, 8, ([id]) =>
    client.get<{ ci_id: string; status: string }>(`${CIS}/${id}${asOf}`),
  );
  return details
    .filter((ci) => ci.status === 'active')
    .map((ci) => ci.ci_id)
    .slice(0, 100);
}

/** Counts by type and namespace from the list's totals: one filtered list per pair. */
async function countsByHand(client: Client): Promise<Map<string, number>> {
  const pairs: [string, string | null][] = [
    ['k8s.node', null],
    ['k8s.namespace', null],
    ...NAMESPACED.flatMap((type) =>
      Array.from({ length: NAMESPACES }, (_, n) => [type, `team-${n}`] as [string, string]),
    ),
  ];
  const totals = await inParallel(pairs, 8, async ([type, namespace]) => {
    const filter = namespace ? `&filter=namespace:eq:${namespace}` : '';
    return (await client.get<{ total: number }>(`${CIS}?filter=ci_type:eq:${type}${filter}&limit=1`)).total;
  });
  return new Map(pairs.map(([type, namespace], i) => [`${type}|${namespace}`, totals[i]!]));
}

function machineLoad(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

export async function benchQuery(size = 1_000_000): Promise<Figure[]> {
  const sql = await benchDatabase(DATABASE);
  const figures: Figure[] = [];
  let server: RunningServer | undefined;
  try {
    const seeded = await seed(sql, size);
    await settlePartitions(sql);
    const { estate, end } = seeded;
    const full = size >= 1_000_000;
    const [counted] = await sql<{ cis: number; records: number }[]>`
      select (select count(*)::int from configuration_items) as cis, (select count(*)::int from change_records) as records`;
    console.log(`${counted!.cis} CIs, ${counted!.records} change records, history up to ${end.toISOString()}`);
    const admin = await benchKey(sql, 'adm');
    const scopedCluster = 3;
    const { key: scoped } = await issueApiKey(sql, BENCH_SECRET, {
      tenantId: DEFAULT_TENANT_ID,
      name: `bench-scoped-${Date.now()}`,
      tier: 'ro',
      scopes: [{ sourceId: seeded.sources[scopedCluster]!, scopeId: `cluster-${scopedCluster}` }],
    });
    server = await serveBench(DATABASE, { ...SERVE_ENV, CINV_QUERY_RATE_LIMIT: '1000000/1000000' });
    const client = new Client(server.base, admin);
    const scopedClient = new Client(server.base, scoped);
    const loadBefore = machineLoad();
    console.log(`machine load (1, 5, 15 min) before measuring: ${loadBefore}`);

    const pair = (label: string, query: Timing, today: Timing, target?: number, todayLabel = "today's endpoints") => {
      console.log(
        `  ${label.padEnd(44)} query p50 ${query.p50.toFixed(0).padStart(5)} p95 ${query.p95.toFixed(0).padStart(5)} ms | ` +
          `${todayLabel} p50 ${today.p50.toFixed(0).padStart(6)} p95 ${today.p95.toFixed(0).padStart(6)} ms | ` +
          `today's ÷ query ${(today.p50 / query.p50).toFixed(2)}`,
      );
      figures.push(
        {
          bench: 'query',
          path: `${label}: query`,
          value: Math.round(query.p95),
          unit: 'ms p95',
          target: full ? target : undefined,
        },
        { bench: 'query', path: `${label}: ${todayLabel}`, value: Math.round(today.p95), unit: 'ms p95' },
        { bench: 'query', path: `${label}: today's ÷ query (p50)`, value: today.p50 / query.p50, unit: 'ratio' },
      );
    };
    const nodeOf = (i: number, cluster = i % CLUSTERS) => `node-${cluster}-${(i * 7) % estate.nodesPerCluster}`;

    // a selective predicate: the pods on one node (about 100), the first page
    for (const i of [0, 1]) {
      const answer = await client.query({ query: selective(nodeOf(i)) });
      sameList('selective query', idsOf(answer), idsOf(await client.get(selectiveToday(nodeOf(i)))));
    }
    pair(
      'selective: pods on a node, first page',
      await timed(30, (i) => client.query({ query: selective(nodeOf(i)) })),
      await timed(30, (i) => client.get(selectiveToday(nodeOf(i)))),
      100,
      'list ?filter=',
    );
    const scopedNode = (i: number) => nodeOf(i, scopedCluster);
    sameList(
      'scoped selective query',
      idsOf(await scopedClient.query({ query: selective(scopedNode(0)) })),
      idsOf(await scopedClient.get(selectiveToday(scopedNode(0)))),
    );
    pair(
      'selective, key scoped to one cluster',
      await timed(30, (i) => scopedClient.query({ query: selective(scopedNode(i)) })),
      await timed(30, (i) => scopedClient.get(selectiveToday(scopedNode(i)))),
      100,
      'list ?filter=',
    );

    // two hops from one deployment: its pods (through its replica sets), then their nodes
    const deploymentOf = (i: number) => (i * 7919) % estate.deployments;
    const twoHops = (g: number) =>
      `ci_type = k8s.deployment and name = "app-${g}" -[manages 2]-> ci_type = k8s.pod -[runs_on]-> ci_type = k8s.node`;
    for (const i of [0, 1]) {
      const answer = await client.query({ query: twoHops(deploymentOf(i)) });
      sameList('two hops', [...idsOf(answer)].sort(), await nodesByHand(client, deploymentOf(i)));
    }
    pair(
      'two hops: deployment → pods → nodes',
      await timed(30, (i) => client.query({ query: twoHops(deploymentOf(i)) })),
      await timed(30, (i) => nodesByHand(client, deploymentOf(i))),
      300,
      'relationship lists by hand',
    );

    // count by type and namespace over the whole inventory
    const countQuery = { query: '* | count by ci_type, namespace' };
    const groups = (
      await client.query<{ groups: { key: { ci_type: string; namespace: string | null }; count: number }[] }>(
        countQuery,
      )
    ).groups;
    const byHand = await countsByHand(client);
    for (const group of groups) {
      const theirs = byHand.get(`${group.key.ci_type}|${group.key.namespace}`);
      if (theirs !== group.count)
        throw new Error(`count by: ${JSON.stringify(group.key)} is ${group.count} by the query, ${theirs} by the list`);
    }
    console.log(`  count by: ${groups.length} groups, the same counts as ${byHand.size} list totals`);
    pair(
      'count by ci_type, namespace',
      await timed(10, () => client.query(countQuery)),
      await timed(3, () => countsByHand(client)),
      500,
      `${byHand.size} list totals, 8 at a time`,
    );

    // history: the deployments whose spec changed in the last day, and the same a day back
    const iso = (ms: number) => new Date(ms).toISOString();
    const dayBack = iso(end.getTime() - DAY_MS);
    const history = (since: string) => `ci_type = k8s.deployment and changed raw_data.spec since ${since}`;
    const present = { query: history(dayBack) };
    const past = { query: history(iso(end.getTime() - 2 * DAY_MS)), as_of: dayBack };
    const presentByHand = () => changedByHand(client, { since: dayBack }, 'raw_data.spec', 'k8s.deployment');
    const pastByHand = () =>
      changedByHand(
        client,
        { since: iso(end.getTime() - 2 * DAY_MS), until: dayBack, asOf: dayBack },
        'raw_data.spec',
        'k8s.deployment',
      );
    sameList('history', idsOf(await client.query(present)), await presentByHand());
    sameList('history as_of', idsOf(await client.query(past)), await pastByHand());
    const now = await timed(20, () => client.query(present));
    pair('history: spec changed over one day', now, await timed(5, presentByHand), 500, 'change list + details');
    const then = await timed(20, () => client.query(past));
    pair('the same as_of a day back', then, await timed(5, pastByHand), undefined, 'change list + details as_of');
    console.log(`  as_of ÷ present (p95): ${(then.p95 / now.p95).toFixed(2)}`);
    figures.push({
      bench: 'query',
      path: 'history as_of a day back ÷ present (p95)',
      value: then.p95 / now.p95,
      unit: 'ratio',
      target: full ? 2 : undefined,
    });

    // explain: the plan without running it
    for (const [label, text] of [
      ['explain: selective', selective(nodeOf(0))],
      ['explain: two hops', twoHops(deploymentOf(0))],
    ] as const) {
      const plan = await timed(30, () => client.query({ query: text, explain: true }));
      console.log(
        `  ${label.padEnd(44)} p50 ${plan.p50.toFixed(0).padStart(5)} p95 ${plan.p95.toFixed(0).padStart(5)} ms`,
      );
      figures.push({
        bench: 'query',
        path: label,
        value: Math.round(plan.p95),
        unit: 'ms p95',
        target: full ? 50 : undefined,
      });
    }
    const loadAfter = machineLoad();
    console.log(`machine load (1, 5, 15 min) after measuring: ${loadAfter}`);
    figures.push(
      {
        bench: 'query',
        path: 'machine load (1 min) before measuring',
        value: Number(loadBefore.split(' ')[0]),
        unit: 'load',
      },
      {
        bench: 'query',
        path: 'machine load (1 min) after measuring',
        value: Number(loadAfter.split(' ')[0]),
        unit: 'load',
      },
    );
    return figures;
  } finally {
    await server?.stop();
    await sql.end();
  }
}
