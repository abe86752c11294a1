import { expect } from 'chai';
import { catchUpIdentities } from '../../../src/inventory/identities/worker.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { createKey, useTestApp } from '../../support/app.js';
import { ingest } from '../../support/factories.js';

const node = (name: string, machineID: string): UniversalRecord => ({
  external_id: `node/${name}`,
  ci_type: 'k8s.node',
  name,
  namespace: null,
  raw_data: { metadata: { name }, status: { nodeInfo: { machineID } } },
  type_data: {},
});
const server = (name: string, machineId: string): UniversalRecord => ({
  external_id: `server/${name}`,
  ci_type: 'redis.server',
  name,
  namespace: null,
  raw_data: { version: '7.0.15' },
  type_data: { host: { hostname: null, addresses: [], machine_id: machineId, product_uuid: null, endpoint: 'x:6379' } },
});

describe('the query language through identities', () => {
  const app = useTestApp();
  let admin: string;

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
    await ingest(app.current.sql, [node('node-1', 'aa11'), node('node-2', 'bb22')], { source: 'k8s' });
    await ingest(app.current.sql, [server('cache-1', 'aa11'), server('cache-2', 'bb22'), server('lonely', 'cc33')], {
      source: 'redis',
    });
    await catchUpIdentities(app.current.sql, () => app.current.clock.now);
  });

  const names = async (query: string) => {
    const reply = await app.current.request('POST', '/api/v1/query', { key: admin, body: { query } });
    expect(reply.status, reply.text).to.equal(200);
    return (reply.body.items as { fields: { name: string } }[]).map((i) => i.fields.name).sort();
  };

  it('hops from a server to the node of the machine it runs on, and back', async () => {
    expect(
      await names('ci_type = redis.server and name = cache-1 <-[same_identity]-> ci_type = k8s.node'),
    ).to.deep.equal(['node-1']);
    expect(await names('ci_type = k8s.node <-[same_identity]-> * | return first')).to.deep.equal(['node-1', 'node-2']);
    // a server on a machine no node describes reaches nothing
    expect(await names('name = lonely <-[same_identity]-> *')).to.deep.equal([]);
  });

  it('matches every observation of one identity by identity_id', async () => {
    const [row] = await app.current.sql<{ identity_id: string }[]>`
      select o.identity_id from identity_observations o join configuration_items c using (ci_id) where c.name = 'node-2'`;
    expect(await names(`identity_id = ${row!.identity_id}`)).to.deep.equal(['cache-2', 'node-2']);
    expect(await names('ci_type = k8s.node and identity_id is null')).to.deep.equal([]);
  });

  it('names same_identity among the relationship types an unknown one is near', async () => {
    const reply = await app.current.request('POST', '/api/v1/query', {
      key: admin,
      body: { query: '* <-[same_identiy]-> *' },
    });
    expect(reply.status).to.equal(422);
    expect(reply.text).to.include('same_identity');
  });
});
