import { expect } from 'chai';
import type { Sql } from '../../../src/platform/db/database.js';
import { loadDemo, removeDemo, type DemoOutcome } from '../../../src/collection/demo/service.js';
import { buildDemo } from '../../../src/collection/demo/timeline.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';

const NOW = new Date('2026-11-20T15:27:00Z');
const END = new Date('2026-11-20T15:00:00Z');
const DAY = 86_400_000;
const SERVERS = ['redis', 'mariadb', 'nats', 'rabbitmq'];
const SOURCE_NAMES = [
  'demo-east',
  'demo-west',
  'demo-prometheus',
  'demo-postgresql',
  ...['east', 'west'].flatMap((cluster) => SERVERS.map((kind) => `demo-${kind}-${cluster}`)),
];

describe('cinv demo: a generated inventory with a week of history', function () {
  this.timeout(600_000);
  let sql: Sql;
  let app: TestApp;
  let admin: string;
  let loaded: DemoOutcome;
  const lines: string[] = [];

  before(async () => {
    sql = (await testDatabase()).sql;
    await resetDatabase(sql);
    loaded = await loadDemo(sql, {
      tenantId: DEFAULT_TENANT_ID,
      now: NOW,
      batchSize: 1000,
      progress: (done, total, what) => lines.push(`${done}/${total} ${what}`),
    });
    app = await startTestApp();
    admin = await createKey(sql, 'adm');
  });
  after(async () => {
    await app?.close();
  });

  it('is the same every time for the same hour: the clusters and their events are generated, not random', () => {
    const [one, two] = [buildDemo(END), buildDemo(END)];
    expect(one.east.all()).to.deep.equal(two.east.all());
    expect(one.steps.map((s) => [s.at.toISOString(), s.what])).to.deep.equal(
      two.steps.map((s) => [s.at.toISOString(), s.what]),
    );
    expect(one.steps[0]!.at.toISOString()).to.equal(new Date(END.getTime() - 7 * DAY).toISOString());
    expect(one.steps.at(-1)!.at.toISOString()).to.equal(END.toISOString());
  });

  it('loads two clusters with their servers, a Prometheus and a PostgreSQL as disabled demo sources, with progress per event', async () => {
    expect(loaded.loaded).to.equal(true);
    if (!loaded.loaded) return;
    expect(loaded.sources).to.deep.equal(SOURCE_NAMES);
    expect(lines).to.have.lengthOf(loaded.steps);
    expect(lines.at(-1)).to.match(new RegExp(`^${loaded.steps}/${loaded.steps} 2026-11-20 15:00 latest collection`));
    const sources = (await app.get('/api/v1/sources?limit=100', admin)).body.items;
    expect(sources.map((s: { name: string; status: string }) => `${s.name}:${s.status}`).sort()).to.deep.equal(
      SOURCE_NAMES.map((name) => `${name}:disabled`).sort(),
    );
    // each says when it was last collected, and that it was healthy then: a source holding CIs is not 'not collected yet'
    for (const source of sources as {
      name: string;
      last_collection: string | null;
      health_status: { status: string } | null;
    }[]) {
      // the Prometheus was collected for the last time three hours before the end: its hosts are stale
      const last = source.name === 'demo-prometheus' ? /^2026-11-20T12:00:00/ : /^2026-11-20T1[45]:00:00/;
      expect(source.last_collection, source.name).to.match(last);
      expect(source.health_status?.status, source.name).to.equal('healthy');
    }
    const types = await sql<{ ci_type: string; n: number }[]>`
      select ci_type, count(*)::int as n from configuration_items where status = 'active' group by 1 order by 1`;
    const count = Object.fromEntries(types.map((t) => [t.ci_type, t.n]));
    expect(count['k8s.pod']).to.be.above(600);
    expect(count['k8s.node']).to.equal(20);
    expect(count['k8s.deployment']).to.equal(7 * 17 + 5 * 15);
    expect(count['host.linux']).to.equal(20);
    expect(count['postgresql.role']).to.equal(8);
    for (const server of ['redis.server', 'mariadb.server', 'nats.server']) expect(count[server], server).to.equal(2);
    expect(count['redis.database']).to.equal(32);
    expect(count['redis.peer']).to.equal(2);
    expect(count['redis.user']).to.equal(6);
    expect(count['mariadb.database']).to.equal(6 + 4 + 2 * 2);
    expect(count['mariadb.role']).to.equal(2);
    expect(count['mariadb.replica']).to.equal(2);
    expect(count['nats.stream']).to.equal(6);
    expect(count['nats.consumer']).to.equal(11);
    expect(count['rabbitmq.cluster']).to.equal(2);
    expect(count['rabbitmq.node']).to.equal(6);
    expect(count['rabbitmq.vhost']).to.equal(6);
    expect(count['rabbitmq.exchange']).to.equal(2 * (3 * 6 + 3));
    expect(count['rabbitmq.queue']).to.equal(12);
    expect(count['rabbitmq.policy']).to.equal(3);
    const total = types.reduce((sum, t) => sum + t.n, 0);
    expect(total).to.be.within(1500, 3000);
  });

  it('holds a week of history: rollouts, scaling, a node replaced, and the incident after a configuration change', async () => {
    const [span] = await sql<{ first: Date; last: Date; updated: number; deleted: number }[]>`
      select min(changed_at) as first, max(changed_at) as last,
             count(*) filter (where change_type = 'UPDATED')::int as updated, count(*) filter (where change_type = 'DELETED')::int as deleted
      from change_records`;
    expect(span!.first.toISOString()).to.equal(new Date(END.getTime() - 7 * DAY).toISOString());
    expect(span!.updated).to.be.above(200);
    expect(span!.deleted).to.be.above(200);
    const [east] = await sql<{ ci_id: string }[]>`
      select ci_id from configuration_items where ci_type = 'k8s.deployment' and namespace = 'shop' and name = 'checkout' and scope_id = 'east'`;
    const history = (await app.get(`/api/v1/ci-changes/${east!.ci_id}?limit=100`, admin)).body.items as {
      changed_at: string;
      changes: { field: string; new_value: unknown }[];
    }[];
    const yesterday = (hour: string) => history.find((c) => c.changed_at.startsWith(`2026-11-19T${hour}`));
    const shipped = yesterday('13:40');
    expect(JSON.stringify(shipped!.changes)).to.include('PAYMENT_TIMEOUT_MS');
    const crashing = yesterday('13:52');
    expect(crashing!.changes.find((c) => c.field === 'raw_data.status.readyReplicas')?.new_value).to.equal(0);
    expect(yesterday('14:20'), 'the rollback').to.not.equal(undefined);
    // the change searched by its words, and counted in the statistics without a refresh
    const found = await app.get('/api/v1/changes/search?query=PAYMENT_TIMEOUT_MS', admin);
    expect(found.body.total).to.be.above(0);
    const stats = await app.get('/api/v1/changes/stats?group_by=day', admin);
    expect(stats.body.total_changes).to.be.above(1000);
    // a replaced node: archived with its DELETED record, its successor created the same day
    const nodes = await app.get('/api/v1/configuration-items?filter=ci_type:eq:k8s.node&status=archived', admin);
    expect(nodes.body.items.map((n: { name: string }) => n.name)).to.deep.equal(['west-node-03']);
  });

  it("runs each cluster's servers on its nodes, as their collector types record them, each source in its own scope", async () => {
    const servers = await sql<{ ci_type: string; scope_id: string; host: Record<string, unknown>; source: string }[]>`
      select ci.ci_type, ci.scope_id, ci.type_data -> 'host' as host, s.name as source
      from configuration_items ci join sources s on s.id = ci.source_id
      where ci.ci_type in ('redis.server', 'mariadb.server', 'nats.server') order by ci.scope_id`;
    expect(servers.map((s) => `${s.source} ${s.scope_id}`)).to.deep.equal([
      'demo-mariadb-east mariadb-east',
      'demo-mariadb-west mariadb-west',
      'demo-nats-east nats-east',
      'demo-nats-west nats-west',
      'demo-redis-east redis-east',
      'demo-redis-west redis-west',
    ]);
    const host = (scope: string) => servers.find((s) => s.scope_id === scope)!.host;
    expect(host('mariadb-east')).to.include({
      hostname: 'east-node-05',
      machine_id: null,
      product_uuid: null,
      endpoint: 'mariadb-east.demo.invalid:3306',
    });
    // the node_exporter on that node names the same machine, as Prometheus sees it
    const [exporter] = await sql<{ host: Record<string, unknown> }[]>`
      select type_data -> 'host' as host from configuration_items where ci_type = 'host.linux' and name = 'east-node-05'`;
    const [kubelet] = await sql<{ uuid: string }[]>`
      select raw_data #>> '{status,nodeInfo,systemUUID}' as uuid from configuration_items
      where ci_type = 'k8s.node' and name = 'east-node-05'`;
    expect(exporter!.host).to.deep.equal({
      hostname: 'east-node-05',
      addresses: ['east-node-05'],
      machine_id: null,
      // node_dmi_info's product UUID: the machine the kubelet reports as its systemUUID
      product_uuid: kubelet!.uuid.toLowerCase(),
      endpoint: 'east-node-05:9100',
    });
    expect(host('nats-west')).to.include({ hostname: 'west-node-06', endpoint: 'nats-west.demo.invalid:8222' });
    // Redis names no host: its bind address is the node's, the same the cluster lists for that node
    const [node] = await sql<{ address: string }[]>`
      select raw_data #>> '{status,addresses,0,address}' as address from configuration_items
      where ci_type = 'k8s.node' and name = 'east-node-04'`;
    expect(host('redis-east').addresses).to.include(node!.address);
    const [rabbit] = await sql<{ host: Record<string, unknown> }[]>`
      select type_data -> 'host' as host from configuration_items where ci_type = 'rabbitmq.node' and name = 'rabbit@west-node-07'`;
    expect(rabbit!.host).to.include({ hostname: 'west-node-07', endpoint: 'rabbitmq-west.demo.invalid:15672' });
    // what the collector types never keep, the demo's answers never bring in
    const secrets = await sql<{ n: number }[]>`
      select count(*)::int as n from configuration_items
      where ci_type like 'redis.%' and (raw_data::text like '%requirepass%' or raw_data::text like '%passwords%')`;
    expect(secrets[0]!.n).to.equal(0);
  });

  it('links each node to one host identity with its node_exporter host and servers; a stale OS version competes, a reused host name is for review', async () => {
    // as the demo's hour is read: the Prometheus stale (last seen 12:00), the clusters not
    app.clock.now = NOW;
    type Field = { value: unknown; source_id: string; reason: string; competing: { value: unknown; stale: boolean }[] };
    const identityOf = async (name: string) => {
      const [node] = await sql<{ ci_id: string }[]>`
        select ci_id from configuration_items where ci_type = 'k8s.node' and status = 'active' and name = ${name}`;
      const ci = (await app.get(`/api/v1/configuration-items/${node!.ci_id}`, admin)).body;
      const reply = await app.get(`/api/v1/identities/${ci.identity.id}`, admin);
      expect(reply.status, reply.text).to.equal(200);
      return reply.body as { fields: Record<string, Field>; observations: { ci_type: string; name: string }[] };
    };
    const nodes = await sql<{ name: string }[]>`
      select name from configuration_items where ci_type = 'k8s.node' and status = 'active' order by name`;
    expect(nodes).to.have.lengthOf(20);
    for (const { name } of nodes) {
      const identity = await identityOf(name);
      const types = identity.observations.map((o) => o.ci_type);
      expect(types, name).to.include('k8s.node');
      // the replaced machine's node is kept apart from the host that names the old one
      if (name !== 'east-node-07') expect(types, name).to.include('host.linux');
      expect(identity.observations.length, name).to.be.at.least(2);
    }
    const five = await identityOf('east-node-05');
    expect(five.observations.map((o) => `${o.ci_type} ${o.name}`)).to.include.members([
      'host.linux east-node-05',
      'mariadb.server mariadb-east',
      'rabbitmq.node rabbit@east-node-05',
    ]);
    // a Redis names no machine: the address it listens on links it to its node
    const linked = await sql<{ name: string; nodes: number }[]>`
      select ci.name, (select count(*)::int from identity_observations o2 where o2.identity_id = o.identity_id and o2.ci_type = 'k8s.node') as nodes
      from configuration_items ci join identity_observations o on o.ci_id = ci.ci_id and o.kind = 'host'
      where ci.ci_type = 'redis.server' order by ci.name`;
    expect(linked.map((r) => `${r.name}:${r.nodes}`)).to.deep.equal(['redis-east:1', 'redis-west:1']);
    // and each database server is an identity of its own, on its port of that host
    const servers = await sql<{ name: string; ci_types: string[] }[]>`
      select i.name, array_agg(o.ci_type order by o.ci_type) as ci_types from identities i
      join identity_observations o on o.identity_id = i.id
      where i.kind = 'database-server' and i.retired_at is null group by i.id, i.name order by i.name`;
    expect(servers.map((s) => `${s.name} ${s.ci_types.join()}`)).to.include.members([
      'mariadb-east mariadb.server',
      'redis-west redis.server',
    ]);
    // east-node-02's kubelet reports the new release; its node_exporter host, stale, the old one
    const upgraded = (await identityOf('east-node-02')).fields['os.version']!;
    expect(upgraded).to.deep.include({ value: '1.21.1', reason: 'precedence' });
    expect(upgraded.competing).to.deep.equal([{ ...upgraded.competing[0], value: '1.20.3', stale: true }]);
    const conflicts = (await app.get('/api/v1/identities/conflicts', admin)).body.items as {
      rule: string;
      shared_values: string[];
      groups: { ci_type: string; name: string }[][];
    }[];
    expect(conflicts.length).to.be.at.least(1);
    const reused = conflicts.find((c) => c.shared_values.includes('hostname=east-node-07'))!;
    expect(reused.rule).to.equal('hostname');
    expect(reused.groups.map((g) => g.map((o) => o.ci_type).sort())).to.have.deep.members([
      ['k8s.node', 'rabbitmq.node'],
      ['host.linux'],
    ]);
  });

  it('holds a configuration change of each server type in the week, and only metrics move otherwise', async () => {
    const changed = async (scope: string, ciType: string, name: string) => {
      const [ci] = await sql<{ ci_id: string }[]>`
        select ci_id from configuration_items where scope_id = ${scope} and ci_type = ${ciType} and name = ${name}`;
      return (await app.get(`/api/v1/ci-changes/${ci!.ci_id}?limit=100`, admin)).body.items as {
        change_type: string;
        changed_at: string;
        changes: { field: string; old_value: unknown; new_value: unknown }[];
      }[];
    };
    const updates = (history: Awaited<ReturnType<typeof changed>>) =>
      history
        .filter((c) => c.change_type === 'UPDATED')
        .map((c) => ({ at: c.changed_at.slice(0, 16), fields: c.changes }));
    const redis = updates(await changed('redis-east', 'redis.server', 'redis-east'));
    expect(redis.map((c) => c.at)).to.deep.equal(['2026-11-15T10:15']);
    expect(JSON.stringify(redis[0]!.fields)).to.include('allkeys-lru').and.include('noeviction');
    const mariadb = updates(await changed('mariadb-east', 'mariadb.server', 'mariadb-east'));
    expect(mariadb.map((c) => c.at)).to.deep.equal(['2026-11-16T11:30']);
    expect(mariadb[0]!.fields.find((f) => f.field === 'raw_data.variables.max_connections')).to.include({
      old_value: 151,
      new_value: 300,
    });
    const stream = updates(await changed('nats-east', 'nats.stream', 'ORDERS'));
    expect(stream.map((c) => c.at)).to.deep.equal(['2026-11-17T14:00']);
    expect(JSON.stringify(stream[0]!.fields)).to.include('raw_data.config.max_age');
    const consumer = await changed('nats-west', 'nats.consumer', 'reindex-worker');
    expect(consumer.map((c) => `${c.change_type} ${c.changed_at.slice(0, 16)}`)).to.deep.equal([
      'CREATED 2026-11-18T17:30',
    ]);
    const policy = updates(await changed('rabbitmq-east', 'rabbitmq.policy', 'limits'));
    expect(policy.map((c) => c.at)).to.deep.equal(['2026-11-16T15:00']);
    expect(JSON.stringify(policy[0]!.fields)).to.include('250000');
    const refunds = updates(await changed('rabbitmq-west', 'rabbitmq.queue', 'refunds'));
    expect(refunds.map((c) => c.at)).to.deep.equal(['2026-11-18T13:00']);
    expect(refunds[0]!.fields.find((f) => f.field === 'raw_data.policy')).to.include({ new_value: 'dead-letter' });
    // checkout's queue lost its consumers before the incident and got them back after it: metrics, no change record
    expect(
      lines.some((line) => / 2026-11-19 13:30 rabbitmq-east: .*checkout\.payments has no consumers/.test(line)),
    ).to.equal(true);
    const queue = await changed('rabbitmq-east', 'rabbitmq.queue', 'checkout.payments');
    expect(queue.map((c) => c.change_type)).to.deep.equal(['CREATED']);
    // the servers are reported at every collection, their counters moving: no update of theirs but the reconfigurations
    const [other] = await sql<{ n: number }[]>`
      select count(*)::int as n from change_records cr join sources s on s.id = cr.source_id
      where s.name like 'demo-%-%' and s.name not in ('demo-east', 'demo-west') and cr.change_type = 'UPDATED'`;
    expect(other!.n).to.equal(7);
  });

  it("leads from checkout's deployment to yesterday's crash loop: the pods it ran then, their restarts and their archiving", async () => {
    const [deployment] = await sql<{ ci_id: string }[]>`
      select ci_id from configuration_items where ci_type = 'k8s.deployment' and namespace = 'shop' and name = 'checkout' and scope_id = 'east'`;
    const graph = await app.get(
      `/api/v1/configuration-items/${deployment!.ci_id}/graph?direction=downstream&depth=2&include_inactive=true&max_nodes=200`,
      admin,
    );
    expect(graph.status).to.equal(200);
    const nodes = graph.body.nodes as { name: string; ci_type: string; status: string; depth: number }[];
    // the replica sets of earlier rollouts stay, scaled to 0; the pods they ran are archived, and still reached
    const archivedPods = nodes.filter((node) => node.ci_type === 'k8s.pod' && node.status === 'archived');
    expect(archivedPods.length).to.be.at.least(3);
    expect(archivedPods.every((pod) => pod.depth === 2)).to.equal(true);
    expect(nodes.filter((node) => node.ci_type === 'k8s.replicaset').length).to.be.at.least(3);
    expect((graph.body.edges as { ended_at?: string }[]).some((edge) => edge.ended_at)).to.equal(true);
    const activeOnly = await app.get(
      `/api/v1/configuration-items/${deployment!.ci_id}/graph?direction=downstream&depth=2&max_nodes=200`,
      admin,
    );
    expect((activeOnly.body.nodes as { status: string }[]).every((node) => node.status === 'active')).to.equal(true);

    // one timeline around the deployment: the cause, the crash loop on the pods, the rollback
    const around = await app.get(
      `/api/v1/changes?related_to=${deployment!.ci_id}&direction=downstream&start_date=2026-11-19T13:30:00Z&end_date=2026-11-19T14:30:00Z&limit=500`,
      admin,
    );
    expect(around.status).to.equal(200);
    const records = around.body.items as {
      ci_type: string;
      ci_name: string;
      change_type: string;
      changed_at: string;
      changes: { field: string }[];
    }[];
    const restarts = records.filter(
      (r) =>
        r.ci_type === 'k8s.pod' &&
        r.changes.some(
          (c) => c.field === 'raw_data.status.containerStatuses' && /"restartCount":[1-9]/.test(JSON.stringify(c)),
        ),
    );
    expect(new Set(restarts.map((r) => r.ci_name)).size, 'pods whose restart count rose').to.be.at.least(3);
    expect(
      records.some((r) => r.ci_type === 'k8s.deployment' && JSON.stringify(r).includes('PAYMENT_TIMEOUT_MS')),
    ).to.equal(true);
    expect(
      records.filter(
        (r) => r.ci_type === 'k8s.pod' && r.change_type === 'DELETED' && r.changed_at.startsWith('2026-11-19T14:20'),
      ).length,
    ).to.be.at.least(3);
  });

  it('changes nothing when loaded again, and is removed whole with everything it brought', async () => {
    const [before] = await sql<{ n: number }[]>`select count(*)::int as n from change_records`;
    const again = await loadDemo(sql, {
      tenantId: DEFAULT_TENANT_ID,
      now: new Date(NOW.getTime() + DAY),
      batchSize: 1000,
      progress: () => undefined,
    });
    expect(again).to.deep.equal({ loaded: false, sources: SOURCE_NAMES });
    const [after] = await sql<{ n: number }[]>`select count(*)::int as n from change_records`;
    expect(after!.n).to.equal(before!.n);

    const removed = await removeDemo(sql, DEFAULT_TENANT_ID, NOW);
    expect(removed.sources).to.have.lengthOf(SOURCE_NAMES.length);
    expect(removed.changes).to.equal(before!.n);
    const left = await sql<{ table: string; n: number }[]>`
      select 'cis' as table, count(*)::int as n from configuration_items
      union all select 'changes', count(*)::int from change_records
      union all select 'relationships', count(*)::int from relationships
      union all select 'queue', count(*)::int from change_stats_queue
      union all select 'buckets', count(*)::int from change_stats_buckets
      union all select 'sources', count(*)::int from sources
      union all select 'collectors', count(*)::int from collectors`;
    expect(Object.fromEntries(left.map((r) => [r.table, r.n]))).to.deep.equal({
      cis: 0,
      changes: 0,
      relationships: 0,
      queue: 0,
      buckets: 0,
      sources: 0,
      collectors: 0,
    });
    const stats = await app.get('/api/v1/changes/stats', admin);
    expect(stats.body.total_changes).to.equal(0);
    const list = await app.get('/api/v1/configuration-items?status=all', admin);
    expect(list.body.total).to.equal(0);
    // the identities went with their observations
    expect((await app.get('/api/v1/identities', admin)).body.items).to.deep.equal([]);
    expect((await app.get('/api/v1/identities/conflicts', admin)).body.items).to.deep.equal([]);
  });
});
