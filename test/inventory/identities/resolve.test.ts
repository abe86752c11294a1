import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { catchUpIdentities } from '../../../src/inventory/identities/worker.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { ingest } from '../../support/factories.js';
import { server } from './records.js';

const node = (name: string, machineID: string, address: string, osImage = 'Ubuntu 22.04.3 LTS'): UniversalRecord => ({
  external_id: `node/${name}`,
  ci_type: 'k8s.node',
  name,
  namespace: null,
  raw_data: {
    metadata: { name },
    status: {
      nodeInfo: { machineID, systemUUID: '', osImage, kernelVersion: '6.1.0', kubeletVersion: 'v1.29.1' },
      addresses: [
        { type: 'InternalIP', address },
        { type: 'Hostname', address: name },
      ],
      capacity: { cpu: '4', memory: '16Gi' },
    },
  },
  type_data: {},
});

const linux = (hostname: string, osVersion: string): UniversalRecord => ({
  external_id: `host/${hostname}:9100`,
  ci_type: 'host.linux',
  name: hostname,
  namespace: null,
  raw_data: { hostname, os_version: osVersion },
  type_data: { hostname, os_name: 'Ubuntu', os_version: osVersion, kernel: '6.1.0', cpu_count: 4 },
});

const redis = (
  name: string,
  hostname: string | null,
  addresses: string[],
  machineId: string | null,
): UniversalRecord => ({
  external_id: `server/${name}`,
  ci_type: 'redis.server',
  name,
  namespace: null,
  raw_data: { version: '7.0.15' },
  type_data: {
    host: { hostname, addresses, machine_id: machineId, product_uuid: null, endpoint: `${addresses[0]}:6379` },
  },
});

describe('identity resolution over the change feed', () => {
  let sql: Awaited<ReturnType<typeof testDatabase>>['sql'];
  before(async () => {
    sql = (await testDatabase()).sql;
  });
  beforeEach(async () => {
    await resetDatabase(sql);
  });

  const identities = (kind = 'host') =>
    sql<{ id: string; name: string; observation_count: number; ci_types: string[] }[]>`
      select i.id, i.name, i.observation_count, array_agg(o.ci_type order by o.ci_type) as ci_types
      from identities i join identity_observations o on o.identity_id = i.id
      where i.retired_at is null and i.kind = ${kind} group by i.id order by i.name`;

  it('links a node, its node_exporter host and a server running on it into one host identity', async () => {
    await ingest(sql, [node('node-1', 'aa11', '10.0.0.1'), node('node-2', 'bb22', '10.0.0.2')], { source: 'k8s' });
    await ingest(sql, [linux('node-1', '22.04.4 LTS')], { source: 'prom' });
    await ingest(sql, [redis('cache', null, ['10.0.0.1'], 'aa11')], { source: 'redis' });
    await catchUpIdentities(sql, () => new Date());
    const found = await identities();
    expect(found.map((i) => [i.name, i.ci_types])).to.deep.equal([
      ['node-1', ['host.linux', 'k8s.node', 'redis.server']],
      ['node-2', ['k8s.node']],
    ]);
  });

  it('raises a conflict instead of merging when a weaker rule joins different machine ids', async () => {
    await ingest(sql, [node('web', 'aa11', '10.0.0.1')], { source: 'east' });
    await ingest(sql, [node('web', 'cc33', '10.0.0.9')], { source: 'west' });
    await ingest(sql, [linux('web', '22.04')], { source: 'prom' });
    await catchUpIdentities(sql, () => new Date());
    expect((await identities()).map((i) => i.ci_types.join()).sort()).to.deep.equal([
      'host.linux',
      'k8s.node',
      'k8s.node',
    ]);
    const conflicts = await sql<{ rule: string; shared_values: string[]; groups: string[][] }[]>`
      select rule, shared_values, groups from identity_conflicts where status = 'open'`;
    expect(conflicts).to.have.lengthOf(1);
    expect(conflicts[0]!.rule).to.equal('hostname');
    expect(conflicts[0]!.groups).to.have.lengthOf(3);
  });

  it('keeps the identity id when observations come and go, and retires it when the last goes', async () => {
    const { sourceId } = await ingest(sql, [node('node-1', 'aa11', '10.0.0.1')], { source: 'k8s' });
    await catchUpIdentities(sql, () => new Date());
    const [first] = await identities();
    await ingest(sql, [linux('node-1', '22.04')], { source: 'prom' });
    await catchUpIdentities(sql, () => new Date());
    const [second] = await identities();
    expect(second!.id).to.equal(first!.id);
    expect(second!.observation_count).to.equal(2);
    await ingest(sql, [], { source: 'k8s', mode: 'delta', deletions: ['node/node-1'] });
    await ingest(sql, [], { source: 'prom', mode: 'delta', deletions: ['host/node-1:9100'] });
    await catchUpIdentities(sql, () => new Date());
    expect(await identities()).to.deep.equal([]);
    const [retired] = await sql<
      { retired_at: Date | null }[]
    >`select retired_at from identities where id = ${first!.id}`;
    expect(retired!.retired_at).to.be.instanceOf(Date);
    expect(sourceId).to.be.a('string');
  });

  it('on a first start resolves what is stored already, and then follows the feed', async () => {
    await ingest(sql, [node('node-1', 'aa11', '10.0.0.1')], { source: 'k8s' });
    await ingest(sql, [linux('node-1', '22.04')], { source: 'prom' });
    await catchUpIdentities(sql, () => new Date());
    const before = (await identities()).map((i) => i.ci_types);
    // an installation that had no identities: nothing of them yet, and a feed already read past
    await sql`truncate identities, identity_observations, identity_keys, identity_links, identity_conflicts, identity_progress`;
    await catchUpIdentities(sql, () => new Date());
    expect((await identities()).map((i) => i.ci_types)).to.deep.equal(before);
    const [place] = await sql<{ backfill_after: string | null }[]>`select backfill_after from identity_progress`;
    expect(place!.backfill_after).to.equal(null);
    await ingest(sql, [redis('cache', null, ['10.0.0.1'], 'aa11')], { source: 'redis' });
    await catchUpIdentities(sql, () => new Date());
    expect((await identities()).map((i) => i.ci_types)).to.deep.equal([['host.linux', 'k8s.node', 'redis.server']]);
  });

  it('recognises one database server read by two sources, apart from the other servers of its machine', async () => {
    const machine = { hostname: 'db-1', addresses: ['10.0.0.5'], machine_id: 'aa11' };
    await ingest(sql, [server('postgresql.server', 'pg-main', 5432, machine)], { source: 'pg-a' });
    // another collector reaches the same server by its address, and learns nothing else of the machine
    const remote = { hostname: null, addresses: ['10.0.0.5'], machine_id: null };
    await ingest(sql, [server('postgresql.server', 'pg-replica-view', 5432, remote)], { source: 'pg-b' });
    await ingest(sql, [server('postgresql.server', 'pg-reports', 5433, machine)], { source: 'pg-c' });
    await ingest(sql, [server('mariadb.server', 'mysql-main', 5432, machine)], { source: 'mysql' });
    await catchUpIdentities(sql, () => new Date());

    const servers = await identities('database-server');
    expect(servers.map((i) => [i.name, i.ci_types])).to.deep.equal([
      ['mysql-main', ['mariadb.server']],
      ['pg-main', ['postgresql.server', 'postgresql.server']],
      ['pg-reports', ['postgresql.server']],
    ]);
    // and every one of them runs on the one host
    expect((await identities('host')).map((i) => [i.name, i.observation_count])).to.deep.equal([['db-1', 4]]);
    const [fields] = await sql<{ fields: Record<string, { value: unknown }> }[]>`
      select o.fields from identity_observations o join configuration_items c on c.ci_id = o.ci_id
      where o.kind = 'database-server' and c.name = 'pg-main'`;
    expect(Object.fromEntries(Object.entries(fields!.fields).map(([k, v]) => [k, v.value]))).to.deep.equal({
      name: 'pg-main',
      product: 'postgresql',
      version: '15.19',
      port: 5432,
      role: 'primary',
      hostname: 'db-1',
      machine_id: 'aa11',
      max_connections: 100,
    });
  });

  it('raises a conflict when two servers on one port of one machine name different data directories', async () => {
    const machine = { hostname: 'db-1', addresses: ['10.0.0.5'], machine_id: 'aa11' };
    await ingest(sql, [server('mariadb.server', 'mysql-old', 3306, machine, '3f1e-aa')], { source: 'old' });
    await ingest(sql, [server('mariadb.server', 'mysql-new', 3306, machine, '9c2d-bb')], { source: 'new' });
    await catchUpIdentities(sql, () => new Date());
    expect((await identities('database-server')).map((i) => i.name)).to.deep.equal(['mysql-new', 'mysql-old']);
    const conflicts = await sql<{ kind: string; rule: string; shared_values: string[] }[]>`
      select kind, rule, shared_values from identity_conflicts where status = 'open'`;
    expect(conflicts).to.deep.equal([
      { kind: 'database-server', rule: 'port-on-machine-id', shared_values: ['machine_id=mysql:3306@aa11'] },
    ]);
  });

  it('identifies the database servers stored before they were identities, once the upgrade asks for it', async () => {
    const machine = { hostname: 'db-1', addresses: ['10.0.0.5'], machine_id: 'aa11' };
    await ingest(sql, [server('postgresql.server', 'pg-main', 5432, machine)], { source: 'pg-a' });
    await catchUpIdentities(sql, () => new Date());
    // as an installation that resolved hosts only: no database-server rows, the backfill long done
    await sql`delete from identity_links where kind = 'database-server'`;
    await sql`delete from identity_keys where kind = 'database-server'`;
    await sql`delete from identity_observations where kind = 'database-server'`;
    await sql`delete from identities where kind = 'database-server'`;
    await catchUpIdentities(sql, () => new Date());
    expect(await identities('database-server'), 'no change record names the server again').to.deep.equal([]);
    await sql.unsafe(readFileSync(new URL('../../../sql/0047_identity_database_servers.sql', import.meta.url), 'utf8'));
    await catchUpIdentities(sql, () => new Date());
    expect((await identities('database-server')).map((i) => i.name)).to.deep.equal(['pg-main']);
    expect((await identities('host')).map((i) => [i.name, i.observation_count])).to.deep.equal([['db-1', 1]]);
  });
});
