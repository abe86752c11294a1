import { expect } from 'chai';
import { createKey, useTestApp } from '../../support/app.js';
import { buildPod, ingest } from '../../support/factories.js';

const deployment = (name: string, spec: Record<string, unknown>) =>
  buildPod({
    name,
    namespace: 'shop',
    ci_type: 'k8s.deployment',
    external_id: `deployment/shop/${name}`,
    raw_data: { spec },
  });

const limited = { name: 'app', resources: { limits: { cpu: '1' } }, ports: [{ name: 'http' }] };

describe('the query language: * segments, every element of an array', () => {
  const app = useTestApp();
  let admin: string;

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
    await ingest(app.current.sql, [
      deployment('all-limited', { containers: [limited, { ...limited, name: 'sidecar' }] }),
      deployment('one-unlimited', { containers: [limited, { name: 'sidecar', resources: {} }] }),
      deployment('null-limits', { containers: [{ name: 'app', resources: { limits: null } }] }),
      deployment('no-containers', { containers: [] }),
      deployment('no-spec', {}),
      deployment('quoted', { 'odd "key"': [{ x: 1 }] }),
      deployment('ports-unnamed', { containers: [limited, { ...limited, ports: [{ name: 'a' }, { port: 80 }] }] }),
    ]);
  });

  const names = async (query: string) => {
    const reply = await app.current.request('POST', '/api/v1/query', {
      key: admin,
      body: { query: `${query} | fields name` },
    });
    expect(reply.status, reply.text).to.equal(200);
    return (reply.body.items as { fields: { name: string } }[]).map((item) => item.fields.name).sort();
  };

  it('holds when every element has the rest of the path, and there is one at least', async () => {
    expect(await names('raw_data.spec.containers.*.resources.limits exists')).to.deep.equal([
      'all-limited',
      'ports-unnamed',
    ]);
    expect(
      await names('ci_type = k8s.deployment and raw_data.spec.containers.*.resources.limits not exists'),
    ).to.deep.equal(['no-containers', 'no-spec', 'null-limits', 'one-unlimited', 'quoted']);
  });

  it('nests: every port of every container', async () => {
    expect(await names('raw_data.spec.containers.*.ports.*.name exists')).to.deep.equal(['all-limited']);
  });

  it('reads quoted keys as keys, and a quoted "*" as a key named so', async () => {
    expect(await names('raw_data.spec."odd \\"key\\"".*.x exists')).to.deep.equal(['quoted']);
    expect(await names('raw_data.spec."*" exists')).to.deep.equal([]);
  });

  it('refuses a * segment anywhere but exists, with the position', async () => {
    const reply = await app.current.request('POST', '/api/v1/query', {
      key: admin,
      body: { query: 'raw_data.spec.containers.*.image = nginx' },
    });
    expect(reply.status).to.equal(422);
    expect(reply.body.error.code).to.equal('INVALID_QUERY');
    expect(reply.body.error.message).to.include('a * segment (every element) works with exists and not exists only');
  });
});
