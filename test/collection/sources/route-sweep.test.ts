import { expect } from 'chai';
import { collectorRoutes } from '../../../src/collection/collectors/routes.js';
import type { AnyRoute } from '../../../src/context.js';
import { sourceRoutes } from '../../../src/collection/sources/routes.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';

/** A body each route with one accepts, so that what is checked is the status named, not the body. */
const BODIES: Record<string, unknown> = {
  'POST /api/v1/sources': { name: 'sweep', collector_type: 'universal' },
  'PUT /api/v1/sources/{source_id}': { name: 'sweep-renamed' },
  'PUT /api/v1/sources/{source_id}/health': { status: 'healthy', message: 'ok', timestamp: 1 },
  'POST /api/v1/sources/{source_id}/ingest': { items: [] },
  'PUT /api/v1/sources/{source_id}/credentials': { type: 'token', token: 'sweep' },
  'POST /api/v1/collectors/{collector_id}/sources': { name: 'sweep-2' },
};

const name = (route: AnyRoute) => `${route.method} ${route.path}`;
const gone = (route: AnyRoute) => route.responses[410] !== undefined;

/**
 * Every route of the sources and collectors API, from their route lists: 401 without
 * credentials, 403 without the permission, 404 for an id that names nothing, 422 for one that is
 * not an id at all. Their 2xx answers are what the other suites of this folder test.
 */
describe('sources and collectors routes: 401, 403, 404 and 422 for each', function () {
  this.timeout(60_000);
  let app: TestApp;
  let admin: string;
  let powerless: string;

  before(async () => {
    await resetDatabase((await testDatabase()).sql);
    app = await startTestApp();
    admin = await createKey(app.sql, 'adm');
    powerless = await createKey(app.sql, 'svc', { permissions: [], scopes: [{ sourceId: null, scopeId: null }] });
  });
  after(async () => {
    await app?.close();
  });

  const routes = [...sourceRoutes, ...collectorRoutes].filter((route) => !gone(route));
  const call = (route: AnyRoute, ids: Record<string, string>, key?: string) =>
    app.request(
      route.method,
      route.path.replace(/\{(\w+)\}/g, (_, param: string) => ids[param] ?? 'x'),
      {
        key,
        body: BODIES[name(route)] ?? (route.body ? {} : undefined),
      },
    );

  it('covers every route that takes a body with a body it accepts', () => {
    expect(routes.filter((r) => r.body && !(name(r) in BODIES)).map(name)).to.deep.equal([]);
  });

  for (const route of routes) {
    it(`${name(route)}`, async () => {
      const missing = { source_id: '999999', collector_id: '999999', run_id: '00000000-0000-4000-8000-000000000000' };
      expect((await call(route, missing)).status, 'without credentials').to.equal(401);
      if (typeof route.access === 'object')
        expect((await call(route, missing, powerless)).status, 'without the permission').to.equal(403);
      if (route.params) {
        expect((await call(route, missing, admin)).status, 'an id naming nothing').to.equal(404);
        const malformed = { source_id: 'abc', collector_id: 'abc', run_id: 'not-a-uuid' };
        expect((await call(route, malformed, admin)).status, 'not an id').to.equal(422);
      }
    });
  }
});
