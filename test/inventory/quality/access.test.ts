import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { apiRoutes } from '../../../src/app.js';
import { ensureSource } from '../../../src/collection/sources/store.js';
import { catchUpQuality } from '../../../src/inventory/quality/service.js';
import { reconcile } from '../../../src/inventory/write-path/reconcile.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { issueApiKey } from '../../../src/platform/auth/api-keys.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase, TEST_SECRET } from '../../support/db.js';

/**
 * The read-scope and write-scope matrix of every quality route. One source with two instances: c1
 * holds pod `a` (no containers), c2 pods `b` (no containers) and `c`; another tenant holds pod `x`
 * (no containers). Settings and rules are the tenant's: only a caller holding all its data writes them.
 */
const pod = (name: string, containers: boolean): UniversalRecord => ({
  external_id: `pod/shop/${name}`,
  ci_type: 'k8s.pod',
  name,
  namespace: 'shop',
  raw_data: { metadata: { name }, spec: containers ? { containers: [{ name: 'app' }] } : {} },
  type_data: {},
});

interface Caller {
  name: string;
  key: string;
  /** The instances it may read; 'other-tenant' sees its own tenant only; 'none' holds no CI read; undefined fails to authenticate. */
  sees: ('c1' | 'c2')[] | 'other-tenant' | 'none' | undefined;
  /** Whether it may write the tenant's settings and rules (all data and configuration_items:write). */
  administers: boolean;
}

const RULE = {
  name: 'pods have containers',
  applies_to: 'ci_type = k8s.pod',
  requires: 'raw_data.spec.containers exists',
};

describe('quality: the read-scope and write-scope matrix of every quality route', function () {
  this.timeout(120_000);
  let app: TestApp;
  const callers: Caller[] = [];
  let ruleId: string;
  let podB: string;

  const visiblePods = (who: Caller): string[] =>
    who.sees === 'other-tenant'
      ? ['x']
      : Array.isArray(who.sees)
        ? [...(who.sees.includes('c1') ? ['a'] : []), ...(who.sees.includes('c2') ? ['b', 'c'] : [])]
        : [];

  before(async () => {
    const { sql } = await testDatabase();
    await resetDatabase(sql);
    app = await startTestApp();
    const sourceId = (await ensureSource(sql, DEFAULT_TENANT_ID, 'k8s', 'kubernetes')).id;
    const sync = (scopeId: string, records: UniversalRecord[], tenantId = DEFAULT_TENANT_ID, source = sourceId) =>
      reconcile(sql, { tenantId, sourceId: source, scopeId, mode: 'snapshot', records });
    await sync('c1', [pod('a', false)]);
    await sync('c2', [pod('b', false), pod('c', true)]);
    const tenantB = randomUUID();
    await sql`insert into tenants (id, slug, name) values (${tenantB}, ${`b-${tenantB.slice(0, 8)}`}, 'B')`;
    const otherSource = (await ensureSource(sql, tenantB, 'k8s', 'kubernetes')).id;
    await sync('c1', [pod('x', false)], tenantB, otherSource);
    podB = (await sql<{ ci_id: string }[]>`select ci_id from configuration_items where name = 'b'`)[0]!.ci_id;
    const c1 = [{ sourceId, scopeId: 'c1' }];
    const admin = await createKey(sql, 'adm');
    const created = await app.request('POST', '/api/v1/quality/rules', { key: admin, body: RULE });
    expect(created.status, created.text).to.equal(201);
    ruleId = created.body.id as string;
    await catchUpQuality(app.context);
    callers.push(
      { name: 'adm key', key: admin, sees: ['c1', 'c2'], administers: true },
      { name: 'ro key', key: await createKey(sql, 'ro'), sees: ['c1', 'c2'], administers: false },
      { name: 'ro key, scope c1', key: await createKey(sql, 'ro', { scopes: c1 }), sees: ['c1'], administers: false },
      {
        name: 'svc writer, scope c1',
        key: await createKey(sql, 'svc', {
          permissions: ['configuration_items:read', 'configuration_items:write'],
          scopes: c1,
        }),
        sees: ['c1'],
        administers: false,
      },
      {
        name: 'svc without CI reads',
        key: await createKey(sql, 'svc', { permissions: ['changes:read'] }),
        sees: 'none',
        administers: false,
      },
      { name: 'invalid key', key: 'cinv_adm_0000000000000000000000000000000000', sees: undefined, administers: false },
      {
        name: 'adm key of another tenant',
        key: (await issueApiKey(sql, TEST_SECRET, { tenantId: tenantB, name: 'b adm', tier: 'adm' })).key,
        sees: 'other-tenant',
        administers: false,
      },
    );
  });

  after(async () => {
    await app?.close();
  });

  const refusal = (who: Caller) => (who.sees === undefined ? 401 : who.sees === 'none' ? 403 : undefined);
  /** A write of the tenant's settings or rules: refused unless it holds all data and the write permission. */
  const writeRefusal = (who: Caller, status: number) => {
    if (refusal(who)) return expect(status, who.name).to.equal(refusal(who));
    expect(status, who.name).to.equal(403);
  };

  it('covers every quality route', () => {
    const routes = apiRoutes.filter((r) => r.path.startsWith('/api/v1/quality')).map((r) => `${r.method} ${r.path}`);
    expect(routes.sort()).to.deep.equal(Object.keys(CHECKS).sort());
  });

  const CHECKS: Record<string, (who: Caller) => Promise<void>> = {
    'GET /api/v1/quality': async (who) => {
      const reply = await app.get('/api/v1/quality', who.key);
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      expect(reply.status, reply.text).to.equal(200);
      const pods = visiblePods(who);
      const failing = pods.filter((name) => name !== 'c');
      expect([reply.body.cis, reply.body.measures.completeness.failing], who.name).to.deep.equal([
        pods.length,
        failing.length,
      ]);
      // another tenant's rules are not this caller's; its own tenant has none
      expect(
        reply.body.rules.map((r: { applies: number }) => r.applies),
        who.name,
      ).to.deep.equal(who.sees === 'other-tenant' ? [] : [pods.length]);
    },
    'GET /api/v1/quality/{measure}/items': async (who) => {
      const reply = await app.get('/api/v1/quality/completeness/items', who.key);
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      expect(reply.body.items.map((i: { name: string }) => i.name).sort(), who.name).to.deep.equal(
        visiblePods(who).filter((name) => name !== 'c'),
      );
      const rules = await app.get(`/api/v1/quality/rules/items?rule_id=${ruleId}`, who.key);
      expect(rules.status, rules.text).to.equal(200);
      expect(rules.body.items.map((i: { name: string }) => i.name).sort(), who.name).to.deep.equal(
        who.sees === 'other-tenant' ? [] : visiblePods(who).filter((name) => name !== 'c'),
      );
    },
    'GET /api/v1/quality/rules/items': async (who) => {
      const reply = await app.get('/api/v1/quality/rules/items', who.key);
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      expect(reply.body.items.map((i: { name: string }) => i.name).sort(), who.name).to.deep.equal(
        who.sees === 'other-tenant' ? [] : visiblePods(who).filter((name) => name !== 'c'),
      );
    },
    'GET /api/v1/quality/configuration-items/{ci_id}': async (who) => {
      const reply = await app.get(`/api/v1/quality/configuration-items/${podB}`, who.key);
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      const sees = Array.isArray(who.sees) && who.sees.includes('c2');
      expect(reply.status, who.name).to.equal(sees ? 200 : 404);
      if (sees) expect(reply.body.missing).to.deep.equal(['raw_data.spec.containers']);
    },
    'GET /api/v1/quality/settings': async (who) => {
      const reply = await app.get('/api/v1/quality/settings', who.key);
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      expect(reply.status, who.name).to.equal(200);
      expect(reply.body.settings.owner_path).to.equal('raw_data.metadata.labels.team');
    },
    'PUT /api/v1/quality/settings': async (who) => {
      const reply = await app.request('PUT', '/api/v1/quality/settings', { key: who.key, body: { alert_below: 70 } });
      if (who.administers || who.sees === 'other-tenant') expect(reply.status, who.name).to.equal(200);
      else writeRefusal(who, reply.status);
      const ours = await app.get('/api/v1/quality/settings', callers[0]!.key);
      // nobody but the tenant's own administrator changed the tenant's settings
      expect(ours.body.customised, who.name).to.equal(true);
    },
    'GET /api/v1/quality/rules': async (who) => {
      const reply = await app.get('/api/v1/quality/rules', who.key);
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      const expected = who.sees === 'other-tenant' ? [] : [[RULE.name, visiblePods(who).length]];
      expect(reply.body.items.map((r: { name: string; applies: number }) => [r.name, r.applies])).to.deep.equal(
        expected,
      );
    },
    'GET /api/v1/quality/rules/{rule_id}': async (who) => {
      const reply = await app.get(`/api/v1/quality/rules/${ruleId}`, who.key);
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      expect(reply.status, who.name).to.equal(who.sees === 'other-tenant' ? 404 : 200);
    },
    'POST /api/v1/quality/rules': async (who) => {
      const body = { ...RULE, name: `rule of ${who.name}` };
      const reply = await app.request('POST', '/api/v1/quality/rules', { key: who.key, body });
      if (who.administers || who.sees === 'other-tenant') {
        expect(reply.status, who.name).to.equal(201);
        await app.request('DELETE', `/api/v1/quality/rules/${reply.body.id}`, { key: who.key });
      } else writeRefusal(who, reply.status);
    },
    'PUT /api/v1/quality/rules/{rule_id}': async (who) => {
      const reply = await app.request('PUT', `/api/v1/quality/rules/${ruleId}`, { key: who.key, body: RULE });
      if (who.administers) expect(reply.status, who.name).to.equal(200);
      else if (who.sees === 'other-tenant') expect(reply.status, who.name).to.equal(404);
      else writeRefusal(who, reply.status);
    },
    'DELETE /api/v1/quality/rules/{rule_id}': async (who) => {
      const made = await app.request('POST', '/api/v1/quality/rules', {
        key: callers[0]!.key,
        body: { ...RULE, name: `doomed for ${who.name}` },
      });
      const reply = await app.request('DELETE', `/api/v1/quality/rules/${made.body.id}`, { key: who.key });
      if (who.administers) expect(reply.status, who.name).to.equal(204);
      else if (who.sees === 'other-tenant') expect(reply.status, who.name).to.equal(404);
      else writeRefusal(who, reply.status);
      await app.request('DELETE', `/api/v1/quality/rules/${made.body.id}`, { key: callers[0]!.key });
    },
    'POST /api/v1/quality/rules/preview': async (who) => {
      const body = { applies_to: RULE.applies_to, requires: RULE.requires };
      const reply = await app.request('POST', '/api/v1/quality/rules/preview', { key: who.key, body });
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      const pods = visiblePods(who);
      expect([reply.body.applies, reply.body.passes], who.name).to.deep.equal([
        pods.length,
        pods.includes('c') ? 1 : 0,
      ]);
      expect(reply.body.failing.map((ci: { name: string }) => ci.name).sort()).to.deep.equal(
        pods.filter((name) => name !== 'c'),
      );
    },
  };

  for (const route of Object.keys(CHECKS)) {
    it(`${route}: each caller reads and writes only what its permissions and data scopes hold`, async () => {
      for (const who of callers) await CHECKS[route]!(who);
    });
  }
});
