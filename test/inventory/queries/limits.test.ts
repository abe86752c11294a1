import { expect } from 'chai';
import { rateLimitOverrides, QUERY_PATH } from '../../../src/platform/config/rate-limits.js';
import type { Permission } from '../../../src/platform/auth/principal.js';
import type { Sql } from '../../../src/platform/db/database.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { createKey, startTestApp, type Reply, type TestApp } from '../../support/app.js';
import { onRealPostgres, resetDatabase, testDatabase } from '../../support/db.js';
import { ingest } from '../../support/factories.js';
import { Draw } from './oracle/estate.js';

/**
 * The query endpoint's limits: its own rate limit (CINV_QUERY_RATE_LIMIT), the statement timeout
 * (CINV_QUERY_TIMEOUT), the refusal of large whole-table reads (CINV_QUERY_SCAN_ROWS, allow_scan
 * with queries:read), and explain, which plans without running.
 */

const CIS = 400;

/** A dense estate: every CI related to eight others, so that a deep walk of any type is long. */
function denseEstate(): UniversalRecord[] {
  const d = new Draw(7);
  return Array.from({ length: CIS }, (_, i) => ({
    external_id: `pod/${i}`,
    ci_type: i % 10 === 0 ? 'k8s.node' : 'k8s.pod',
    name: `pod-${i}`,
    namespace: `ns-${i % 7}`,
    raw_data: { spec: { replicas: i % 5 }, text: `${'x'.repeat(i % 13)}y` },
    relationships: Array.from({ length: 8 }, () => ({
      type: 'runs_on',
      target_external_id: `pod/${d.int(0, CIS - 1)}`,
    })),
  }));
}

function expectEnvelope(reply: Reply, status: number, code: string): void {
  expect(reply.status, reply.text).to.equal(status);
  expect(reply.body.error).to.include.keys('id', 'code', 'message', 'details', 'path', 'method');
  expect(reply.body.error.code).to.equal(code);
}

describe('POST /api/v1/query: rate limit, statement timeout, scan refusal and explain', function () {
  this.timeout(300_000);
  let sql: Sql;
  const apps: TestApp[] = [];
  const start = async (overrides: Parameters<typeof startTestApp>[0]) => {
    const app = await startTestApp(overrides);
    apps.push(app);
    return app;
  };
  const run = (app: TestApp, key: string, body: Record<string, unknown>) =>
    app.request('POST', '/api/v1/query', { key, body });

  before(async () => {
    sql = (await testDatabase()).sql;
    await resetDatabase(sql);
    await ingest(sql, denseEstate(), { source: 'dense', mode: 'delta', now: new Date('2026-10-01T00:00:00Z') });
    // the refusal reads the planner's row counts
    await sql`analyze configuration_items`;
    await sql`analyze relationships`;
  });
  after(async () => {
    for (const app of apps) await app.close();
  });

  it('gives the query path its own limit by default (60 a minute, bursts of 20), CINV_QUERY_RATE_LIMIT sets it', () => {
    expect(rateLimitOverrides({}).find((o) => o.prefix === QUERY_PATH)).to.deep.include({ limit: 60, burst: 20 });
    expect(rateLimitOverrides({ CINV_QUERY_RATE_LIMIT: '30/5' }).find((o) => o.prefix === QUERY_PATH)).to.deep.include({
      limit: 30,
      burst: 5,
    });
  });

  it('answers 429 in the error envelope once a credential has spent its burst, for that credential and path only', async () => {
    const app = await start({ rateLimitOverrides: rateLimitOverrides({ CINV_QUERY_RATE_LIMIT: '60/3' }) });
    const key = await createKey(sql, 'adm', { name: 'busy' });
    const statuses: number[] = [];
    let refused: Reply | undefined;
    for (let i = 0; i < 5; i++) {
      // the link form shares the path's allowance
      const reply =
        i % 2 === 0
          ? await run(app, key, { query: 'name = pod-1 | count' })
          : await app.get(`/api/v1/query?q=${encodeURIComponent('name = pod-2')}`, key);
      statuses.push(reply.status);
      if (reply.status === 429) refused ??= reply;
    }
    expect(statuses).to.deep.equal([200, 200, 200, 429, 429]);
    expectEnvelope(refused!, 429, 'HTTP_429');
    expect(refused!.headers.get('retry-after')).to.match(/^\d+$/);
    // another credential has its own allowance, and the other routes the general one
    expect((await run(app, await createKey(sql, 'adm', { name: 'idle' }), { query: '* | count' })).status).to.equal(
      200,
    );
    expect((await app.get('/api/v1/configuration-items?limit=1', key)).status).to.equal(200);
  });

  const walk = { query: '* <-[* 1..5]-> * <-[* 1..5]-> raw_data.text matches "^x+y$" | count by namespace' };

  (onRealPostgres ? it : it.skip)(
    'answers 422 reason timeout past CINV_QUERY_TIMEOUT (skipped on the embedded database: PGlite does not enforce statement timeouts)',
    async () => {
      const app = await start({ queryTimeoutMs: 30 });
      const key = await createKey(sql, 'adm', { name: 'patient' });
      const slow = await run(app, key, walk);
      expectEnvelope(slow, 422, 'HTTP_422');
      expect(slow.body.error.details).to.deep.include({ reason: 'timeout', timeout_ms: 30 });
    },
  );

  it('explains a heavy query without running it, and answers a light one under the same limit', async () => {
    const app = await start({ queryTimeoutMs: 30 });
    const key = await createKey(sql, 'adm', { name: 'planner' });
    const plan = await run(app, key, { ...walk, explain: true });
    expect(plan.status, plan.text).to.equal(200);
    expect(plan.body.kind).to.equal('explain');
    expect(plan.body.plan.steps.length).to.be.greaterThan(0);
    expect(plan.body.plan.total_cost).to.be.greaterThan(0);
    const light = await run(app, key, { query: 'name = pod-3 | fields name' });
    expect(light.status, light.text).to.equal(200);
  });

  describe('with CINV_QUERY_SCAN_ROWS at 1', () => {
    let app: TestApp;
    const keys: Record<string, string> = {};
    // no predicate an index serves: configuration_items read whole
    const scanning = { query: 'status in (active, inactive, archived) and raw_data.spec.replicas > 2 | count' };

    before(async () => {
      app = await start({ queryScanRows: 1 });
      const svc = (permissions: Permission[]) =>
        createKey(sql, 'svc', { permissions, scopes: [{ sourceId: null, scopeId: null }] });
      keys.adm = await createKey(sql, 'adm', { name: 'scan adm' });
      keys.ro = await createKey(sql, 'ro', { name: 'scan ro' });
      keys.heavy = await svc(['configuration_items:read', 'queries:read']);
      keys.light = await svc(['configuration_items:read']);
    });

    it('explains the plan, rated heavy, naming the table it would read whole, without refusing', async () => {
      const plan = await run(app, keys.light!, { ...scanning, explain: true });
      expect(plan.status, plan.text).to.equal(200);
      expect(plan.body.plan.rating).to.equal('heavy');
      expect(plan.body.plan.scans.map((s: { table: string }) => s.table)).to.include('configuration_items');
      expect(plan.body.plan.steps.some((s: { access: string }) => s.access === 'scan')).to.equal(true);
    });

    it('refuses it with 422 reason scan unless allow_scan is set by a caller holding queries:read', async () => {
      for (const [who, allowScan, status] of [
        ['light', false, 422],
        ['light', true, 422],
        ['ro', true, 422],
        ['heavy', false, 422],
        ['heavy', true, 200],
        ['adm', true, 200],
        ['adm', false, 422],
      ] as const) {
        const reply = await run(app, keys[who]!, { ...scanning, allow_scan: allowScan });
        expect(reply.status, `${who}, allow_scan ${allowScan}: ${reply.text}`).to.equal(status);
        if (status === 422) {
          expectEnvelope(reply, 422, 'HTTP_422');
          expect(reply.body.error.details).to.deep.include({ reason: 'scan', allow_scan: allowScan });
          expect(reply.body.error.details.scans[0].table).to.equal('configuration_items');
        } else expect(reply.body.groups[0].count, 'replicas 3 and 4: two CIs in five').to.equal((CIS * 2) / 5);
      }
    });

    it('runs a query an index serves without asking', async () => {
      const reply = await run(app, keys.light!, { query: 'name = pod-4 | fields name' });
      expect(reply.status, reply.text).to.equal(200);
      expect(reply.body.items.map((i: { fields: { name: string } }) => i.fields.name)).to.deep.equal(['pod-4']);
    });
  });
});
