import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { apiRoutes } from '../../../src/app.js';
import { ensureSource } from '../../../src/collection/sources/store.js';
import { catchUpApplications } from '../../../src/history/change-rules/service.js';
import { reconcile } from '../../../src/inventory/write-path/reconcile.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { issueApiKey } from '../../../src/platform/auth/api-keys.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase, TEST_SECRET } from '../../support/db.js';

/**
 * The read-scope and write-scope matrix of the change-rules routes and of the readings they shape
 * (fold, rollup). One source with two instances: c1 holds deployment `web` with a replica set and
 * pod `a`, c2 pod `b`; another tenant holds pod `x`. Rules and the fold window are the tenant's:
 * only a caller holding all its data and changes:write writes them.
 */
const pod = (name: string, restarts: number, owner?: string): UniversalRecord => ({
  external_id: `pod/shop/${name}`,
  ci_type: 'k8s.pod',
  name,
  namespace: 'shop',
  raw_data: { metadata: { name }, status: { containerStatuses: [{ name: 'app', restartCount: restarts }] } },
  type_data: {},
  relationships: owner ? [{ type: 'manages', target_external_id: owner }] : [],
});

const web: UniversalRecord[] = [
  {
    external_id: 'deployment/shop/web',
    ci_type: 'k8s.deployment',
    name: 'web',
    namespace: 'shop',
    raw_data: { metadata: { name: 'web' }, spec: { replicas: 1 } },
    type_data: {},
    relationships: [{ type: 'manages', target_external_id: 'replicaset/shop/web-1' }],
  },
  {
    external_id: 'replicaset/shop/web-1',
    ci_type: 'k8s.replicaset',
    name: 'web-1',
    namespace: 'shop',
    raw_data: { metadata: { name: 'web-1' }, spec: { replicas: 1 } },
    type_data: {},
    relationships: [{ type: 'manages', target_external_id: 'pod/shop/a' }],
  },
];

interface Caller {
  name: string;
  key: string;
  sees: ('c1' | 'c2')[] | 'other-tenant' | 'none' | undefined;
  administers: boolean;
}

const RULE = { name: 'quiet restarts', match: 'change.kind = restart and name = b', action: 'ignore' };
const T0 = new Date('2026-11-30T10:00:00Z');
const at = (minute: number) => new Date(T0.getTime() + minute * 60_000);

describe('change rules: the read-scope and write-scope matrix of the change-rules routes and readings', function () {
  this.timeout(120_000);
  let app: TestApp;
  const callers: Caller[] = [];
  let ruleId: string;
  let deployment: string;

  before(async () => {
    const { sql } = await testDatabase();
    await resetDatabase(sql);
    app = await startTestApp();
    const sourceId = (await ensureSource(sql, DEFAULT_TENANT_ID, 'k8s', 'kubernetes')).id;
    const sync = (
      scopeId: string,
      records: UniversalRecord[],
      now: Date,
      tenantId = DEFAULT_TENANT_ID,
      source = sourceId,
    ) => reconcile(sql, { tenantId, sourceId: source, scopeId, mode: 'snapshot', records }, { now });
    const tenantB = randomUUID();
    await sql`insert into tenants (id, slug, name) values (${tenantB}, ${`b-${tenantB.slice(0, 8)}`}, 'B')`;
    const otherSource = (await ensureSource(sql, tenantB, 'k8s', 'kubernetes')).id;
    for (let i = 0; i < 3; i++) {
      await sync('c1', [...web, pod('a', i)], at(i * 5));
      await sync('c2', [pod('b', i)], at(i * 5));
      await sync('c1', [pod('x', i)], at(i * 5), tenantB, otherSource);
    }
    deployment = (await sql<{ ci_id: string }[]>`select ci_id from configuration_items where name = 'web'`)[0]!.ci_id;
    const admin = await createKey(sql, 'adm');
    const created = await app.request('POST', '/api/v1/change-rules', { key: admin, body: RULE });
    expect(created.status, created.text).to.equal(201);
    ruleId = created.body.id as string;
    const c1 = [{ sourceId, scopeId: 'c1' }];
    callers.push(
      { name: 'adm key', key: admin, sees: ['c1', 'c2'], administers: true },
      { name: 'ro key', key: await createKey(sql, 'ro'), sees: ['c1', 'c2'], administers: false },
      { name: 'ro key, scope c1', key: await createKey(sql, 'ro', { scopes: c1 }), sees: ['c1'], administers: false },
      {
        name: 'svc history writer, scope c1',
        key: await createKey(sql, 'svc', { permissions: ['changes:read', 'changes:write'], scopes: c1 }),
        sees: ['c1'],
        administers: false,
      },
      {
        name: 'svc without history reads',
        key: await createKey(sql, 'svc', { permissions: ['configuration_items:read'] }),
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
  const sees = (who: Caller, scope: 'c1' | 'c2') => Array.isArray(who.sees) && who.sees.includes(scope);
  /** A write of the tenant's rules or settings: its own tenant's for another tenant's administrator, else refused. */
  const write = async (who: Caller, reply: { status: number; text: string }, ok: number) => {
    if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
    if (who.administers || who.sees === 'other-tenant') return void expect(reply.status, reply.text).to.equal(ok);
    expect(reply.status, who.name).to.equal(403);
  };

  it('covers every change-rules route', () => {
    const routes = apiRoutes.filter((r) => r.path.startsWith('/api/v1/change-')).map((r) => `${r.method} ${r.path}`);
    expect(routes.sort()).to.deep.equal(Object.keys(CHECKS).sort());
  });

  const CHECKS: Record<string, (who: Caller) => Promise<void>> = {
    'GET /api/v1/change-rules': async (who) => {
      const reply = await app.get('/api/v1/change-rules', who.key);
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      expect(
        reply.body.items.map((r: { name: string }) => r.name),
        who.name,
      ).to.deep.equal(who.sees === 'other-tenant' ? [] : [RULE.name]);
    },
    'GET /api/v1/change-rules/{rule_id}': async (who) => {
      const reply = await app.get(`/api/v1/change-rules/${ruleId}`, who.key);
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      expect(reply.status, who.name).to.equal(who.sees === 'other-tenant' ? 404 : 200);
    },
    'POST /api/v1/change-rules': async (who) => {
      const body = { ...RULE, name: `rule of ${who.name}` };
      const reply = await app.request('POST', '/api/v1/change-rules', { key: who.key, body });
      await write(who, reply, 201);
      if (reply.status === 201) await app.request('DELETE', `/api/v1/change-rules/${reply.body.id}`, { key: who.key });
    },
    'PUT /api/v1/change-rules/{rule_id}': async (who) => {
      const reply = await app.request('PUT', `/api/v1/change-rules/${ruleId}`, { key: who.key, body: RULE });
      if (who.sees === 'other-tenant') return void expect(reply.status, who.name).to.equal(404);
      await write(who, reply, 200);
    },
    'DELETE /api/v1/change-rules/{rule_id}': async (who) => {
      if (who.administers) return; // the rule the matrix reads stays
      const reply = await app.request('DELETE', `/api/v1/change-rules/${ruleId}`, { key: who.key });
      if (who.sees === 'other-tenant') return void expect(reply.status, who.name).to.equal(404);
      await write(who, reply, 204);
      expect((await app.get(`/api/v1/change-rules/${ruleId}`, callers[0]!.key)).status).to.equal(200);
    },
    'POST /api/v1/change-rules/apply': async (who) => {
      const body = { from: at(0).toISOString(), until: at(60).toISOString() };
      const reply = await app.request('POST', '/api/v1/change-rules/apply', { key: who.key, body });
      await write(who, reply, 202);
      if (reply.status === 202) {
        await catchUpApplications(app.context);
        const run = await app.get(`/api/v1/change-rules/applications/${reply.body.id}`, who.key);
        expect(run.body.done, who.name).to.equal(true);
        // another tenant's application reads its own records only
        expect(run.body.records, who.name).to.equal(who.sees === 'other-tenant' ? 3 : 8);
      }
    },
    'GET /api/v1/change-rules/applications/{run_id}': async (who) => {
      const reply = await app.get(`/api/v1/change-rules/applications/${randomUUID()}`, who.key);
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      expect(reply.status, who.name).to.equal(404);
    },
    'GET /api/v1/change-settings': async (who) => {
      const reply = await app.get('/api/v1/change-settings', who.key);
      if (refusal(who)) return void expect(reply.status, who.name).to.equal(refusal(who));
      expect(reply.body.fold_window_seconds, who.name).to.be.a('number');
    },
    'PUT /api/v1/change-settings': async (who) => {
      // each caller asks for a window of its own: only the tenant's administrator's (the first) stays
      const seconds = 1800 + 60 * callers.indexOf(who);
      const reply = await app.request('PUT', '/api/v1/change-settings', {
        key: who.key,
        body: { fold_window_seconds: seconds },
      });
      await write(who, reply, 200);
      const ours = await app.get('/api/v1/change-settings', callers[0]!.key);
      expect(ours.body.fold_window_seconds, who.name).to.equal(1800);
    },
  };

  for (const route of Object.keys(CHECKS)) {
    it(`${route} answers every caller as its rights and scopes say`, async () => {
      for (const who of callers) await CHECKS[route]!(who);
    });
  }

  it('folded, ignored and rolled-up readings show each caller only what its scopes hold', async () => {
    for (const who of callers) {
      const folded = await app.get(
        '/api/v1/changes?fold=true&filter=change_type:eq:UPDATED&include_ignored=true',
        who.key,
      );
      if (refusal(who)) {
        expect(folded.status, who.name).to.equal(refusal(who));
        continue;
      }
      const names = [...new Set(folded.body.items.map((i: { ci_name: string }) => i.ci_name))].sort();
      const expected =
        who.sees === 'other-tenant' ? ['x'] : [...(sees(who, 'c1') ? ['a'] : []), ...(sees(who, 'c2') ? ['b'] : [])];
      expect(names, who.name).to.deep.equal(expected);
      // the ignore rule hides b's restarts unless they are asked for
      const plain = await app.get('/api/v1/changes?filter=change_type:eq:UPDATED', who.key);
      expect(
        plain.body.items.some((i: { ci_name: string }) => i.ci_name === 'b'),
        who.name,
      ).to.equal(false);
      const rolled = await app.get(
        `/api/v1/ci-changes/${deployment}?rollup=true&fold=true&start_date=${at(-1).toISOString()}&end_date=${at(60).toISOString()}`,
        who.key,
      );
      expect(rolled.status, who.name).to.equal(sees(who, 'c1') ? 200 : 404);
      if (rolled.status === 200)
        expect(rolled.body.items.map((i: { ci_name: string; kind: string }) => `${i.ci_name} ${i.kind}`)).to.deep.equal(
          ['a restart', 'web created'],
        );
    }
  });
});
