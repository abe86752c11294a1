import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { apiRoutes } from '../../../src/app.js';
import { ensureSource } from '../../../src/collection/sources/store.js';
import { catchUpIdentities } from '../../../src/inventory/identities/worker.js';
import { reconcile } from '../../../src/inventory/write-path/reconcile.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';

/**
 * The read-scope and write-scope matrix of every identity route. One source with two instances:
 * `db` is seen as a host.linux in c1 and a k8s.node in c2 (one identity across both), `web` is two
 * k8s.nodes of different machines in c2 (a conflict); another tenant has its own `db`. A caller
 * scoped to c1 learns nothing of c2: not its observations, values, conflicts or decisions.
 */

const node = (name: string, machineID: string, externalId = `node/${name}`): UniversalRecord => ({
  external_id: externalId,
  ci_type: 'k8s.node',
  name,
  namespace: null,
  raw_data: { metadata: { name }, status: { nodeInfo: { machineID, osImage: 'Ubuntu 24.04 LTS' } } },
  type_data: {},
});
const linux = (hostname: string): UniversalRecord => ({
  external_id: `host/${hostname}`,
  ci_type: 'host.linux',
  name: hostname,
  namespace: null,
  raw_data: { hostname },
  type_data: { hostname, os_name: 'Ubuntu', os_version: '22.04' },
});

interface Caller {
  name: string;
  key: string;
  /** Which instances' CIs it sees; undefined: refused (401); 'none': lacks configuration_items:read (403). */
  sees: ('c1' | 'c2')[] | 'other-tenant' | 'none' | undefined;
  /** Whether it may write configuration items (decisions), and into which instances. */
  writes: ('c1' | 'c2')[];
}

describe('identities: the read-scope and write-scope matrix of every identity route', function () {
  this.timeout(120_000);
  let app: TestApp;
  const callers: Caller[] = [];
  const ids: Record<'dbLinux' | 'dbNode' | 'webA' | 'webB', string> = {} as never;
  let dbIdentity: string;
  let sourceId: string;

  before(async () => {
    const { sql } = await testDatabase();
    await resetDatabase(sql);
    app = await startTestApp();
    sourceId = (await ensureSource(sql, DEFAULT_TENANT_ID, 'hosts', 'kubernetes')).id;
    const sync = (scopeId: string, records: UniversalRecord[], tenantId = DEFAULT_TENANT_ID, source = sourceId) =>
      reconcile(sql, { tenantId, sourceId: source, scopeId, mode: 'snapshot', records });
    await sync('c1', [linux('db')]);
    await sync('c2', [node('db', 'aa11'), node('web', 'bb22', 'node/web-a'), node('web', 'cc33', 'node/web-b')]);
    const tenantB = randomUUID();
    await sql`insert into tenants (id, slug, name) values (${tenantB}, ${`b-${tenantB.slice(0, 8)}`}, 'B')`;
    const otherSource = (await ensureSource(sql, tenantB, 'hosts', 'kubernetes')).id;
    await sync('c1', [linux('db')], tenantB, otherSource);
    await catchUpIdentities(sql, () => app.clock.now);
    const idOf = async (externalId: string) =>
      (
        await sql<{ ci_id: string }[]>`
        select ci_id from configuration_items where tenant_id = ${DEFAULT_TENANT_ID} and external_id = ${externalId}`
      )[0]!.ci_id;
    ids.dbLinux = await idOf('host/db');
    ids.dbNode = await idOf('node/db');
    ids.webA = await idOf('node/web-a');
    ids.webB = await idOf('node/web-b');
    dbIdentity = (
      await sql<{ identity_id: string }[]>`
      select identity_id from identity_observations where ci_id = ${ids.dbNode}`
    )[0]!.identity_id;
    const c1 = [{ sourceId, scopeId: 'c1' }];
    const rw = ['configuration_items:read', 'configuration_items:write', 'relationships:read'] as const;
    callers.push(
      { name: 'adm key', key: await createKey(sql, 'adm'), sees: ['c1', 'c2'], writes: ['c1', 'c2'] },
      { name: 'ro key', key: await createKey(sql, 'ro'), sees: ['c1', 'c2'], writes: [] },
      { name: 'ro key, scope c1', key: await createKey(sql, 'ro', { scopes: c1 }), sees: ['c1'], writes: [] },
      {
        name: 'svc writer, scope c1',
        key: await createKey(sql, 'svc', { permissions: [...rw], scopes: c1 }),
        sees: ['c1'],
        writes: ['c1'],
      },
      {
        name: 'svc without CI reads',
        key: await createKey(sql, 'svc', { permissions: ['changes:read'] }),
        sees: 'none',
        writes: [],
      },
      { name: 'invalid key', key: 'cinv_adm_0000000000000000000000000000000000', sees: undefined, writes: [] },
    );
    const { key } = { key: await createKeyIn(sql, tenantB) };
    callers.push({ name: 'adm key of another tenant', key, sees: 'other-tenant', writes: [] });
  });

  after(async () => {
    await app?.close();
  });

  const refusal = (who: Caller) => (who.sees === undefined ? 401 : who.sees === 'none' ? 403 : undefined);

  it('covers every identity route', () => {
    const routes = apiRoutes.filter((r) => r.path.startsWith('/api/v1/identities')).map((r) => `${r.method} ${r.path}`);
    expect(routes.sort()).to.deep.equal(Object.keys(CHECKS).sort());
  });

  const CHECKS: Record<string, (who: Caller) => Promise<void>> = {
    'GET /api/v1/identities': async (who) => {
      const reply = await app.get('/api/v1/identities?limit=500', who.key);
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      expect(reply.status, reply.text).to.equal(200);
      const counts = (reply.body.items as { name: string; observation_count: number }[])
        .map((i) => `${i.name}:${i.observation_count}`)
        .sort();
      const expected =
        who.sees === 'other-tenant' ? ['db:1'] : who.sees!.includes('c2') ? ['db:2', 'web:1', 'web:1'] : ['db:1'];
      expect(counts, who.name).to.deep.equal(expected);
    },
    'GET /api/v1/identities/{identity_id}': async (who) => {
      const reply = await app.get(`/api/v1/identities/${dbIdentity}`, who.key);
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      if (who.sees === 'other-tenant') return void expect(reply.status, who.name).to.equal(404);
      expect(reply.status, reply.text).to.equal(200);
      const seesC2 = who.sees!.includes('c2');
      expect(reply.body.observations.map((o: { ci_id: string }) => o.ci_id).sort(), who.name).to.deep.equal(
        (seesC2 ? [ids.dbLinux, ids.dbNode] : [ids.dbLinux]).sort(),
      );
      if (!seesC2) expect(reply.text, who.name).to.not.include(ids.dbNode).and.not.include('24.04');
    },
    'GET /api/v1/identities/{identity_id}/graph': async (who) => {
      const reply = await app.get(`/api/v1/identities/${dbIdentity}/graph`, who.key);
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      if (who.sees === 'other-tenant') return void expect(reply.status, who.name).to.equal(404);
      expect(reply.status, reply.text).to.equal(200);
      if (!who.sees!.includes('c2')) expect(reply.text, who.name).to.not.include(ids.dbNode);
      else expect(reply.text, who.name).to.include(ids.dbNode);
    },
    'GET /api/v1/identities/conflicts': async (who) => {
      const reply = await app.get('/api/v1/identities/conflicts', who.key);
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      expect(reply.status, reply.text).to.equal(200);
      const seesC2 = Array.isArray(who.sees) && who.sees.includes('c2');
      expect(reply.body.items.length, who.name).to.equal(seesC2 ? 1 : 0);
    },
    'POST /api/v1/identities/identify': async (who) => {
      const reply = await app.request('POST', '/api/v1/identities/identify', {
        key: who.key,
        body: { ci_type: 'k8s.node', name: 'web', raw_data: { status: { nodeInfo: { machineID: 'bb22' } } } },
      });
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      expect(reply.status, reply.text).to.equal(200);
      const seesC2 = Array.isArray(who.sees) && who.sees.includes('c2');
      // the machine id matches web-a, which only a caller seeing c2 may learn
      expect(reply.body.identity_id !== null, who.name).to.equal(seesC2);
      if (!seesC2) expect(reply.text, who.name).to.not.include(ids.webA);
    },
    'GET /api/v1/identities/rules': async (who) => {
      const reply = await app.get('/api/v1/identities/rules', who.key);
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      expect(reply.status, reply.text).to.equal(200);
    },
    'PUT /api/v1/identities/rules': async (who) => {
      const shipped = (await app.get('/api/v1/identities/rules', callers[0]!.key)).body.rules;
      const reply = await app.request('PUT', '/api/v1/identities/rules', { key: who.key, body: shipped });
      if (who.sees === undefined) return void expect(reply.status, who.name).to.equal(401);
      // only a caller holding all the tenant's data and the write permission sets the tenant's rules
      const whole = who.name === 'adm key' || who.name === 'adm key of another tenant';
      expect(reply.status, `${who.name}: ${reply.text}`).to.equal(whole ? 200 : 403);
    },
    'POST /api/v1/identities/decisions': async (who) => {
      const attempt = (ciIds: string[], action = 'keep_apart') =>
        app.request('POST', '/api/v1/identities/decisions', { key: who.key, body: { action, ci_ids: ciIds } });
      const across = await attempt([ids.dbLinux, ids.dbNode]);
      if (who.sees === undefined) return void expect(across.status, who.name).to.equal(401);
      // another tenant's CIs do not exist for it
      if (who.sees === 'other-tenant') return void expect(across.status, who.name).to.equal(404);
      if (who.writes.length === 0) return void expect(across.status, who.name).to.equal(403);
      // naming a CI of an instance it does not hold is as if the CI did not exist
      const holdsBoth = who.writes.includes('c2');
      expect(across.status, `${who.name}: ${across.text}`).to.equal(holdsBoth ? 201 : 404);
      if (holdsBoth) await app.request('DELETE', `/api/v1/identities/decisions/${across.body.id}`, { key: who.key });
      const own = await app.request('POST', '/api/v1/identities/decisions', {
        key: who.key,
        body: { action: 'pin', ci_ids: [ids.dbLinux], field: 'os.version', source_id: sourceId },
      });
      expect(own.status, `${who.name}: ${own.text}`).to.equal(201);
      await app.request('DELETE', `/api/v1/identities/decisions/${own.body.id}`, { key: who.key });
    },
    'GET /api/v1/identities/decisions': async (who) => {
      const made = await app.request('POST', '/api/v1/identities/decisions', {
        key: callers[0]!.key,
        body: { action: 'merge', ci_ids: [ids.webA, ids.webB], reason: 'one machine, reinstalled' },
      });
      expect(made.status, made.text).to.equal(201);
      const reply = await app.get('/api/v1/identities/decisions?include_undone=true', who.key);
      await app.request('DELETE', `/api/v1/identities/decisions/${made.body.id}`, { key: callers[0]!.key });
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      expect(reply.status, reply.text).to.equal(200);
      const seesC2 = Array.isArray(who.sees) && who.sees.includes('c2');
      const listed = (reply.body.items as { id: string }[]).some((d) => d.id === made.body.id);
      expect(listed, who.name).to.equal(seesC2);
    },
    'DELETE /api/v1/identities/decisions/{decision_id}': async (who) => {
      const made = await app.request('POST', '/api/v1/identities/decisions', {
        key: callers[0]!.key,
        body: { action: 'keep_apart', ci_ids: [ids.dbLinux, ids.dbNode] },
      });
      const reply = await app.request('DELETE', `/api/v1/identities/decisions/${made.body.id}`, { key: who.key });
      if (who.sees === undefined) expect(reply.status, who.name).to.equal(401);
      else if (who.sees === 'other-tenant') expect(reply.status, who.name).to.equal(404);
      else if (who.writes.length === 0) expect(reply.status, who.name).to.equal(403);
      else expect(reply.status, who.name).to.equal(who.writes.includes('c2') ? 200 : 404);
      await app.request('DELETE', `/api/v1/identities/decisions/${made.body.id}`, { key: callers[0]!.key });
    },
  };

  for (const route of Object.keys(CHECKS)) {
    it(`${route}: each caller reads and writes only what its permissions and data scopes hold`, async () => {
      for (const who of callers) await CHECKS[route]!(who);
    });
  }
});

/** An administrator's key of another tenant. */
async function createKeyIn(sql: Awaited<ReturnType<typeof testDatabase>>['sql'], tenantId: string): Promise<string> {
  const { issueApiKey } = await import('../../../src/platform/auth/api-keys.js');
  const { TEST_SECRET } = await import('../../support/db.js');
  return (await issueApiKey(sql, TEST_SECRET, { tenantId, name: 'b adm', tier: 'adm' })).key;
}
