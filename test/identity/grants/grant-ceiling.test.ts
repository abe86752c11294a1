import { expect } from 'chai';
import { apiRoutes } from '../../../src/app.js';
import { everyPermission, type Permission } from '../../../src/platform/auth/principal.js';
import { setSuperadmin } from '../../../src/identity/users/store.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, startTestApp, type Reply, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { buildSource } from '../../support/factories.js';
import { contains, type ScopeView, type Rights } from '../../support/rights-oracle.js';

/**
 * The grant ceiling over every route that creates or changes a credential, a grant, a scope or a
 * membership (taken from the router: a new one must be added here or to NARROWING with its
 * reason), for callers of every kind: each attempt to give more than the caller holds is a 403
 * naming what exceeds, and each allowed one yields a principal whose rights are within the caller's.
 */

const NARROWING: Record<string, string> = {
  'DELETE /api/v1/api-keys/{key_id}': 'revokes: takes rights away only',
  'DELETE /api/v1/tokens/{token_id}': 'revokes: takes rights away only',
  'DELETE /api/v1/users/{user_id}/tokens/{token_id}': 'revokes: takes rights away only',
  'POST /api/v1/users/{user_id}/deactivate': 'takes every right of the user away',
  'DELETE /api/v1/teams/{team_id}/members/{user_id}': "takes the team's rights away from the member",
  'DELETE /api/v1/teams/{team_id}': "takes the team's rights away from its members",
  'POST /api/v1/users': 'a new user holds nothing until granted (grants are in the matrix)',
  'POST /api/v1/teams': 'a new team holds nothing until granted (grants are in the matrix)',
  'PUT /api/v1/teams/{team_id}': 'renames: no rights change',
  'POST /auth/session': 'the session acts as the key that opened it, as the key is at each request',
  'POST /auth/logout': 'ends a session',
};

const IDENTITY_PATH = /^\/(api\/v1\/(api-keys|tokens|users|teams)|auth\/)/;
const routeName = (route: { method: string; path: string }) => `${route.method} ${route.path}`;

interface Caller {
  name: string;
  key: string;
  rights: Rights;
  /** The user behind it, for its own tokens. */
  userId?: string;
}

interface Attempt {
  label: string;
  /** What the principal the attempt makes would hold. */
  wanted: Rights;
  /** Makes the attempt; answers the reply and how to read what the new principal holds. */
  run(caller: Caller): Promise<{ reply: Reply; resulting?: () => Promise<Rights> }>;
}

const READS: Permission[] = ['configuration_items:read', 'changes:read', 'relationships:read'];
const RO_TIER: Permission[] = [
  'audit:read',
  'changes:read',
  'collectors:read',
  'configuration_items:read',
  'relationships:read',
  'sources:read',
  'subscriptions:read',
];
const ALL_PERMISSIONS = [...everyPermission()].sort();

describe('grant ceiling: nobody hands out rights they do not hold', () => {
  let app: TestApp;
  let admin: string;
  let s1: string;
  let s2: string;
  const callers: Caller[] = [];
  const inDays = (days: number) => new Date(app.clock.now.getTime() + days * 86_400_000).toISOString();

  const call = (method: string, path: string, key: string, body?: unknown) => app.request(method, path, { key, body });
  const ok = async (method: string, path: string, body?: unknown, key = admin) => {
    const reply = await call(method, path, key, body);
    expect(reply.status, `${method} ${path}: ${reply.text}`).to.be.oneOf([200, 201]);
    return reply.body;
  };
  const meOf = async (key: string): Promise<Rights> => {
    const me = await app.get('/api/v1/me', key);
    expect(me.status, me.text).to.equal(200);
    return { superadmin: me.body.superadmin, permissions: me.body.permissions, scopes: me.body.scopes };
  };
  const effectiveOf = async (userId: string): Promise<Rights> => {
    const user = await app.get(`/api/v1/users/${userId}`, admin);
    return user.body.active
      ? {
          superadmin: user.body.superadmin,
          permissions: user.body.effective.permissions,
          scopes: user.body.effective.scopes,
        }
      : { permissions: [], scopes: [] };
  };
  let serial = 0;
  /** A token-only user holding `rights` (given by the admin key), with a token of its own. */
  async function userWith(rights: Rights, narrow?: { permissions?: Permission[]; scopes?: ScopeView[] }) {
    const user = await ok('POST', '/api/v1/users', { name: `user ${++serial}` });
    await ok('PUT', `/api/v1/users/${user.id}/permissions`, { permissions: rights.permissions });
    await ok('PUT', `/api/v1/users/${user.id}/scopes`, {
      scopes: rights.scopes === 'all' ? [{ source_id: null, scope_id: null }] : rights.scopes,
    });
    const token = await ok('POST', `/api/v1/users/${user.id}/tokens`, { name: 't', expires_at: inDays(30), ...narrow });
    return { id: user.id as string, token: token.token as string };
  }
  const scopesBody = (rights: Rights) =>
    rights.scopes === 'all' ? [{ source_id: null, scope_id: null }] : rights.scopes;

  before(async () => {
    const db = await testDatabase();
    await resetDatabase(db.sql);
    app = await startTestApp();
    admin = await createKey(app.sql, 'adm');
    s1 = await buildSource(app.sql, 's1');
    s2 = await buildSource(app.sql, 's2');
    const clusterA: ScopeView[] = [{ source_id: s1, scope_id: 'cluster-a' }];

    const scopedSvc = async (name: string, permissions: Permission[]) => {
      const key = await createKey(app.sql, 'svc', {
        name,
        permissions,
        scopes: [{ sourceId: s1, scopeId: 'cluster-a' }],
      });
      callers.push({ name, key, rights: await meOf(key) });
    };
    await scopedSvc('svc scoped to one instance with api_keys:write', [...READS, 'api_keys:write']);
    await scopedSvc('svc scoped to one instance with users:write', [...READS, 'users:write']);

    const scopedUser = await userWith({ permissions: [...READS, 'users:write', 'api_keys:write'], scopes: clusterA });
    callers.push({
      name: 'usr token of a scoped user',
      key: scopedUser.token,
      rights: await meOf(scopedUser.token),
      userId: scopedUser.id,
    });

    const member = await userWith({ permissions: [], scopes: [] });
    const team = await ok('POST', '/api/v1/teams', { name: 'operators' });
    await ok('PUT', `/api/v1/teams/${team.id}/permissions`, {
      permissions: [...READS, 'users:write', 'api_keys:write'],
    });
    await ok('PUT', `/api/v1/teams/${team.id}/scopes`, { scopes: [{ source_id: s1, scope_id: null }] });
    await ok('PUT', `/api/v1/teams/${team.id}/members/${member.id}`, {});
    callers.push({ name: 'team member', key: member.token, rights: await meOf(member.token), userId: member.id });

    const wide = await userWith(
      { permissions: ALL_PERMISSIONS, scopes: 'all' },
      { permissions: [...READS, 'users:write', 'api_keys:write'], scopes: clusterA },
    );
    callers.push({
      name: 'narrowed token of an unrestricted user',
      key: wide.token,
      rights: await meOf(wide.token),
      userId: wide.id,
    });

    const ro = await createKey(app.sql, 'ro');
    callers.push({ name: 'ro key', key: ro, rights: await meOf(ro) });
    callers.push({ name: 'adm key', key: admin, rights: await meOf(admin) });

    const boss = await userWith({ permissions: [], scopes: [] });
    await setSuperadmin(app.sql, DEFAULT_TENANT_ID, boss.id, true);
    callers.push({ name: 'superadmin', key: boss.token, rights: await meOf(boss.token), userId: boss.id });
  });

  after(async () => {
    await app?.close();
  });

  /** Requests relative to the caller: its own rights (within), and each way past them. */
  function wantedFor(caller: Caller): { label: string; wanted: Rights }[] {
    const own = caller.rights.superadmin
      ? { permissions: ALL_PERMISSIONS, scopes: 'all' as const }
      : { permissions: caller.rights.permissions, scopes: caller.rights.scopes };
    const ownPermissions = own.permissions.length > 0 ? own.permissions : ['configuration_items:read' as Permission];
    return [
      { label: 'its own rights', wanted: { permissions: ownPermissions, scopes: own.scopes } },
      {
        label: 'a permission more (credentials:read)',
        wanted: {
          permissions: [...new Set([...ownPermissions, 'credentials:read' as Permission])],
          scopes: own.scopes,
        },
      },
      { label: 'every permission', wanted: { permissions: ALL_PERMISSIONS, scopes: own.scopes } },
      { label: 'all data', wanted: { permissions: ['configuration_items:read'], scopes: 'all' } },
      {
        label: 'a whole source',
        wanted: { permissions: ['configuration_items:read'], scopes: [{ source_id: s1, scope_id: null }] },
      },
      {
        label: 'another source',
        wanted: { permissions: ['configuration_items:read'], scopes: [{ source_id: s2, scope_id: 'x' }] },
      },
    ];
  }

  /** The matrix: for each grant route, the attempts a caller makes (setting up fresh targets with the admin key). */
  const CASES: Record<string, (caller: Caller) => Attempt[]> = {
    'POST /api/v1/api-keys': (caller) => [
      ...wantedFor(caller).map(({ label, wanted }) => ({
        label: `svc key with ${label}`,
        wanted,
        async run(c: Caller) {
          const reply = await call('POST', '/api/v1/api-keys', c.key, {
            name: 'k',
            tier: 'svc',
            permissions: wanted.permissions,
            scopes: scopesBody(wanted),
          });
          return { reply, resulting: () => meOf(reply.body.key) };
        },
      })),
      {
        label: 'unscoped ro key',
        wanted: { permissions: RO_TIER, scopes: 'all' },
        async run(c) {
          const reply = await call('POST', '/api/v1/api-keys', c.key, { name: 'k', tier: 'ro' });
          return { reply, resulting: () => meOf(reply.body.key) };
        },
      },
      {
        label: "ro key scoped to the caller's data",
        wanted: { permissions: RO_TIER, scopes: caller.rights.superadmin ? 'all' : caller.rights.scopes },
        async run(c) {
          const reply = await call('POST', '/api/v1/api-keys', c.key, {
            name: 'k',
            tier: 'ro',
            scopes: scopesBody(c.rights.superadmin ? { permissions: [], scopes: 'all' } : c.rights),
          });
          return { reply, resulting: () => meOf(reply.body.key) };
        },
      },
      {
        label: 'adm key',
        wanted: { permissions: ALL_PERMISSIONS, scopes: 'all' },
        async run(c) {
          const reply = await call('POST', '/api/v1/api-keys', c.key, { name: 'k', tier: 'adm' });
          return { reply, resulting: () => meOf(reply.body.key) };
        },
      },
    ],
    'POST /api/v1/users/{user_id}/tokens': (caller) =>
      wantedFor(caller).map(({ label, wanted }) => ({
        label: `token of a user holding ${label}`,
        wanted,
        async run(c) {
          const user = await ok('POST', '/api/v1/users', { name: `target ${++serial}` });
          await ok('PUT', `/api/v1/users/${user.id}/permissions`, { permissions: wanted.permissions });
          await ok('PUT', `/api/v1/users/${user.id}/scopes`, { scopes: scopesBody(wanted) });
          const reply = await call('POST', `/api/v1/users/${user.id}/tokens`, c.key, {
            name: 't',
            expires_at: inDays(5),
          });
          return { reply, resulting: () => meOf(reply.body.token) };
        },
      })),
    'POST /api/v1/tokens': (caller) =>
      wantedFor(caller).map(({ label, wanted }) => ({
        label: `own token narrowed to ${label}`,
        // a token holds what it names and its user has
        wanted,
        async run(c) {
          const reply = await call('POST', '/api/v1/tokens', c.key, {
            name: 'own',
            expires_at: inDays(5),
            permissions: wanted.permissions,
            scopes: scopesBody(wanted),
          });
          return { reply, resulting: () => meOf(reply.body.token) };
        },
      })),
    'PUT /api/v1/users/{user_id}/permissions': (caller) =>
      wantedFor(caller).map(({ label, wanted }) => ({
        label: `user permissions for ${label}`,
        wanted,
        async run(c) {
          const user = await ok('POST', '/api/v1/users', { name: `target ${++serial}` });
          await ok('PUT', `/api/v1/users/${user.id}/scopes`, { scopes: scopesBody(wanted) });
          const reply = await call('PUT', `/api/v1/users/${user.id}/permissions`, c.key, {
            permissions: wanted.permissions,
          });
          return { reply, resulting: () => effectiveOf(user.id) };
        },
      })),
    'PUT /api/v1/users/{user_id}/scopes': (caller) =>
      wantedFor(caller).map(({ label, wanted }) => ({
        label: `user scopes for ${label}`,
        wanted,
        async run(c) {
          const user = await ok('POST', '/api/v1/users', { name: `target ${++serial}` });
          await ok('PUT', `/api/v1/users/${user.id}/permissions`, { permissions: wanted.permissions });
          const reply = await call('PUT', `/api/v1/users/${user.id}/scopes`, c.key, { scopes: scopesBody(wanted) });
          return { reply, resulting: () => effectiveOf(user.id) };
        },
      })),
    'PUT /api/v1/users/{user_id}/superadmin': () => [
      {
        label: 'superadmin',
        wanted: { superadmin: true, permissions: ALL_PERMISSIONS, scopes: 'all' },
        async run(c) {
          const user = await ok('POST', '/api/v1/users', { name: `target ${++serial}` });
          const reply = await call('PUT', `/api/v1/users/${user.id}/superadmin`, c.key, { superadmin: true });
          return { reply, resulting: () => effectiveOf(user.id) };
        },
      },
    ],
    'POST /api/v1/users/{user_id}/reactivate': (caller) =>
      wantedFor(caller).map(({ label, wanted }) => ({
        label: `reactivating a user holding ${label}`,
        wanted,
        async run(c) {
          const user = await userWith(wanted);
          await ok('POST', `/api/v1/users/${user.id}/deactivate`, {});
          const reply = await call('POST', `/api/v1/users/${user.id}/reactivate`, c.key, {});
          return { reply, resulting: () => meOf(user.token) };
        },
      })),
    'PUT /api/v1/teams/{team_id}/members/{user_id}': (caller) =>
      wantedFor(caller).map(({ label, wanted }) => ({
        label: `membership of a team holding ${label}`,
        wanted,
        async run(c) {
          const team = await ok('POST', '/api/v1/teams', { name: `team ${++serial}` });
          await ok('PUT', `/api/v1/teams/${team.id}/permissions`, { permissions: wanted.permissions });
          await ok('PUT', `/api/v1/teams/${team.id}/scopes`, { scopes: scopesBody(wanted) });
          const user = await userWith({ permissions: [], scopes: [] });
          const reply = await call('PUT', `/api/v1/teams/${team.id}/members/${user.id}`, c.key, {});
          return { reply, resulting: () => meOf(user.token) };
        },
      })),
    'PUT /api/v1/teams/{team_id}/permissions': (caller) =>
      wantedFor(caller).map(({ label, wanted }) => ({
        label: `team permissions for ${label}`,
        wanted,
        async run(c) {
          const team = await ok('POST', '/api/v1/teams', { name: `team ${++serial}` });
          await ok('PUT', `/api/v1/teams/${team.id}/scopes`, { scopes: scopesBody(wanted) });
          const user = await userWith({ permissions: [], scopes: [] });
          await ok('PUT', `/api/v1/teams/${team.id}/members/${user.id}`, {});
          const reply = await call('PUT', `/api/v1/teams/${team.id}/permissions`, c.key, {
            permissions: wanted.permissions,
          });
          return { reply, resulting: () => meOf(user.token) };
        },
      })),
    'PUT /api/v1/teams/{team_id}/scopes': (caller) =>
      wantedFor(caller).map(({ label, wanted }) => ({
        label: `team scopes for ${label}`,
        wanted,
        async run(c) {
          const team = await ok('POST', '/api/v1/teams', { name: `team ${++serial}` });
          await ok('PUT', `/api/v1/teams/${team.id}/permissions`, { permissions: wanted.permissions });
          const user = await userWith({ permissions: [], scopes: [] });
          await ok('PUT', `/api/v1/teams/${team.id}/members/${user.id}`, {});
          const reply = await call('PUT', `/api/v1/teams/${team.id}/scopes`, c.key, { scopes: scopesBody(wanted) });
          return { reply, resulting: () => meOf(user.token) };
        },
      })),
  };

  /** What the route itself demands before any grant is looked at. */
  const ROUTE_NEEDS: Record<string, (caller: Caller) => boolean> = {
    'POST /api/v1/api-keys': (c) => holds(c, 'api_keys:write'),
    'POST /api/v1/tokens': (c) => c.userId !== undefined,
    'PUT /api/v1/users/{user_id}/superadmin': (c) => holds(c, 'users:write'),
  };
  const holds = (c: Caller, permission: Permission) =>
    c.rights.superadmin === true || c.rights.permissions.includes(permission);

  it('covers every identity route that can give rights: in the matrix, or listed with the reason it only takes them away', () => {
    const routes = apiRoutes.filter((r) => r.method !== 'GET' && IDENTITY_PATH.test(r.path)).map(routeName);
    const unlisted = routes.filter((name) => !(name in CASES) && !(name in NARROWING));
    expect(unlisted, 'routes neither in the matrix nor listed as narrowing').to.deep.equal([]);
    expect(
      Object.keys(CASES).filter((name) => !routes.includes(name)),
      'matrix entries without a route',
    ).to.deep.equal([]);
  });

  for (const route of Object.keys(CASES)) {
    it(`${route}: refuses every attempt past the caller's rights (403, audited) and keeps what it allows within them`, async function () {
      this.timeout(120_000);
      let refused = 0;
      let allowed = 0;
      for (const caller of callers) {
        const routeAllows = (ROUTE_NEEDS[route] ?? ((c: Caller) => holds(c, 'users:write')))(caller);
        for (const attempt of CASES[route]!(caller)) {
          const { reply, resulting } = await attempt.run(caller);
          const what = `${caller.name} → ${attempt.label}: ${reply.status} ${reply.text.slice(0, 300)}`;
          const within = contains(caller.rights, attempt.wanted, [s1, s2]);
          if (!routeAllows || !within) {
            expect(reply.status, what).to.equal(403);
            expect(reply.body.error.code, what).to.equal('HTTP_403');
            if (routeAllows) {
              expect(reply.body.error.details.reason, what).to.equal('exceeds_own_rights');
              const exceeding = reply.body.error.details.exceeding;
              expect(
                exceeding.permissions.length + exceeding.scopes.length + (exceeding.superadmin ? 1 : 0),
                what,
              ).to.be.greaterThan(0);
            }
            refused++;
            continue;
          }
          expect(reply.status, what).to.be.oneOf([200, 201]);
          const result = await resulting!();
          expect(
            contains(caller.rights, result, [s1, s2]),
            `${what}\nresult ${JSON.stringify(result)} exceeds ${JSON.stringify(caller.rights)}`,
          ).to.equal(true);
          allowed++;
        }
      }
      // both sides of the rule were exercised
      expect(refused).to.be.greaterThan(0);
      if (route !== 'PUT /api/v1/users/{user_id}/superadmin') expect(allowed).to.be.greaterThan(0);
      await app.context.audit.flush();
      const [denied] = await app.sql<{ n: number }[]>`
        select count(*)::int as n from audit_events where event_type = 'permission.denied' and details->>'reason' = 'exceeds_own_rights'
          and details->>'route' = ${route}`;
      if (
        callers.some((c) => (ROUTE_NEEDS[route] ?? ((x: Caller) => holds(x, 'users:write')))(c) && !c.rights.superadmin)
      ) {
        expect(denied!.n, 'ceiling refusals audited').to.be.greaterThan(0);
      }
    });
  }

  it("closes the chains found by probing: scoped key → ro key; scoped key → user → grants → token → another source's secret", async () => {
    // holds every read of the ro tier, for one instance only
    const keyWriter = {
      key: await createKey(app.sql, 'svc', {
        permissions: [...RO_TIER, 'api_keys:write'],
        scopes: [{ sourceId: s1, scopeId: 'cluster-a' }],
      }),
    };
    const ro = await call('POST', '/api/v1/api-keys', keyWriter.key, { name: 'x', tier: 'ro' });
    expect(ro.status).to.equal(403);
    expect(ro.body.error.details.exceeding.scopes).to.deep.equal([{ source_id: null, scope_id: null }]);
    const everything = await call('POST', '/api/v1/api-keys', keyWriter.key, {
      name: 'x',
      tier: 'svc',
      scopes: [{ source_id: null, scope_id: null }],
    });
    expect(everything.status).to.equal(403);
    const scopedRo = await call('POST', '/api/v1/api-keys', keyWriter.key, {
      name: 'x',
      tier: 'ro',
      scopes: [{ source_id: s1, scope_id: 'cluster-a' }],
    });
    expect(scopedRo.status, scopedRo.text).to.equal(201);
    expect(scopedRo.body.scopes).to.deep.equal([{ source_id: s1, scope_id: 'cluster-a' }]);
    expect(
      (await app.get('/api/v1/sources', scopedRo.body.key)).body.items.map((s: { id: string | number }) =>
        String(s.id),
      ),
    ).to.deep.equal([s1]);

    const userWriter = callers.find((c) => c.name.includes('users:write'))!;
    const user = await call('POST', '/api/v1/users', userWriter.key, { name: 'accomplice' });
    expect(user.status).to.equal(201);
    expect(
      (await call('PUT', `/api/v1/users/${user.body.id}/permissions`, userWriter.key, { permissions: ALL_PERMISSIONS }))
        .status,
    ).to.equal(403);
    expect(
      (
        await call('PUT', `/api/v1/users/${user.body.id}/scopes`, userWriter.key, {
          scopes: [{ source_id: null, scope_id: null }],
        })
      ).status,
    ).to.equal(403);
    expect(
      (
        await call('PUT', `/api/v1/users/${user.body.id}/permissions`, userWriter.key, {
          permissions: ['credentials:read'],
        })
      ).status,
    ).to.equal(403);
    const token = await call('POST', `/api/v1/users/${user.body.id}/tokens`, userWriter.key, {
      name: 't',
      expires_at: inDays(1),
    });
    expect(token.status).to.equal(201);
    expect((await app.get(`/api/v1/sources/${s2}/credentials/reveal`, token.body.token)).status).to.equal(403);
    const detail = await app.get(`/api/v1/users/${user.body.id}`, admin);
    expect(detail.body.effective).to.deep.equal({ permissions: [], scopes: [] });
  });

  it('refuses a membership that combines a team permission with a wider scope the user holds from elsewhere', async () => {
    const member = callers.find((c) => c.name === 'team member')!;
    const target = await userWith({ permissions: [], scopes: 'all' });
    const team = await ok('POST', '/api/v1/teams', { name: 'readers' });
    await ok('PUT', `/api/v1/teams/${team.id}/permissions`, { permissions: ['configuration_items:read'] });
    const added = await call('PUT', `/api/v1/teams/${team.id}/members/${target.id}`, member.key, {});
    expect(added.status, added.text).to.equal(403);
    expect(added.body.error.details.subject).to.match(/^user /);
    expect((await meOf(target.token)).permissions).to.deep.equal([]);

    // and a team grant that would do the same through an existing member
    const other = await ok('POST', '/api/v1/teams', { name: 'readers 2' });
    await ok('PUT', `/api/v1/teams/${other.id}/members/${target.id}`, {});
    expect(
      (
        await call('PUT', `/api/v1/teams/${other.id}/permissions`, member.key, {
          permissions: ['configuration_items:read'],
        })
      ).status,
    ).to.equal(403);
    expect((await meOf(target.token)).permissions).to.deep.equal([]);
  });

  it('lets a caller narrow a user it covers, but not one holding more than it; a narrowed token mints only within its own narrowing', async () => {
    const member = callers.find((c) => c.name === 'team member')!;
    const covered = await userWith({
      permissions: [...READS, 'users:write'],
      scopes: [{ source_id: s1, scope_id: 'cluster-a' }],
    });
    expect(
      (
        await call('PUT', `/api/v1/users/${covered.id}/permissions`, member.key, {
          permissions: ['configuration_items:read'],
        })
      ).status,
    ).to.equal(200);
    expect((await effectiveOf(covered.id)).permissions).to.deep.equal(['configuration_items:read']);
    const wide = await userWith({ permissions: ALL_PERMISSIONS, scopes: 'all' });
    const refused = await call('PUT', `/api/v1/users/${wide.id}/permissions`, member.key, {
      permissions: ['configuration_items:read'],
    });
    expect(refused.status, refused.text).to.equal(403);
    expect(refused.body.error.details).to.deep.include({
      reason: 'exceeds_own_rights',
      subject: `user user ${serial} (${wide.id})`,
    });
    expect((await effectiveOf(wide.id)).permissions).to.deep.equal(ALL_PERMISSIONS);
    const narrowed = callers.find((c) => c.name === 'narrowed token of an unrestricted user')!;
    const unnarrowed = await call('POST', '/api/v1/tokens', narrowed.key, { name: 'wider', expires_at: inDays(1) });
    expect(unnarrowed.status).to.equal(403);
    expect(unnarrowed.body.error.details.exceeding.scopes).to.deep.equal([{ source_id: null, scope_id: null }]);
  });

  it('acts on a user only for callers holding all it holds: tokens minted, listed and revoked, deactivation, memberships', async () => {
    // a key scoped to one instance with users:write, and a user who holds every source
    const scoped = {
      key: await createKey(app.sql, 'svc', {
        permissions: [...READS, 'users:read', 'users:write'],
        scopes: [{ sourceId: s1, scopeId: 'cluster-a' }],
      }),
    };
    const wide = await userWith({ permissions: [...READS, 'users:read'], scopes: 'all' });
    await ok('POST', '/api/v1/saved-views', { name: 'private', view: 'inventory', query: 'q=secret' }, wide.token);
    const tokensOf = async (userId: string) =>
      (
        await app.sql<
          { n: number }[]
        >`select count(*)::int as n from api_keys where user_id = ${userId} and revoked_at is null`
      )[0]!.n;
    const live = await tokensOf(wide.id);

    // narrowed to what the key holds, the token would still act as the wider user
    const minted = await call('POST', `/api/v1/users/${wide.id}/tokens`, scoped.key, {
      name: 'borrowed',
      expires_at: inDays(1),
      permissions: ['configuration_items:read'],
      scopes: [{ source_id: s1, scope_id: 'cluster-a' }],
    });
    expect(minted.status, minted.text).to.equal(403);
    expect(minted.body.error.details.reason).to.equal('exceeds_own_rights');
    expect(minted.body.error.details.exceeding.scopes).to.deep.equal([{ source_id: null, scope_id: null }]);
    expect(await tokensOf(wide.id), 'no token minted').to.equal(live);

    expect((await call('GET', `/api/v1/users/${wide.id}/tokens`, scoped.key)).status).to.equal(403);
    const [token] = await app.sql<
      { id: string }[]
    >`select id from api_keys where user_id = ${wide.id} and revoked_at is null`;
    expect((await call('DELETE', `/api/v1/users/${wide.id}/tokens/${token!.id}`, scoped.key)).status).to.equal(403);
    expect(await tokensOf(wide.id), 'no token revoked').to.equal(live);

    expect((await call('POST', `/api/v1/users/${wide.id}/deactivate`, scoped.key, {})).status).to.equal(403);
    expect(
      (await app.sql`select 1 from users where id = ${wide.id} and deactivated_at is null`).length,
      'still active',
    ).to.equal(1);
    expect((await call('PUT', `/api/v1/users/${wide.id}/scopes`, scoped.key, { scopes: [] })).status).to.equal(403);
    expect((await effectiveOf(wide.id)).scopes).to.equal('all');

    const team = await ok('POST', '/api/v1/teams', { name: `wide members ${++serial}` });
    await ok('PUT', `/api/v1/teams/${team.id}/permissions`, { permissions: ['configuration_items:read'] });
    await ok('PUT', `/api/v1/teams/${team.id}/members/${wide.id}`, {});
    expect((await call('DELETE', `/api/v1/teams/${team.id}/members/${wide.id}`, scoped.key)).status).to.equal(403);
    expect((await call('DELETE', `/api/v1/teams/${team.id}`, scoped.key)).status).to.equal(403);
    expect(
      (await app.sql`select 1 from team_members where team_id = ${team.id} and user_id = ${wide.id}`).length,
      'still a member',
    ).to.equal(1);
    expect(
      (await call('PUT', `/api/v1/teams/${team.id}/permissions`, scoped.key, { permissions: [] })).status,
    ).to.equal(403);
    expect((await app.sql`select 1 from grants where team_id = ${team.id}`).length, 'team grant kept').to.equal(1);

    // a user within the key's rights is acted on as before
    const small = await userWith({
      permissions: ['configuration_items:read'],
      scopes: [{ source_id: s1, scope_id: 'cluster-a' }],
    });
    const mintedSmall = await call('POST', `/api/v1/users/${small.id}/tokens`, scoped.key, {
      name: 'ok',
      expires_at: inDays(1),
    });
    expect(mintedSmall.status, mintedSmall.text).to.equal(201);
    expect((await call('GET', `/api/v1/users/${small.id}/tokens`, scoped.key)).body).to.have.length(2);
    expect(
      (await call('DELETE', `/api/v1/users/${small.id}/tokens/${mintedSmall.body.id}`, scoped.key)).status,
    ).to.equal(200);
    expect((await call('POST', `/api/v1/users/${small.id}/deactivate`, scoped.key, {})).status).to.equal(200);
    expect((await app.sql`select 1 from users where id = ${small.id} and deactivated_at is not null`).length).to.equal(
      1,
    );
  });

  it('covers a superadmin user only by a superadmin: an adm key neither mints its tokens nor deactivates it', async () => {
    const boss = callers.find((c) => c.name === 'superadmin')!;
    const minted = await call('POST', `/api/v1/users/${boss.userId}/tokens`, admin, {
      name: 'x',
      expires_at: inDays(1),
      permissions: ['configuration_items:read'],
    });
    expect(minted.status, minted.text).to.equal(403);
    expect(minted.body.error.details.exceeding.superadmin).to.equal(true);
    expect((await call('POST', `/api/v1/users/${boss.userId}/deactivate`, admin, {})).status).to.equal(403);
    expect((await app.sql`select 1 from users where id = ${boss.userId!} and deactivated_at is null`).length).to.equal(
      1,
    );
    const other = await userWith({ permissions: [], scopes: [] });
    await setSuperadmin(app.sql, DEFAULT_TENANT_ID, other.id, true);
    const bySuperadmin = await call('POST', `/api/v1/users/${other.id}/tokens`, boss.key, {
      name: 'x',
      expires_at: inDays(1),
    });
    expect(bySuperadmin.status, bySuperadmin.text).to.equal(201);
  });

  it('writes each change of rights with its audit event, and none for a refused one', async () => {
    const before = await app.sql<
      { n: number }[]
    >`select count(*)::int as n from audit_events where event_type = 'grant.changed'`;
    const user = await ok('POST', '/api/v1/users', { name: `audited ${++serial}` });
    // no flush: the event is in the table as soon as the change answers
    await ok('PUT', `/api/v1/users/${user.id}/permissions`, { permissions: ['changes:read'] });
    const after = await app.sql<
      { n: number }[]
    >`select count(*)::int as n from audit_events where event_type = 'grant.changed'`;
    expect(after[0]!.n).to.equal(before[0]!.n + 1);
    const [created] =
      await app.sql`select 1 from audit_events where event_type = 'user.created' and target_id = ${user.id}`;
    expect(created).to.not.equal(undefined);
    const scoped = callers.find((c) => c.name.includes('users:write'))!;
    expect(
      (await call('PUT', `/api/v1/users/${user.id}/permissions`, scoped.key, { permissions: ['credentials:read'] }))
        .status,
    ).to.equal(403);
    const unchanged = await app.sql<
      { n: number }[]
    >`select count(*)::int as n from audit_events where event_type = 'grant.changed'`;
    expect(unchanged[0]!.n).to.equal(after[0]!.n);
    expect((await effectiveOf(user.id)).permissions).to.deep.equal(['changes:read']);
  });
});
