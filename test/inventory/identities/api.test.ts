import { expect } from 'chai';
import { catchUpIdentities } from '../../../src/inventory/identities/worker.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { createKey, useTestApp } from '../../support/app.js';
import { ingest } from '../../support/factories.js';
import { server } from './records.js';

const node = (name: string, machineID: string, address: string, osImage: string): UniversalRecord => ({
  external_id: `node/${name}`,
  ci_type: 'k8s.node',
  name,
  namespace: null,
  raw_data: {
    metadata: { name },
    status: {
      nodeInfo: { machineID, osImage, kernelVersion: '6.1.0', kubeletVersion: 'v1.29.1' },
      addresses: [
        { type: 'InternalIP', address },
        { type: 'Hostname', address: name },
      ],
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
  type_data: { hostname, os_name: 'Ubuntu', os_version: osVersion, kernel: '6.1.0' },
});

interface Listed {
  id: string;
  name: string;
  observation_count: number;
}

describe('the identities API', () => {
  const app = useTestApp();
  let admin: string;
  let k8s: string;
  let prom: string;

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
    k8s = (await ingest(app.current.sql, [node('node-1', 'aa11', '10.0.0.1', 'Ubuntu 22.04.3 LTS')], { source: 'k8s' }))
      .sourceId;
    prom = (await ingest(app.current.sql, [linux('node-1', '22.04.4 LTS (Jammy Jellyfish)')], { source: 'prom' }))
      .sourceId;
    await catchUpIdentities(app.current.sql, () => app.current.clock.now);
  });

  const listed = async (key = admin) => {
    const reply = await app.current.get('/api/v1/identities', key);
    expect(reply.status).to.equal(200);
    return (reply.body as { items: Listed[] }).items;
  };

  it('lists one host identity for a node and the node_exporter host of the same name, with provenance per field', async () => {
    const [identity, ...rest] = await listed();
    expect(rest).to.deep.equal([]);
    expect(identity).to.include({ name: 'node-1', observation_count: 2 });
    const reply = await app.current.get(`/api/v1/identities/${identity!.id}`, admin);
    expect(reply.status).to.equal(200);
    const body = reply.body as {
      fields: Record<string, { value: unknown; source_id: string; reason: string; competing: { value: unknown }[] }>;
      observations: { ci_type: string }[];
    };
    expect(body.observations.map((o) => o.ci_type)).to.deep.equal(['host.linux', 'k8s.node']);
    // node_exporter is preferred for the operating system; the kubelet's value competes
    expect(body.fields['os.version']).to.deep.include({ value: '22.04.4', source_id: prom, reason: 'precedence' });
    expect(body.fields['os.version']!.competing.map((c) => c.value)).to.deep.equal(['22.04.3']);
    expect(body.fields.kubelet_version).to.deep.include({ value: 'v1.29.1', source_id: k8s });
  });

  it('shows a caller scoped to one source only what that source says, and nothing of the other', async () => {
    const scoped = await createKey(app.current.sql, 'ro', { scopes: [{ sourceId: k8s, scopeId: null }] });
    const [identity] = await listed(scoped);
    expect(identity!.observation_count).to.equal(1);
    const reply = await app.current.get(`/api/v1/identities/${identity!.id}`, scoped);
    const body = reply.body as {
      fields: Record<string, { source_id: string; competing: unknown[] }>;
      observations: unknown[];
    };
    expect(body.observations).to.have.lengthOf(1);
    expect(Object.values(body.fields).every((f) => f.source_id === k8s && f.competing.length === 0)).to.equal(true);
    expect(reply.text).to.not.include(prom === k8s ? 'never' : `"source_id":"${prom}"`);
    const other = (await ingest(app.current.sql, [], { source: 'other' })).sourceId;
    const outsider = await createKey(app.current.sql, 'ro', { scopes: [{ sourceId: other, scopeId: null }] });
    expect(await listed(outsider)).to.deep.equal([]);
    expect((await app.current.get(`/api/v1/identities/${identity!.id}`, outsider)).status).to.equal(404);
  });

  it('keeps apart on a person’s decision, audits it, and undoing it restores the identity', async () => {
    const [before] = await listed();
    const cis = await app.current.sql<{ ci_id: string }[]>`select ci_id from identity_observations order by ci_type`;
    const decided = await app.current.request('POST', '/api/v1/identities/decisions', {
      key: admin,
      body: { action: 'keep_apart', ci_ids: cis.map((c) => c.ci_id), reason: 'two machines share the name' },
    });
    expect(decided.status).to.equal(201);
    expect((await listed()).map((i) => i.observation_count)).to.deep.equal([1, 1]);
    const audit = await app.current.sql`select event_type from audit_events where event_type = 'identity.decided'`;
    expect(audit).to.have.lengthOf(1);
    const undone = await app.current.request(
      'DELETE',
      `/api/v1/identities/decisions/${(decided.body as { id: string }).id}`,
      {
        key: admin,
      },
    );
    expect(undone.status).to.equal(200);
    const after = await listed();
    expect(after).to.have.lengthOf(1);
    expect(after[0]!.id).to.equal(before!.id);
  });

  it('pins a field to a source', async () => {
    const [identity] = await listed();
    const [nodeCi] = await app.current.sql<
      { ci_id: string }[]
    >`select ci_id from identity_observations where ci_type = 'k8s.node'`;
    const pinned = await app.current.request('POST', '/api/v1/identities/decisions', {
      key: admin,
      body: { action: 'pin', ci_ids: [nodeCi!.ci_id], field: 'os.version', source_id: k8s },
    });
    expect(pinned.status).to.equal(201);
    const body = (await app.current.get(`/api/v1/identities/${identity!.id}`, admin)).body as {
      fields: Record<string, { value: unknown; reason: string }>;
    };
    expect(body.fields['os.version']).to.deep.include({ value: '22.04.3', reason: 'pinned' });
  });

  it('answers a dry run without writing: which identity an observation would link, and why', async () => {
    const [identity] = await listed();
    const reply = await app.current.request('POST', '/api/v1/identities/identify', {
      key: admin,
      body: { ci_type: 'redis.server', type_data: { host: { hostname: 'node-1', addresses: ['10.0.0.1'] } } },
    });
    expect(reply.status).to.equal(200);
    const body = reply.body as { identity_id: string; matches: { rule: string }[] };
    expect(body.identity_id).to.equal(identity!.id);
    expect(body.matches.map((m) => m.rule)).to.include('hostname-and-address');
    expect(await app.current.sql`select 1 from identity_observations where ci_type = 'redis.server'`).to.have.lengthOf(
      0,
    );
  });

  it('raises a conflict for two machines of one name, and settles it by a decision', async () => {
    await ingest(app.current.sql, [node('node-1', 'ff99', '10.9.9.9', 'Ubuntu 24.04 LTS')], { source: 'west' });
    await catchUpIdentities(app.current.sql, () => app.current.clock.now);
    const queue = await app.current.get('/api/v1/identities/conflicts', admin);
    expect(queue.status).to.equal(200);
    const [conflict] = (queue.body as { items: { id: string; rule: string; groups: { ci_id: string }[][] }[] }).items;
    expect(conflict!.rule).to.equal('hostname');
    const settled = await app.current.request('POST', '/api/v1/identities/decisions', {
      key: admin,
      // one observation of each group: each pair named is two things
      body: { action: 'keep_apart', ci_ids: conflict!.groups.map((g) => g[0]!.ci_id), conflict_id: conflict!.id },
    });
    expect(settled.status, settled.text).to.equal(201);
    const open = (await app.current.get('/api/v1/identities/conflicts', admin)).body as { items: unknown[] };
    expect(open.items).to.deep.equal([]);
  });

  it('refuses rules from a scoped caller and re-resolves under new rules', async () => {
    const scoped = await createKey(app.current.sql, 'svc', {
      permissions: ['configuration_items:read', 'configuration_items:write'],
      scopes: [{ sourceId: k8s, scopeId: null }],
    });
    const shipped = (await app.current.get('/api/v1/identities/rules', admin)).body as { rules: { host: unknown } };
    const refused = await app.current.request('PUT', '/api/v1/identities/rules', { key: scoped, body: shipped.rules });
    expect(refused.status).to.equal(403);
    const host = shipped.rules.host as { identification: { name: string }[] };
    const strict = { host: { ...host, identification: host.identification.filter((r) => r.name !== 'hostname') } };
    const put = await app.current.request('PUT', '/api/v1/identities/rules', { key: admin, body: strict });
    expect(put.status).to.equal(200);
    expect((await listed()).map((i) => i.observation_count)).to.deep.equal([1, 1]);
  });
});

const pgServer = (name: string, address: string): UniversalRecord =>
  server('postgresql.server', name, 5432, { hostname: null, addresses: [address], machine_id: null });

describe('the identities API over database servers', () => {
  const app = useTestApp();

  it('keeps a kind’s rules to its own keys, replaces only the kinds named, and decides about a server apart from its host', async () => {
    const admin = await createKey(app.current.sql, 'adm');
    await ingest(app.current.sql, [pgServer('pg-a', '10.0.0.5')], { source: 'pg-a' });
    await ingest(app.current.sql, [pgServer('pg-b', '10.0.0.5')], { source: 'pg-b' });
    await catchUpIdentities(app.current.sql, () => app.current.clock.now);
    const servers = async () =>
      ((await app.current.get('/api/v1/identities?filter=kind:eq:database-server', admin)).body.items as Listed[]).map(
        (i) => i.observation_count,
      );
    expect(await servers()).to.deep.equal([2]);
    const [server] = (await app.current.get('/api/v1/identities?filter=kind:eq:database-server', admin)).body.items;
    const dry = await app.current.request('POST', '/api/v1/identities/identify', {
      key: admin,
      body: { ...pgServer('pg-c', '10.0.0.5'), kind: 'database-server', external_id: undefined, namespace: undefined },
    });
    expect(dry.status, dry.text).to.equal(200);
    expect(dry.body).to.deep.include({ kind: 'database-server', identity_id: server.id });
    expect(dry.body.matches.map((m: { rule: string }) => m.rule)).to.deep.equal(['port-on-address', 'port-on-address']);

    const shipped = (await app.current.get('/api/v1/identities/rules', admin)).body;
    expect(Object.keys(shipped.rules)).to.deep.equal(['host', 'database-server']);
    const wrong = {
      host: { ...shipped.rules.host, identification: [{ name: 'uuid', keys: ['server_uuid'], exclusive: true }] },
    };
    const refused = await app.current.request('PUT', '/api/v1/identities/rules', { key: admin, body: wrong });
    expect(refused.status, refused.text).to.equal(422);
    expect(refused.body.error.details.errors[0].message).to.include('a host has no key server_uuid');
    expect(refused.body.error.details.errors[0].message).to.include('machine_id');

    // the two servers kept apart by a person: the host they both run on stays one
    const [a, b] = await app.current.sql<{ ci_id: string }[]>`
      select ci_id from identity_observations where kind = 'database-server' order by ci_id`;
    const apart = await app.current.request('POST', '/api/v1/identities/decisions', {
      key: admin,
      body: { action: 'keep_apart', kind: 'database-server', ci_ids: [a!.ci_id, b!.ci_id] },
    });
    expect(apart.status, apart.text).to.equal(201);
    expect(apart.body.kind).to.equal('database-server');
    expect(await servers()).to.deep.equal([1, 1]);
    const hosts = (await app.current.get('/api/v1/identities?filter=kind:eq:host', admin)).body.items as Listed[];
    expect(hosts.map((h) => h.observation_count)).to.deep.equal([2]);
    // a pin names a field of the kind decided about
    const pin = await app.current.request('POST', '/api/v1/identities/decisions', {
      key: admin,
      body: { action: 'pin', kind: 'database-server', ci_ids: [a!.ci_id], field: 'os.version', source_id: '1' },
    });
    expect(pin.status, pin.text).to.equal(422);
    expect(pin.text).to.include('must be one of name, product, version, port');

    // replacing the database servers' rules leaves the host's as they were
    const onlyServers = {
      'database-server': {
        ...shipped.rules['database-server'],
        identification: [{ name: 'uuid', keys: ['server_uuid'], exclusive: true }],
      },
    };
    const put = await app.current.request('PUT', '/api/v1/identities/rules', { key: admin, body: onlyServers });
    expect(put.status, put.text).to.equal(200);
    expect(put.body.rules.host).to.deep.equal(shipped.rules.host);
    expect(put.body.rules['database-server'].identification.map((r: { name: string }) => r.name)).to.deep.equal([
      'uuid',
    ]);
    const empty = await app.current.request('PUT', '/api/v1/identities/rules', { key: admin, body: {} });
    expect(empty.status, empty.text).to.equal(422);
    // a CI type is any text: one named like a property every object has identifies nothing
    for (const ciType of ['constructor', '__proto__', 'toString']) {
      const odd = await app.current.request('POST', '/api/v1/identities/identify', {
        key: admin,
        body: { ci_type: ciType, type_data: { host: { hostname: 'db-1' } } },
      });
      expect(odd.status, odd.text).to.equal(200);
      expect(odd.body.kind, ciType).to.equal('host');
    }
  });
});

describe('a configuration item names its identity', () => {
  const app = useTestApp();

  it('in its detail, null for a CI that observes no host', async () => {
    const admin = await createKey(app.current.sql, 'adm');
    await ingest(app.current.sql, [node('node-7', 'ab77', '10.0.0.7', 'Debian 12')], { source: 'k8s' });
    await catchUpIdentities(app.current.sql, () => app.current.clock.now);
    const [observed] = await app.current.sql<{ ci_id: string; identity_id: string }[]>`
      select ci_id, identity_id from identity_observations`;
    const detail = await app.current.get(`/api/v1/configuration-items/${observed!.ci_id}`, admin);
    expect(detail.body.identity).to.deep.equal({ id: observed!.identity_id, kind: 'host', role: 'self' });
    expect(detail.body.identities).to.deep.equal([detail.body.identity]);
    // unlinked (as before the worker reached it), the CI names none
    await app.current.sql`delete from identity_observations`;
    const plain = await app.current.get(`/api/v1/configuration-items/${observed!.ci_id}`, admin);
    expect(plain.body.identity).to.equal(null);
  });
});
