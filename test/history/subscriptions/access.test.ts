import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Permission } from '../../../src/platform/auth/principal.js';
import { SubscriptionDelivery } from '../../../src/history/subscriptions/delivery.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { setSuperadmin } from '../../../src/identity/users/store.js';
import { createKey, startTestApp, type Reply, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, buildSource, ingest } from '../../support/factories.js';

/**
 * Owner A's subscription against every other kind of principal, on every route of a subscription:
 * only the owner and principals whose rights cover the owner's (a superadmin, an adm key, a key or
 * user holding every permission and data scope the owner holds) see it or act on it. Everyone else
 * gets 404, as if it were absent (403 first where the route's own permission is missing), the list
 * leaves it out, and nothing changes in the database: the secret, the settings, the row, the batches.
 */

const OWNER_PERMISSIONS: Permission[] = ['changes:read', 'subscriptions:read', 'subscriptions:write'];

type Route = 'GET one' | 'list' | 'PUT' | 'DELETE' | 'rotate-secret' | 'test' | 'deliveries' | 'redeliver';
const ROUTES: Route[] = ['GET one', 'list', 'deliveries', 'test', 'redeliver', 'rotate-secret', 'PUT', 'DELETE'];
/** What each route needs of the caller before it looks for the subscription (PUT makes the caller the owner: it needs changes:read). */
const NEEDS: Record<Route, Permission[]> = {
  'GET one': ['subscriptions:read'],
  list: ['subscriptions:read'],
  deliveries: ['subscriptions:read'],
  test: ['subscriptions:write'],
  redeliver: ['subscriptions:write'],
  'rotate-secret': ['subscriptions:write'],
  PUT: ['subscriptions:write', 'changes:read'],
  DELETE: ['subscriptions:write'],
};

interface Caller {
  key: string;
  /** Its permissions, for the 403 a route answers before looking (undefined: every one). */
  permissions?: Permission[];
}

describe("change subscriptions: only the owner, or whoever covers the owner's rights, sees or acts on a subscription", function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: string;
  let owner: string;
  let sourceA: string;
  let sourceB: string;
  let server: Server;
  let url = '';
  let received = 0;
  const callers: Record<string, Caller> = {};
  let serial = 0;

  const ok = async (method: string, path: string, body?: unknown, key = admin) => {
    const reply = await app.request(method, path, { key, body });
    expect(reply.status, `${method} ${path}: ${reply.text}`).to.be.oneOf([200, 201]);
    return reply.body;
  };
  /** A token-only user holding these rights (given by the admin key), and a token of its own. */
  async function userToken(
    permissions: Permission[],
    scopes: { source_id: string | null; scope_id: string | null }[],
  ): Promise<{ id: string; token: string }> {
    const user = await ok('POST', '/api/v1/users', { name: `subscriber ${++serial}` });
    await ok('PUT', `/api/v1/users/${user.id}/permissions`, { permissions });
    await ok('PUT', `/api/v1/users/${user.id}/scopes`, { scopes });
    const token = await ok('POST', `/api/v1/users/${user.id}/tokens`, {
      name: 't',
      expires_at: new Date(app.clock.now.getTime() + 30 * 86_400_000).toISOString(),
    });
    return { id: user.id as string, token: token.token as string };
  }

  before(async () => {
    await resetDatabase((await testDatabase()).sql);
    app = await startTestApp({ sourceAllowedHosts: ['127.0.0.1'] });
    admin = await createKey(app.sql, 'adm');
    sourceA = await buildSource(app.sql, 'sub-access-a');
    sourceB = await buildSource(app.sql, 'sub-access-b');
    owner = await createKey(app.sql, 'svc', {
      name: 'owner A',
      permissions: OWNER_PERMISSIONS,
      scopes: [{ sourceId: sourceA, scopeId: 'cluster-a' }],
    });
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        received++;
        res.statusCode = 204;
        res.end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;

    // whose rights do not cover owner A's
    callers["svc with subscriptions:write and another source's scope"] = {
      key: await createKey(app.sql, 'svc', {
        permissions: OWNER_PERMISSIONS,
        scopes: [{ sourceId: sourceB, scopeId: null }],
      }),
      permissions: OWNER_PERMISSIONS,
    };
    callers['svc with subscriptions:write and another instance of the same source'] = {
      key: await createKey(app.sql, 'svc', {
        permissions: OWNER_PERMISSIONS,
        scopes: [{ sourceId: sourceA, scopeId: 'cluster-b' }],
      }),
      permissions: OWNER_PERMISSIONS,
    };
    callers['svc with subscriptions:read/write and no scope'] = {
      key: await createKey(app.sql, 'svc', { permissions: OWNER_PERMISSIONS }),
      permissions: OWNER_PERMISSIONS,
    };
    callers['svc with only subscriptions:write and no scope'] = {
      key: await createKey(app.sql, 'svc', { permissions: ['subscriptions:write'] }),
      permissions: ['subscriptions:write'],
    };
    callers["svc with the owner's scope but not changes:read"] = {
      key: await createKey(app.sql, 'svc', {
        permissions: ['subscriptions:read', 'subscriptions:write'],
        scopes: [{ sourceId: sourceA, scopeId: null }],
      }),
      permissions: ['subscriptions:read', 'subscriptions:write'],
    };
    callers['ro key (reads everything, writes nothing)'] = {
      key: await createKey(app.sql, 'ro'),
      permissions: [
        'configuration_items:read',
        'changes:read',
        'relationships:read',
        'sources:read',
        'collectors:read',
        'audit:read',
        'subscriptions:read',
      ],
    };
    callers['user token of a user with subscriptions:write and another scope'] = {
      key: (await userToken(OWNER_PERMISSIONS, [{ source_id: sourceB, scope_id: null }])).token,
      permissions: OWNER_PERMISSIONS,
    };
  });
  after(async () => {
    await app.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  /** A subscription of owner A with one delivered batch. */
  async function ownersSubscription(name: string): Promise<{ id: string; deliveryId: string; secret: string }> {
    const made = await app.request('POST', '/api/v1/subscriptions', {
      key: owner,
      body: { name, sink: { type: 'webhook', url } },
    });
    expect(made.status, made.text).to.equal(201);
    await ingest(app.sql, [buildPod({ name: `${name}-pod` })], { source: 'sub-access-a', scopeId: 'cluster-a' });
    const delivery = new SubscriptionDelivery(app.context);
    try {
      await delivery.tick();
      await delivery.settle();
    } finally {
      await delivery.stop();
    }
    const [batch] = await app.sql<
      { id: string; status: string }[]
    >`select id::text as id, status from subscription_deliveries where subscription_id = ${made.body.id}`;
    expect(batch?.status).to.equal('delivered');
    return { id: made.body.id, deliveryId: batch!.id, secret: made.body.secret };
  }

  /** What may not change when someone else tries: the row (settings, owner, secret) and its batches. */
  const plain = (rows: readonly object[]) => rows.map((row) => ({ ...row }));
  const stateOf = async (id: string) => ({
    subscription: plain(
      await app.sql`
      select name, owner_kind, owner_id, sink::text as sink, filters, search, enabled, state, secret_key_version, secret_nonce, secret_ciphertext,
             previous_ciphertext, previous_until, updated_at
      from subscriptions where id = ${id}`,
    ),
    deliveries: plain(
      await app.sql`select id::text as id, sequence::text as sequence, status, attempts, next_attempt_at, retry_since from subscription_deliveries where subscription_id = ${id} order by id`,
    ),
  });

  function call(route: Route, key: string, s: { id: string; deliveryId: string }): Promise<Reply> {
    const at = `/api/v1/subscriptions/${s.id}`;
    switch (route) {
      case 'GET one':
        return app.get(at, key);
      case 'list':
        return app.get('/api/v1/subscriptions', key);
      case 'deliveries':
        return app.get(`${at}/deliveries`, key);
      case 'test':
        return app.request('POST', `${at}/test`, { key });
      case 'redeliver':
        return app.request('POST', `${at}/deliveries/${s.deliveryId}/redeliver`, { key });
      case 'rotate-secret':
        return app.request('POST', `${at}/rotate-secret`, { key, body: { overlap_seconds: 60 } });
      case 'PUT':
        return app.request('PUT', at, {
          key,
          body: { name: 'taken over', sink: { type: 'webhook', url: 'http://127.0.0.1:9/elsewhere' }, filter: [] },
        });
      case 'DELETE':
        return app.request('DELETE', at, { key });
    }
  }

  describe("principals whose rights do not cover the owner's: 404 (403 without the route's permission), and nothing changes", () => {
    let target: { id: string; deliveryId: string; secret: string };
    before(async () => {
      target = await ownersSubscription('owned by A');
    });

    for (const name of [
      "svc with subscriptions:write and another source's scope",
      'svc with subscriptions:write and another instance of the same source',
      'svc with subscriptions:read/write and no scope',
      'svc with only subscriptions:write and no scope',
      "svc with the owner's scope but not changes:read",
      'ro key (reads everything, writes nothing)',
      'user token of a user with subscriptions:write and another scope',
    ]) {
      it(name, async () => {
        const caller = callers[name]!;
        const before = await stateOf(target.id);
        for (const route of ROUTES) {
          const sent = received;
          const reply = await call(route, caller.key, target);
          const permitted = NEEDS[route].every(
            (p) => caller.permissions === undefined || caller.permissions.includes(p),
          );
          if (route === 'list') {
            if (permitted) {
              expect(reply.status, `${route}: ${reply.text}`).to.equal(200);
              expect(
                reply.body.items.map((s: { id: string }) => s.id),
                route,
              ).not.to.include(target.id);
            } else {
              expect(reply.status, `${route}: ${reply.text}`).to.equal(403);
            }
          } else {
            expect(reply.status, `${route}: ${reply.text}`).to.equal(permitted ? 404 : 403);
          }
          // nothing of the subscription in the answer, nothing sent, nothing changed
          expect(reply.text, route).not.to.include(url);
          expect(reply.text, route).not.to.include('whsec_');
          expect(received, `${route} sent a message`).to.equal(sent);
          expect(await stateOf(target.id), `${route} changed the subscription`).to.deep.equal(before);
        }
      });
    }

    it('and the owner still sees it unchanged, with the secret it was given', async () => {
      const shown = await app.get(`/api/v1/subscriptions/${target.id}`, owner);
      expect(shown.status, shown.text).to.equal(200);
      expect(shown.body).to.deep.include({ name: 'owned by A', secret_rotating_until: null });
      expect(shown.body.owner.name).to.equal('owner A');
    });
  });

  describe("the owner, and principals whose rights cover the owner's: every route answers", () => {
    const covering: Record<string, () => Promise<string>> = {
      'the owner itself': async () => owner,
      'adm key': async () => admin,
      'superadmin (user token)': async () => {
        const boss = await userToken([], []);
        await setSuperadmin(app.sql, DEFAULT_TENANT_ID, boss.id, true);
        return boss.token;
      },
      'svc holding more permissions and the whole source': () =>
        createKey(app.sql, 'svc', {
          permissions: [...OWNER_PERMISSIONS, 'configuration_items:read'],
          scopes: [{ sourceId: sourceA, scopeId: null }],
        }),
      "user token of a user holding the owner's permissions and all data": async () =>
        (await userToken(OWNER_PERMISSIONS, [{ source_id: null, scope_id: null }])).token,
    };
    for (const [name, keyOf] of Object.entries(covering)) {
      it(name, async () => {
        const key = await keyOf();
        const target = await ownersSubscription(`covered: ${name}`);
        for (const route of ROUTES) {
          const reply = await call(route, key, target);
          expect(reply.status, `${route}: ${reply.text}`).to.equal(route === 'DELETE' ? 204 : 200);
          if (route === 'list') expect(reply.body.items.map((s: { id: string }) => s.id)).to.include(target.id);
          if (route === 'deliveries')
            expect(reply.body.items.map((d: { id: string }) => d.id)).to.deep.equal([target.deliveryId]);
          if (route === 'test') expect(reply.body.delivered).to.equal(true);
          if (route === 'redeliver') expect(reply.body.status).to.equal('pending');
          if (route === 'rotate-secret') expect(reply.body.secret).to.be.a('string').and.not.equal(target.secret);
          if (route === 'PUT') expect(reply.body.name).to.equal('taken over');
        }
        expect((await app.sql`select 1 from subscriptions where id = ${target.id}`).length).to.equal(0);
      });
    }
  });

  it('takes an owner who can no longer act as holding everything: only a principal holding everything then sees the subscription', async () => {
    const ownerKey = await createKey(app.sql, 'svc', {
      permissions: OWNER_PERMISSIONS,
      scopes: [{ sourceId: sourceA, scopeId: 'cluster-a' }],
    });
    const made = await app.request('POST', '/api/v1/subscriptions', {
      key: ownerKey,
      body: { name: 'orphan', sink: { type: 'webhook', url } },
    });
    expect(made.status, made.text).to.equal(201);
    const wider = await createKey(app.sql, 'svc', {
      permissions: OWNER_PERMISSIONS,
      scopes: [{ sourceId: sourceA, scopeId: null }],
    });
    expect((await app.get(`/api/v1/subscriptions/${made.body.id}`, wider)).status).to.equal(200);
    await app.sql`update api_keys set revoked_at = now() where id = ${made.body.owner.id}`;
    expect((await app.get(`/api/v1/subscriptions/${made.body.id}`, wider)).status).to.equal(404);
    expect(
      (await app.request('POST', `/api/v1/subscriptions/${made.body.id}/rotate-secret`, { key: wider, body: {} }))
        .status,
    ).to.equal(404);
    expect((await app.get('/api/v1/subscriptions', wider)).body.items.map((s: { id: string }) => s.id)).not.to.include(
      made.body.id,
    );
    expect((await app.get(`/api/v1/subscriptions/${made.body.id}`, admin)).status).to.equal(200);
    expect((await app.request('DELETE', `/api/v1/subscriptions/${made.body.id}`, { key: admin })).status).to.equal(204);
  });
});
