/**
 * The inventory the identities benchmark reads (kept in cinv_bench_identities between runs):
 * 1 000 000 CIs written with set-based SQL, among them `HOSTS` machines each seen ten times (a
 * `k8s.node`, a `host.linux` and eight servers of eight sources recording their host facts), the
 * pods on those nodes, filler CIs, the observations' change history, and `CONFLICTS` nodes of a
 * second cluster named like a machine but with another machine id: each an open conflict. The
 * identities are then resolved by the identity worker itself, as on its first start (one
 * `catchUpIdentities`: the backfill).
 */
import type { Sql } from '../../src/platform/db/database.js';
import { foldCiCounts } from '../../src/inventory/configuration-items/counts.js';
import { catchUpIdentities } from '../../src/inventory/identities/worker.js';
import { refreshStatsAggregate } from '../../src/history/records/stats-store.js';
import { ensureSource } from '../../src/collection/sources/store.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { settlePartitions } from './common.js';

export const TOTAL_CIS = 1_000_000;
export const HOSTS = 3_000;
export const CONFLICTS = 300;
const PODS_PER_NODE = 110;
const CHANGES_PER_OBSERVATION = 50;
const DAY_S = 86_400;

/** The servers on every machine: CI type and collector type, one source each. */
export const SERVERS = [
  ['postgresql.server', 'postgresql'],
  ['redis.server', 'redis'],
  ['rabbitmq.node', 'rabbitmq'],
  ['nats.server', 'nats'],
  ['mysql.server', 'mysql'],
  ['mongodb.server', 'mongodb'],
  ['elasticsearch.node', 'elasticsearch'],
  ['kafka.node', 'kafka'],
] as const;

const MARKER = `identities-v1:${TOTAL_CIS}:${HOSTS}x10:${CONFLICTS}`;

async function markerOf(sql: Sql): Promise<string | null> {
  const [row] = await sql<
    { marker: string | null }[]
  >`select obj_description('identities'::regclass, 'pg_class') as marker`;
  return row?.marker ?? null;
}

/** `insert into configuration_items` of generated rows: `rows` selects (ci_id, source_id, external_id, ci_type, name, namespace, raw_data, type_data). */
async function insertCis(sql: Sql, rows: ReturnType<Sql['unsafe']>): Promise<void> {
  await sql`
    insert into configuration_items (ci_id, tenant_id, source_id, scope_id, external_id, ci_type, name, namespace, status,
                                     raw_data, type_data, content_hash, created_at, updated_at)
    select r.ci_id, ${DEFAULT_TENANT_ID}, r.source_id, 'prod', r.external_id, r.ci_type, r.name, r.namespace, 'active',
           r.raw_data, r.type_data, decode(md5(r.raw_data::text || r.type_data::text), 'hex'), now() - interval '30 days', now()
    from (${rows}) r(ci_id, source_id, external_id, ci_type, name, namespace, raw_data, type_data)`;
}

/** The machines: the host facts every observation of host `h` shares (a conflict node has its own machine id). */
const HOST_FACTS = `
  'host-' || h as hostname, '10.1.' || (h >> 8) || '.' || (h & 255) as address,
  md5('machine-' || h) as machine_id, md5('product-' || h)::uuid::text as product_uuid`;

async function insertObservations(sql: Sql, sources: Record<string, string>): Promise<void> {
  // the nodes, as the kubelet reports them
  await insertCis(
    sql,
    sql.unsafe(`
    select md5('node-' || h)::uuid as ci_id, ${sources.k8s}::bigint as source_id, 'node/' || hostname as external_id,
           'k8s.node' as ci_type, hostname as name, null::text as namespace,
           jsonb_build_object('metadata', jsonb_build_object('name', hostname, 'uid', md5('node-' || h)::uuid),
             'status', jsonb_build_object(
               'nodeInfo', jsonb_build_object('machineID', machine_id, 'systemUUID', product_uuid,
                 'osImage', 'Ubuntu 22.04.3 LTS', 'kernelVersion', '5.15.0-91-generic', 'architecture', 'amd64',
                 'kubeletVersion', 'v1.30.2'),
               'addresses', jsonb_build_array(jsonb_build_object('type', 'InternalIP', 'address', address),
                                              jsonb_build_object('type', 'Hostname', 'address', hostname)),
               'capacity', jsonb_build_object('cpu', '8', 'memory', '32Gi', 'pods', '110'))) as raw_data,
           jsonb_build_object('kubelet', 'v1.30.2') as type_data
    from (select h, ${HOST_FACTS} from generate_series(0, ${HOSTS - 1}) h) m`),
  );
  // node_exporter through Prometheus
  await insertCis(
    sql,
    sql.unsafe(`
    select md5('linux-' || h)::uuid, ${sources.prometheus}::bigint, 'host/' || hostname, 'host.linux', hostname, null,
           '{}'::jsonb,
           jsonb_build_object('hostname', hostname, 'os_name', 'Ubuntu', 'os_version', '22.04.3', 'kernel', '5.15.0-91-generic',
             'architecture', 'x86_64', 'cpu_count', 8, 'memory_bytes', 34359738368,
             'host', jsonb_build_object('hostname', hostname, 'addresses', jsonb_build_array(address),
                                        'machine_id', machine_id, 'product_uuid', product_uuid))
    from (select h, ${HOST_FACTS} from generate_series(0, ${HOSTS - 1}) h) m`),
  );
  // the servers on each machine; half of the collector types know the machine id, the others name and address only
  for (const [index, [ciType]] of SERVERS.entries()) {
    await insertCis(
      sql,
      sql.unsafe(`
      select md5('${ciType}-' || h)::uuid, ${sources[ciType]}::bigint, '${ciType}/' || hostname || ':1', '${ciType}',
             hostname || ':1', null, '{}'::jsonb,
             jsonb_build_object('version', '1.${index}', 'host', jsonb_build_object('hostname', hostname,
               'addresses', jsonb_build_array(address)${index % 2 === 0 ? `, 'machine_id', machine_id` : ''}))
      from (select h, ${HOST_FACTS} from generate_series(0, ${HOSTS - 1}) h) m`),
    );
  }
  // a second cluster's nodes, named like a machine of the first but with another machine id
  await insertCis(
    sql,
    sql.unsafe(`
    select md5('other-node-' || c)::uuid, ${sources.k8sOther}::bigint, 'node/host-' || (c * 10), 'k8s.node',
           'host-' || (c * 10), null,
           jsonb_build_object('status', jsonb_build_object(
             'nodeInfo', jsonb_build_object('machineID', md5('other-machine-' || c), 'osImage', 'Bottlerocket OS 1.19.2'),
             'addresses', jsonb_build_array(jsonb_build_object('type', 'InternalIP', 'address', '10.2.' || (c >> 8) || '.' || (c & 255))))),
           '{}'::jsonb
    from generate_series(0, ${CONFLICTS - 1}) c`),
  );
}

/** The pods on the nodes (with their `runs_on` relationships) and filler CIs up to `TOTAL_CIS`. */
async function insertTheRest(sql: Sql, k8s: string): Promise<void> {
  const pods = HOSTS * PODS_PER_NODE;
  await insertCis(
    sql,
    sql.unsafe(`
    select md5('pod-' || p)::uuid, ${k8s}::bigint, 'pod/team-' || (p % 400) || '/app-' || p, 'k8s.pod', 'app-' || p,
           'team-' || (p % 400),
           jsonb_build_object('spec', jsonb_build_object('nodeName', 'host-' || (p % ${HOSTS})), 'status', jsonb_build_object('phase', 'Running')),
           jsonb_build_object('phase', 'Running', 'node', 'host-' || (p % ${HOSTS}))
    from generate_series(0, ${pods - 1}) p`),
  );
  await sql`
    insert into relationships (tenant_id, source_id, from_ci_id, to_ci_id, relationship_type, created_at, last_seen, from_scope_id, to_scope_id)
    select ${DEFAULT_TENANT_ID}, ${k8s}::bigint, md5('pod-' || p)::uuid, md5('node-' || (p % ${HOSTS}))::uuid, 'runs_on',
           now() - interval '30 days', now(), 'prod', 'prod'
    from generate_series(0, ${pods - 1}) p`;
  const [counted] = await sql<{ n: number }[]>`select count(*)::int as n from configuration_items`;
  const filler = TOTAL_CIS - counted!.n;
  for (let from = 0; from < filler; from += 200_000) {
    await insertCis(
      sql,
      sql.unsafe(`
      select md5('configmap-' || e)::uuid, ${k8s}::bigint, 'configmap/team-' || (e % 400) || '/config-' || e, 'k8s.configmap',
             'config-' || e, 'team-' || (e % 400),
             jsonb_build_object('data', jsonb_build_object('app.yaml', 'port: 8080')), jsonb_build_object('keys', 1)
      from generate_series(${from}, ${Math.min(filler, from + 200_000) - 1}) e`),
    );
  }
}

/** The observations' history: `CHANGES_PER_OBSERVATION` UPDATED records each over the last 30 days. */
async function insertHistory(sql: Sql): Promise<void> {
  await sql`
    insert into change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at,
                                changes, changed_fields, search_vector)
    select c.tenant_id, c.ci_id, c.source_id, c.scope_id, c.name, c.namespace, c.ci_type, 'UPDATED',
           now() - ((g * 30 * ${DAY_S}) / ${CHANGES_PER_OBSERVATION} + (hashtext(c.ci_id::text) & 65535)) * interval '1 second',
           jsonb_build_array(jsonb_build_object('field', 'type_data.version', 'old_value', '1.0', 'new_value', '1.1')),
           array['type_data.version'], ''::tsvector
    from configuration_items c cross join generate_series(0, ${CHANGES_PER_OBSERVATION - 1}) g
    where c.ci_type not in ('k8s.pod', 'k8s.configmap')`;
  await sql`
    insert into ci_last_seen (ci_id, tenant_id, last_seen)
    select ci_id, tenant_id, now() from configuration_items where ci_type not in ('k8s.configmap')`;
}

/** The CIs, relationships and history, written once: an interrupted seeding resumes after them. */
async function seedInventory(sql: Sql, elapsed: () => string): Promise<void> {
  const [row] = await sql<
    { marker: string | null }[]
  >`select obj_description('configuration_items'::regclass, 'pg_class') as marker`;
  if (row?.marker === `${MARKER}:inventory`) return;
  await sql.unsafe(
    'truncate identities, identity_observations, identity_keys, identity_links, identity_conflicts, identity_decisions, identity_progress, ' +
      'outbox, relationships, pending_relationships, change_records, change_stats_queue, change_stats_buckets, change_stats_days, change_stats_ci_last, ' +
      'change_stats_affected, ci_last_seen, configuration_items, ci_versions, ci_undo, ci_counts, ci_type_counts, ci_count_deltas, change_feed restart identity cascade',
  );
  await sql`update change_stats_state set refreshed_at = '-infinity'`;
  const source = async (name: string, type: string) => (await ensureSource(sql, DEFAULT_TENANT_ID, name, type)).id;
  const sources: Record<string, string> = {
    k8s: await source('bench-cluster', 'kubernetes'),
    k8sOther: await source('bench-cluster-b', 'kubernetes'),
    prometheus: await source('bench-prometheus', 'prometheus'),
  };
  for (const [ciType, collectorType] of SERVERS)
    sources[ciType] = await source(`bench-${collectorType}`, collectorType);
  await insertObservations(sql, sources);
  console.log(`  ${HOSTS * 10 + CONFLICTS} observing CIs, ${elapsed()}`);
  await insertTheRest(sql, sources.k8s!);
  console.log(`  ${TOTAL_CIS} CIs and the pods' relationships, ${elapsed()}`);
  await insertHistory(sql);
  console.log(`  change history, ${elapsed()}`);
  await sql.unsafe(`comment on table configuration_items is '${MARKER}:inventory'`);
}

/** Builds the inventory unless the database holds exactly it already. */
export async function seedIdentities(sql: Sql): Promise<void> {
  if ((await markerOf(sql)) === MARKER) return;
  console.log(`generating ${TOTAL_CIS} CIs, ${HOSTS} machines seen 10 times each (kept for later runs) ...`);
  const started = performance.now();
  const elapsed = () => `${((performance.now() - started) / 1000).toFixed(0)} s`;
  await seedInventory(sql, elapsed);
  await settlePartitions(sql);
  await refreshStatsAggregate(sql, new Date(), 50_000);
  await foldCiCounts(sql);
  await sql.unsafe('vacuum analyze');
  const resolveStarted = performance.now();
  const read = await catchUpIdentities(sql, () => new Date());
  console.log(`  identity worker's first start: ${read} CIs resolved in ${seconds(resolveStarted)} s`);
  await sql.unsafe('vacuum analyze');
  await sql.unsafe(`comment on table identities is '${MARKER}'`);
  console.log(`  seeded in ${elapsed()}`);
}

const seconds = (started: number) => ((performance.now() - started) / 1000).toFixed(1);
