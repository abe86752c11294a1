import { expect } from 'chai';
import { apiRoutes } from '../../../src/app.js';
import type { Permission } from '../../../src/platform/auth/principal.js';
import { reconcile } from '../../../src/inventory/write-path/reconcile.js';
import { ensureSource } from '../../../src/collection/sources/store.js';
import { setSuperadmin } from '../../../src/identity/users/store.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod } from '../../support/factories.js';

/**
 * Every route that writes, for principals of every kind, aimed at the instance `pb` of a source
 * whose other instance is `pa`: the answer and, read back from the database, the effect agree with
 * a model of the write rule kept here apart from the code (which instances each principal holds,
 * which permissions). The route list comes from the router: a new writing route must be added
 * here, or to EXEMPT with the reason and the suite that covers it.
 */

interface Writer {
  name: string;
  key: string;
  /** The instances of the source it may write into ('all': the whole source). */
  holds: 'all' | string[];
  /** Whether no data scope narrows it at all. */
  allData?: boolean;
  permissions: Set<Permission> | 'all';
}

interface World {
  app: TestApp;
  sourceId: string;
  collectorId: string;
  counter: number;
}

const may = (who: Writer, permission: Permission) => who.permissions === 'all' || who.permissions.has(permission);
const holdsInstance = (who: Writer, instance: string) => who.holds === 'all' || who.holds.includes(instance);
const holdsSource = (who: Writer) => who.holds === 'all';
/** A source the writer sees at all (any instance of it): otherwise a route about it answers 404. */
const seesSource = (who: Writer) => who.holds === 'all' || who.holds.length > 0;

interface Attempt {
  /** What the model expects: the status, and whether the target in pb is changed. */
  expected(who: Writer): { status: number; changes: boolean };
  /** Makes the target, sends the request, and returns the status and whether the target changed. */
  run(world: World, who: Writer): Promise<{ status: number; changed: boolean; text: string }>;
}

/** A fresh CI in `pb` for one attempt. */
async function victim(world: World): Promise<{ externalId: string; ciId: string }> {
  const externalId = `pod/victim-${++world.counter}`;
  await reconcile(world.app.sql, {
    tenantId: DEFAULT_TENANT_ID,
    sourceId: world.sourceId,
    scopeId: 'pb',
    mode: 'delta',
    records: [buildPod({ name: `victim-${world.counter}`, external_id: externalId, namespace: 'shop' })],
  });
  const [row] = await world.app.sql<
    { ci_id: string }[]
  >`select ci_id from configuration_items where external_id = ${externalId}`;
  return { externalId, ciId: row!.ci_id };
}

const rowOf = async (world: World, ciId: string) =>
  JSON.stringify(
    await world.app
      .sql`select scope_id, name, status, raw_data, updated_at from configuration_items where ci_id = ${ciId}`,
  );
const sourceRow = async (world: World) =>
  JSON.stringify(
    await world.app
      .sql`select s.name, s.status, s.config, s.health_status, (select md5(c::text) from source_credentials c where c.source_id = s.id) as credentials from sources s where s.id = ${world.sourceId}`,
  );

/** 401/403 before anything else: the route's own permission. */
const refusedWithout = (who: Writer, permission: Permission, otherwise: { status: number; changes: boolean }) =>
  may(who, permission) ? otherwise : { status: 403, changes: false };

const ingestInto = (shape: (externalId: string) => unknown): Attempt => ({
  expected: (who) =>
    refusedWithout(
      who,
      'configuration_items:write',
      !seesSource(who)
        ? { status: 404, changes: false }
        : holdsInstance(who, 'pb')
          ? { status: 200, changes: true }
          : { status: 403, changes: false },
    ),
  async run(world, who) {
    const target = await victim(world);
    const before = await rowOf(world, target.ciId);
    const reply = await world.app.request('POST', `/api/v1/sources/${world.sourceId}/ingest`, {
      key: who.key,
      body: shape(target.externalId),
    });
    return { status: reply.status, changed: (await rowOf(world, target.ciId)) !== before, text: reply.text };
  },
});

const sourceWrite = (
  method: string,
  path: (world: World) => string,
  body: (n: number) => unknown,
  permission: Permission,
  wholeSource: 'source' | 'data',
  okStatus: number,
): Attempt => ({
  expected: (who) => {
    if (!may(who, permission)) return { status: 403, changes: false };
    if (!seesSource(who)) return { status: 404, changes: false };
    // changing a source's settings needs all data; its shared state (credentials, health) the whole source
    const allowed = wholeSource === 'source' ? holdsSource(who) : who.allData === true;
    return allowed ? { status: okStatus, changes: true } : { status: 403, changes: false };
  },
  async run(world, who) {
    const before = await sourceRow(world);
    // a new value each time, so that an allowed write shows as a change
    const reply = await world.app.request(method, path(world), { key: who.key, body: body(++world.counter) });
    const changed = (await sourceRow(world)) !== before;
    return { status: reply.status, changed, text: reply.text };
  },
});

const MATRIX: Record<string, Attempt> = {
  'POST /api/v1/sources/{source_id}/ingest (takeover by external id)': ingestInto((externalId) => ({
    scope_id: 'pa',
    mode: 'delta',
    items: [buildPod({ name: 'stolen', external_id: externalId, namespace: 'shop' })],
  })),
  'POST /api/v1/sources/{source_id}/ingest (deletion)': ingestInto((externalId) => ({
    scope_id: 'pa',
    mode: 'delta',
    items: [],
    deletions: [externalId],
  })),
  'POST /api/v1/sources/{source_id}/ingest (into pb itself)': {
    expected: (who) =>
      refusedWithout(
        who,
        'configuration_items:write',
        !seesSource(who)
          ? { status: 404, changes: false }
          : holdsInstance(who, 'pb')
            ? { status: 200, changes: true }
            : { status: 403, changes: false },
      ),
    async run(world, who) {
      const target = await victim(world);
      const before = await rowOf(world, target.ciId);
      const reply = await world.app.request('POST', `/api/v1/sources/${world.sourceId}/ingest`, {
        key: who.key,
        body: { scope_id: 'pb', mode: 'delta', items: [], deletions: [target.externalId] },
      });
      return { status: reply.status, changed: (await rowOf(world, target.ciId)) !== before, text: reply.text };
    },
  },
  'DELETE /api/v1/configuration-items/{ci_id}': {
    expected: (who) =>
      may(who, 'configuration_items:delete')
        ? holdsInstance(who, 'pb')
          ? { status: 200, changes: true }
          : { status: 404, changes: false }
        : { status: 403, changes: false },
    async run(world, who) {
      const target = await victim(world);
      const before = await rowOf(world, target.ciId);
      const reply = await world.app.request('DELETE', `/api/v1/configuration-items/${target.ciId}`, { key: who.key });
      return { status: reply.status, changed: (await rowOf(world, target.ciId)) !== before, text: reply.text };
    },
  },
  'PUT /api/v1/sources/{source_id}/credentials': sourceWrite(
    'PUT',
    (w) => `/api/v1/sources/${w.sourceId}/credentials`,
    (n) => ({ type: 'token', token: `matrix-token-${n}` }),
    'credentials:write',
    'source',
    204,
  ),
  'PUT /api/v1/sources/{source_id}/health': sourceWrite(
    'PUT',
    (w) => `/api/v1/sources/${w.sourceId}/health`,
    (n) => ({ status: 'healthy', message: 'ok', timestamp: n }),
    'sources:write',
    'source',
    200,
  ),
  'PUT /api/v1/sources/{source_id}': sourceWrite(
    'PUT',
    (w) => `/api/v1/sources/${w.sourceId}`,
    (n) => ({ name: `write-matrix-${n}` }),
    'sources:write',
    'data',
    200,
  ),
  'POST /api/v1/query (a read in a POST body: writes nothing, shows pb only to who holds it)': {
    expected: (who) => refusedWithout(who, 'configuration_items:read', { status: 200, changes: false }),
    async run(world, who) {
      const target = await victim(world);
      const before = await rowOf(world, target.ciId);
      const reply = await world.app.request('POST', '/api/v1/query', {
        key: who.key,
        body: { query: `external_id = "${target.externalId}"` },
      });
      if (reply.status === 200) {
        const seen = reply.body.items.map((item: { ci_id: string }) => item.ci_id);
        expect(seen, who.name).to.deep.equal(holdsInstance(who, 'pb') ? [target.ciId] : []);
      }
      return { status: reply.status, changed: (await rowOf(world, target.ciId)) !== before, text: reply.text };
    },
  },
  'POST /api/v1/collectors/{collector_id}/trigger': {
    // the source's type does not collect: a principal allowed to trigger is told so (409), nothing is queued either way
    expected: (who) =>
      !may(who, 'collectors:write')
        ? { status: 403, changes: false }
        : !seesSource(who)
          ? { status: 404, changes: false }
          : holdsSource(who)
            ? { status: 409, changes: false }
            : { status: 403, changes: false },
    async run(world, who) {
      const runs = async () =>
        JSON.stringify(await world.app.sql`select count(*) from collection_runs where source_id = ${world.sourceId}`);
      const before = await runs();
      const reply = await world.app.request('POST', `/api/v1/collectors/${world.collectorId}/trigger`, {
        key: who.key,
      });
      return { status: reply.status, changed: (await runs()) !== before, text: reply.text };
    },
  },
};

const EXEMPT: Record<string, string> = {
  'POST /api/v1/sources': 'creating a source needs all data (tested with the sources API)',
  'DELETE /api/v1/sources/{source_id}': 'deleting a source needs all data (tested with the sources API)',
  'POST /api/v1/collectors/{collector_id}/sources': 'adding a source needs all data (tested with the sources API)',
  'DELETE /api/v1/sources/{source_id}/credentials':
    'the rule of PUT credentials, one function (tested with the credentials)',
  'POST /api/v1/changes/refresh-stats': 'maintenance: folds the statistics queue, writes no inventory data',
  'POST /api/v1/subscriptions': 'an object of its owner (the owner matrix of the subscriptions)',
  'PUT /api/v1/subscriptions/{id}': 'an object of its owner (the owner matrix of the subscriptions)',
  'DELETE /api/v1/subscriptions/{id}': 'an object of its owner (the owner matrix of the subscriptions)',
  'POST /api/v1/subscriptions/{id}/rotate-secret': 'an object of its owner (the owner matrix of the subscriptions)',
  'POST /api/v1/subscriptions/{id}/test': 'an object of its owner (the owner matrix of the subscriptions)',
  'POST /api/v1/subscriptions/{id}/deliveries/{delivery_id}/redeliver':
    'an object of its owner (the owner matrix of the subscriptions)',
  'POST /api/v1/saved-views': 'an object of its owner (tested with the saved views)',
  'DELETE /api/v1/saved-views/{view_id}': 'an object of its owner (tested with the saved views)',
  'POST /api/v1/baselines': 'a named moment, no inventory data (tested with the time machine)',
  'DELETE /api/v1/baselines/{baseline_id}': 'an object of its owner (tested with the time machine)',
  'POST /api/v1/tokens': "the caller's own tokens (grant ceiling)",
  'DELETE /api/v1/tokens/{token_id}': "the caller's own tokens",
  'POST /api/v1/users/{user_id}/tokens': 'identity administration (grant ceiling)',
  'DELETE /api/v1/users/{user_id}/tokens/{token_id}': 'identity administration (grant ceiling)',
  'POST /api/v1/api-keys': 'key administration (grant ceiling)',
  'DELETE /api/v1/api-keys/{key_id}': 'key administration (grant ceiling)',
  'POST /api/v1/users': 'identity administration (grant ceiling)',
  'POST /api/v1/users/{user_id}/deactivate': 'identity administration (grant ceiling)',
  'POST /api/v1/users/{user_id}/reactivate': 'identity administration (grant ceiling)',
  'PUT /api/v1/users/{user_id}/superadmin': 'identity administration (grant ceiling)',
  'PUT /api/v1/users/{user_id}/permissions': 'identity administration (grant ceiling)',
  'PUT /api/v1/users/{user_id}/scopes': 'identity administration (grant ceiling)',
  'POST /api/v1/teams': 'identity administration (grant ceiling)',
  'PUT /api/v1/teams/{team_id}': 'identity administration (grant ceiling)',
  'DELETE /api/v1/teams/{team_id}': 'identity administration (grant ceiling)',
  'PUT /api/v1/teams/{team_id}/members/{user_id}': 'identity administration (grant ceiling)',
  'DELETE /api/v1/teams/{team_id}/members/{user_id}': 'identity administration (grant ceiling)',
  'PUT /api/v1/teams/{team_id}/permissions': 'identity administration (grant ceiling)',
  'PUT /api/v1/teams/{team_id}/scopes': 'identity administration (grant ceiling)',
  'POST /auth/logout': 'sign-out',
  'POST /auth/session': 'sign-in with a key; the session acts as the key',
  'POST /api/v1/collectors': 'gone (410)',
  'PUT /api/v1/collectors': 'gone (410)',
  'PATCH /api/v1/collectors': 'gone (410)',
  'DELETE /api/v1/collectors': 'gone (410)',
  'POST /api/v1/collectors/{collector_id}': 'gone (410)',
  'PUT /api/v1/collectors/{collector_id}': 'gone (410)',
  'PATCH /api/v1/collectors/{collector_id}': 'gone (410)',
  'DELETE /api/v1/collectors/{collector_id}': 'gone (410)',
  'POST /api/v1/identities/decisions': 'the identity matrix (test/inventory/identities/access.test.ts)',
  'DELETE /api/v1/identities/decisions/{decision_id}': 'the identity matrix (test/inventory/identities/access.test.ts)',
  'PUT /api/v1/identities/rules': 'tenant-wide, all data only (test/inventory/identities/access.test.ts)',
  'PUT /api/v1/quality/settings': 'tenant-wide, all data only (test/inventory/quality/access.test.ts)',
  'POST /api/v1/quality/rules': 'tenant-wide, all data only (test/inventory/quality/access.test.ts)',
  'PUT /api/v1/quality/rules/{rule_id}': 'tenant-wide, all data only (test/inventory/quality/access.test.ts)',
  'DELETE /api/v1/quality/rules/{rule_id}': 'tenant-wide, all data only (test/inventory/quality/access.test.ts)',
  'POST /api/v1/quality/rules/preview':
    "a dry run that writes nothing, inside the caller's scopes (test/inventory/quality/access.test.ts)",
  'POST /api/v1/identities/identify': 'a dry run that writes nothing (test/inventory/identities/access.test.ts)',
  'POST /api/v1/change-rules': 'tenant-wide, all data only (test/history/change-rules/access.test.ts)',
  'PUT /api/v1/change-rules/{rule_id}': 'tenant-wide, all data only (test/history/change-rules/access.test.ts)',
  'DELETE /api/v1/change-rules/{rule_id}': 'tenant-wide, all data only (test/history/change-rules/access.test.ts)',
  'POST /api/v1/change-rules/apply': 'tenant-wide, all data only (test/history/change-rules/access.test.ts)',
  'PUT /api/v1/change-settings': 'tenant-wide, all data only (test/history/change-rules/access.test.ts)',
};

const routeName = (route: { method: string; path: string }) => `${route.method} ${route.path}`;
const baseName = (entry: string) => entry.replace(/ \(.*\)$/, '');

describe('one write matrix for every route that writes: a principal writes only inside the instances it holds', function () {
  this.timeout(120_000);
  let world: World;
  const writers: Writer[] = [];

  before(async () => {
    const { sql } = await testDatabase();
    await resetDatabase(sql);
    const app = await startTestApp();
    const source = await ensureSource(sql, DEFAULT_TENANT_ID, 'write-matrix', 'universal');
    await reconcile(sql, {
      tenantId: DEFAULT_TENANT_ID,
      sourceId: source.id,
      scopeId: 'pa',
      mode: 'delta',
      records: [buildPod({ name: 'a-own', external_id: 'pod/a-own' })],
    });
    world = { app, sourceId: source.id, collectorId: source.collector_id, counter: 0 };

    const admin = await createKey(sql, 'adm', { name: 'adm key' });
    const request = async (method: string, path: string, body?: unknown) => {
      const reply = await app.request(method, path, { key: admin, body });
      expect(reply.status, `${method} ${path}: ${reply.text}`).to.be.oneOf([200, 201, 204]);
      return reply.body;
    };
    const pa = [{ sourceId: source.id, scopeId: 'pa' }];
    const scopeBody = { scopes: [{ source_id: source.id, scope_id: 'pa' }] };
    const expires = new Date(Date.now() + 86_400_000).toISOString();
    const writes: Permission[] = [
      'configuration_items:write',
      'configuration_items:delete',
      'configuration_items:read',
      'sources:write',
      'sources:read',
      'collectors:write',
      'collectors:read',
      'credentials:write',
    ];

    writers.push({ name: 'adm key', key: admin, holds: 'all', allData: true, permissions: 'all' });
    writers.push({
      name: 'ro key',
      key: await createKey(sql, 'ro'),
      holds: 'all',
      allData: true,
      permissions: new Set<Permission>(['configuration_items:read', 'sources:read', 'collectors:read']),
    });
    for (const permission of writes.filter((p) => !p.endsWith(':read'))) {
      const permissions = [permission, 'configuration_items:read', 'sources:read', 'collectors:read'] as Permission[];
      writers.push({
        name: `svc key, pa, ${permission}`,
        key: await createKey(sql, 'svc', { permissions, scopes: pa, name: `svc ${permission}` }),
        holds: ['pa'],
        permissions: new Set(permissions),
      });
    }
    writers.push({
      name: 'svc key, pa and pb',
      key: await createKey(sql, 'svc', {
        permissions: writes,
        scopes: [...pa, { sourceId: source.id, scopeId: 'pb' }],
      }),
      holds: ['pa', 'pb'],
      permissions: new Set(writes),
    });
    writers.push({
      name: 'svc key, whole source',
      key: await createKey(sql, 'svc', { permissions: writes, scopes: [{ sourceId: source.id, scopeId: null }] }),
      holds: 'all',
      permissions: new Set(writes),
    });
    writers.push({
      name: 'svc key, no scopes',
      key: await createKey(sql, 'svc', { permissions: writes, scopes: [] }),
      holds: [],
      permissions: new Set(writes),
    });

    const user = await request('POST', '/api/v1/users', { name: 'writer', email: 'writer@example.com' });
    await request('PUT', `/api/v1/users/${user.id}/permissions`, { permissions: writes });
    await request('PUT', `/api/v1/users/${user.id}/scopes`, scopeBody);
    const direct = await request('POST', `/api/v1/users/${user.id}/tokens`, { name: 'matrix', expires_at: expires });
    writers.push({ name: 'usr token, scoped user', key: direct.token, holds: ['pa'], permissions: new Set(writes) });

    const member = await request('POST', '/api/v1/users', { name: 'member', email: 'member@example.com' });
    const team = await request('POST', '/api/v1/teams', { name: 'writers' });
    await request('PUT', `/api/v1/teams/${team.id}/permissions`, { permissions: writes });
    await request('PUT', `/api/v1/teams/${team.id}/scopes`, scopeBody);
    await request('PUT', `/api/v1/teams/${team.id}/members/${member.id}`, {});
    const memberToken = await request('POST', `/api/v1/users/${member.id}/tokens`, {
      name: 'matrix',
      expires_at: expires,
    });
    writers.push({
      name: 'usr token, team member',
      key: memberToken.token,
      holds: ['pa'],
      permissions: new Set(writes),
    });

    const boss = await request('POST', '/api/v1/users', { name: 'boss', email: 'boss@example.com' });
    // minted before the promotion: only a superadmin acts as one
    const bossToken = await request('POST', `/api/v1/users/${boss.id}/tokens`, { name: 'matrix', expires_at: expires });
    await setSuperadmin(sql, DEFAULT_TENANT_ID, boss.id, true);
    writers.push({
      name: 'usr token, superadmin',
      key: bossToken.token,
      holds: 'all',
      allData: true,
      permissions: 'all',
    });
  });

  after(async () => {
    await world?.app.close();
  });

  it('covers every writing route: in the matrix, or exempt with the reason and the suite that covers it', () => {
    const names = apiRoutes.filter((route) => route.method !== 'GET').map(routeName);
    const covered = new Set([...Object.keys(MATRIX).map(baseName), ...Object.keys(EXEMPT)]);
    expect(
      names.filter((name) => !covered.has(name)),
      'add these routes to the write matrix (or to EXEMPT, with a reason)',
    ).to.deep.equal([]);
    expect(
      [...covered].filter((name) => !names.includes(name)),
      'entries for routes that no longer exist',
    ).to.deep.equal([]);
  });

  for (const [name, attempt] of Object.entries(MATRIX)) {
    it(`${name}: each principal gets what the model of the write rule says, and the database agrees`, async () => {
      for (const who of writers) {
        const expected = attempt.expected(who);
        const outcome = await attempt.run(world, who);
        expect(outcome.status, `${who.name}: ${outcome.text}`).to.equal(expected.status);
        expect(
          outcome.changed,
          `${who.name}: the target ${expected.changes ? 'should have' : 'should not have'} changed`,
        ).to.equal(expected.changes);
      }
    });
  }
});
