import { expect } from 'chai';
import { createKey, useTestApp, type TestApp } from '../../support/app.js';
import { buildPod, ingest } from '../../support/factories.js';

const LIST = '/api/v1/configuration-items';
const inDays = (app: TestApp, days: number) => new Date(app.clock.now.getTime() + days * 86_400_000).toISOString();

describe('users, teams and user tokens', () => {
  const app = useTestApp();
  let admin: string;

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
  });

  const post = (path: string, body: unknown, key = admin) => app.current.request('POST', path, { key, body });
  const put = (path: string, body: unknown, key = admin) => app.current.request('PUT', path, { key, body });
  const del = (path: string, key = admin) => app.current.request('DELETE', path, { key });

  async function tokenUser(name = 'deploy bot', email: string | null = 'bot@example.com') {
    const created = await post('/api/v1/users', { name, email });
    expect(created.status).to.equal(201);
    const minted = await post(`/api/v1/users/${created.body.id}/tokens`, {
      name: 'ci',
      expires_at: inDays(app.current, 30),
    });
    expect(minted.status, JSON.stringify(minted.body)).to.equal(201);
    return { userId: created.body.id as string, token: minted.body.token as string, tokenId: minted.body.id as string };
  }

  it('a new user holds nothing until a team gives it rights, and loses them with the membership on the next request', async () => {
    const { sourceId } = await ingest(app.current.sql, [buildPod({ name: 'a', namespace: 'team-a' })], {
      scopeId: 'cluster-1',
    });
    await ingest(app.current.sql, [buildPod({ name: 'b', namespace: 'team-b' })], { scopeId: 'cluster-2' });
    const { userId, token } = await tokenUser();
    expect(token).to.match(/^cinv_usr_/);

    expect((await app.current.get(LIST, token)).status).to.equal(403);
    const me = await app.current.get('/api/v1/me', token);
    expect(me.body).to.deep.include({ kind: 'user', tier: 'usr', superadmin: false, permissions: [], scopes: [] });
    expect(me.body.user).to.deep.include({ id: userId, email: 'bot@example.com' });

    const team = await post('/api/v1/teams', { name: 'platform' });
    expect(team.status).to.equal(201);
    expect(
      (await put(`/api/v1/teams/${team.body.id}/permissions`, { permissions: ['configuration_items:read'] })).status,
    ).to.equal(200);
    expect(
      (await put(`/api/v1/teams/${team.body.id}/scopes`, { scopes: [{ source_id: sourceId, scope_id: 'cluster-1' }] }))
        .status,
    ).to.equal(200);
    expect((await put(`/api/v1/teams/${team.body.id}/members/${userId}`, {})).status).to.equal(200);

    const seen = await app.current.get(LIST, token);
    expect(seen.status).to.equal(200);
    expect(seen.body.items.map((ci: { namespace: string }) => ci.namespace)).to.deep.equal(['team-a']);

    const detail = await app.current.get(`/api/v1/users/${userId}`, admin);
    expect(detail.body.effective).to.deep.equal({
      permissions: ['configuration_items:read'],
      scopes: [{ source_id: sourceId, scope_id: 'cluster-1' }],
    });
    expect(detail.body.teams).to.deep.equal([{ id: team.body.id, name: 'platform' }]);

    expect((await del(`/api/v1/teams/${team.body.id}/members/${userId}`)).status).to.equal(200);
    expect((await app.current.get(LIST, token)).status).to.equal(403);
  });

  it('a narrowed token holds what it names and its user still has', async () => {
    const { sourceId } = await ingest(app.current.sql, [buildPod({ name: 'a', namespace: 'team-a' })], {
      scopeId: 'cluster-1',
    });
    await ingest(app.current.sql, [buildPod({ name: 'b', namespace: 'team-b' })], { scopeId: 'cluster-2' });
    const { userId } = await tokenUser();
    await put(`/api/v1/users/${userId}/permissions`, { permissions: ['configuration_items:read', 'changes:read'] });
    await put(`/api/v1/users/${userId}/scopes`, { scopes: [{ source_id: sourceId, scope_id: null }] });

    const refused = await post(`/api/v1/users/${userId}/tokens`, {
      name: 'x',
      expires_at: inDays(app.current, 1),
      permissions: ['users:read'],
    });
    expect(refused.status).to.equal(422);
    expect(JSON.stringify(refused.body.error.details)).to.include('users:read');

    const narrowed = await post(`/api/v1/users/${userId}/tokens`, {
      name: 'one cluster, changes only',
      expires_at: inDays(app.current, 1),
      permissions: ['changes:read'],
      scopes: [{ source_id: sourceId, scope_id: 'cluster-2' }],
    });
    expect(narrowed.status).to.equal(201);
    const me = await app.current.get('/api/v1/me', narrowed.body.token);
    expect(me.body.permissions).to.deep.equal(['changes:read']);
    expect(me.body.scopes).to.deep.equal([{ source_id: sourceId, scope_id: 'cluster-2' }]);
    expect((await app.current.get(LIST, narrowed.body.token)).status).to.equal(403);
    const changes = await app.current.get('/api/v1/changes', narrowed.body.token);
    expect(changes.status).to.equal(200);
    expect(changes.body.items.map((c: { ci_namespace: string }) => c.ci_namespace)).to.deep.equal(['team-b']);

    // the user loses changes:read: the token, which names it, loses it too
    await put(`/api/v1/users/${userId}/permissions`, { permissions: ['configuration_items:read'] });
    expect((await app.current.get('/api/v1/changes', narrowed.body.token)).status).to.equal(403);
  });

  it('refuses the tokens of a deactivated user on the next request and accepts them again after reactivation', async () => {
    const { userId, token } = await tokenUser();
    expect((await app.current.get('/api/v1/me', token)).status).to.equal(200);
    expect((await post(`/api/v1/users/${userId}/deactivate`, {})).body.active).to.equal(false);
    expect((await app.current.get('/api/v1/me', token)).status).to.equal(401);
    expect((await post(`/api/v1/users/${userId}/reactivate`, {})).body.active).to.equal(true);
    expect((await app.current.get('/api/v1/me', token)).status).to.equal(200);
  });

  it('enforces the token rules: expiry required and within a year, ten live at most, secret shown once, revocation at once', async () => {
    const { userId, token, tokenId } = await tokenUser();
    const missing = await post(`/api/v1/users/${userId}/tokens`, { name: 'no expiry' });
    expect(missing.status).to.equal(422);
    const tooLong = await post('/api/v1/tokens', { name: 'forever', expires_at: inDays(app.current, 400) }, token);
    expect(tooLong.status).to.equal(422);
    expect(tooLong.body.error.details.errors[0].field).to.equal('expires_at');
    const past = await post('/api/v1/tokens', { name: 'past', expires_at: inDays(app.current, -1) }, token);
    expect(past.status).to.equal(422);

    // a user token manages its own user's tokens
    for (let i = 2; i <= 10; i++) {
      const own = await post('/api/v1/tokens', { name: `t${i}`, expires_at: inDays(app.current, 10) }, token);
      expect(own.status, `token ${i}`).to.equal(201);
    }
    const eleventh = await post('/api/v1/tokens', { name: 't11', expires_at: inDays(app.current, 10) }, token);
    expect(eleventh.status).to.equal(409);
    expect(eleventh.body.error.message).to.match(/at most 10/);

    const listed = await app.current.get('/api/v1/tokens', token);
    expect(listed.body).to.have.length(10);
    const text = JSON.stringify(listed.body);
    expect(text).to.not.include(token);
    expect(text).to.not.include('key_hash');
    expect(listed.body.find((t: { id: string }) => t.id === tokenId)).to.include({
      name: 'ci',
      hint: token.slice(-4),
      expired: false,
    });

    // an API key has no tokens of its own
    expect((await app.current.get('/api/v1/tokens', admin)).status).to.equal(403);

    const other = listed.body.find((t: { id: string }) => t.id !== tokenId);
    expect((await del(`/api/v1/tokens/${other.id}`, token)).status).to.equal(200);
    expect(
      (await post('/api/v1/tokens', { name: 'room again', expires_at: inDays(app.current, 10) }, token)).status,
    ).to.equal(201);
    expect((await del(`/api/v1/users/${userId}/tokens/${tokenId}`)).status).to.equal(200);
    expect((await app.current.get('/api/v1/me', token)).status).to.equal(401);
  });

  it('stops a token when it expires', async () => {
    const { token } = await tokenUser();
    app.current.clock.now = new Date(app.current.clock.now.getTime() + 31 * 86_400_000);
    expect((await app.current.get('/api/v1/me', token)).status).to.equal(401);
  });

  it('lets only a superadmin grant superadmin, which then bypasses permission and scope checks', async () => {
    await ingest(app.current.sql, [buildPod({ name: 'a' })], { scopeId: 'cluster-1' });
    const { userId, token } = await tokenUser('root', 'root@example.com');
    const byAdminKey = await put(`/api/v1/users/${userId}/superadmin`, { superadmin: true });
    expect(byAdminKey.status).to.equal(403);
    await app.current.sql`update users set superadmin = true where id = ${userId}`;
    const other = await tokenUser('second', 'second@example.com');
    expect((await put(`/api/v1/users/${other.userId}/superadmin`, { superadmin: true }, token)).status).to.equal(200);
    const me = await app.current.get('/api/v1/me', other.token);
    expect(me.body).to.include({ superadmin: true, scopes: 'all' });
    expect((await app.current.get(LIST, other.token)).body.items).to.have.length(1);
  });

  it('keeps user emails and team names unique with a 409, and validates grants and scopes with 422s', async () => {
    await tokenUser('a', 'same@example.com');
    expect((await post('/api/v1/users', { name: 'b', email: 'SAME@example.com' })).status).to.equal(409);
    expect((await post('/api/v1/teams', { name: 'ops' })).status).to.equal(201);
    expect((await post('/api/v1/teams', { name: 'ops' })).status).to.equal(409);
    const team = (await app.current.get('/api/v1/teams', admin)).body.items[0];
    expect((await put(`/api/v1/teams/${team.id}/permissions`, { permissions: ['things:read'] })).status).to.equal(422);
    expect(
      (await put(`/api/v1/teams/${team.id}/scopes`, { scopes: [{ source_id: '999', scope_id: null }] })).status,
    ).to.equal(422);
    expect(
      (await put(`/api/v1/teams/${team.id}/scopes`, { scopes: [{ source_id: null, scope_id: 'x' }] })).status,
    ).to.equal(422);
    expect((await del(`/api/v1/teams/${team.id}`)).status).to.equal(200);
    expect((await app.current.get(`/api/v1/teams/${team.id}`, admin)).status).to.equal(404);
  });

  it('answers user and team management without users permissions with 403', async () => {
    const ro = await createKey(app.current.sql, 'ro');
    expect((await app.current.get('/api/v1/users', ro)).status).to.equal(403);
    expect((await post('/api/v1/teams', { name: 'x' }, ro)).status).to.equal(403);
    expect((await app.current.get('/api/v1/api-keys', ro)).status).to.equal(403);
  });
});

describe('API key management', () => {
  const app = useTestApp();

  it('creates svc keys with permissions and scopes, lists them without secrets and revokes them at once', async () => {
    const admin = await createKey(app.current.sql, 'adm');
    const { sourceId } = await ingest(app.current.sql, [buildPod({ name: 'a' })], { scopeId: 'cluster-1' });
    const created = await app.current.request('POST', '/api/v1/api-keys', {
      key: admin,
      body: {
        name: 'collector',
        tier: 'svc',
        permissions: ['configuration_items:read'],
        scopes: [{ source_id: sourceId, scope_id: 'cluster-1' }],
      },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    expect(created.body.key).to.match(/^cinv_svc_/);
    expect(created.body.scopes).to.deep.equal([{ source_id: sourceId, scope_id: 'cluster-1' }]);
    expect((await app.current.get(LIST, created.body.key)).body.items).to.have.length(1);

    const listed = await app.current.get('/api/v1/api-keys', admin);
    expect(listed.body.map((k: { name: string }) => k.name).sort()).to.deep.equal(['adm key', 'collector']);
    expect(JSON.stringify(listed.body)).to.not.include(created.body.key);

    const svc = await createKey(app.current.sql, 'svc', { permissions: ['api_keys:write', 'api_keys:read'] });
    const escalate = await app.current.request('POST', '/api/v1/api-keys', {
      key: svc,
      body: { name: 'root', tier: 'adm' },
    });
    expect(escalate.status).to.equal(403);
    const wider = await app.current.request('POST', '/api/v1/api-keys', {
      key: svc,
      body: { name: 'w', tier: 'svc', permissions: ['users:write'] },
    });
    expect(wider.status).to.equal(403);

    expect(
      (await app.current.request('DELETE', `/api/v1/api-keys/${created.body.id}`, { key: admin })).status,
    ).to.equal(200);
    expect((await app.current.get(LIST, created.body.key)).status).to.equal(401);
    expect((await app.current.get(`/api/v1/api-keys/${created.body.id}`, admin)).body.revoked_at).to.be.a('string');
  });

  it('takes a scope given twice once, for keys and user tokens alike', async () => {
    const admin = await createKey(app.current.sql, 'adm');
    const { sourceId } = await ingest(app.current.sql, [buildPod({ name: 'a' })], { scopeId: 'cluster-1' });
    const one = { source_id: sourceId, scope_id: 'cluster-1' };
    const repeated = [
      one,
      { ...one },
      { source_id: `0${sourceId}`, scope_id: 'cluster-1' },
      { source_id: sourceId, scope_id: null },
      { source_id: sourceId, scope_id: null },
    ];
    const key = await app.current.request('POST', '/api/v1/api-keys', {
      key: admin,
      body: { name: 'twice', tier: 'svc', permissions: ['configuration_items:read'], scopes: repeated },
    });
    expect(key.status, key.text).to.equal(201);
    expect(key.body.scopes).to.have.deep.members([one, { source_id: sourceId, scope_id: null }]);
    expect(key.body.scopes).to.have.length(2);
    const ro = await app.current.request('POST', '/api/v1/api-keys', {
      key: admin,
      body: { name: 'ro twice', tier: 'ro', scopes: [one, one] },
    });
    expect(ro.status, ro.text).to.equal(201);
    expect(ro.body.scopes).to.deep.equal([one]);

    const user = await app.current.request('POST', '/api/v1/users', {
      key: admin,
      body: { name: 'twice', email: null },
    });
    const token = await app.current.request('POST', `/api/v1/users/${user.body.id}/tokens`, {
      key: admin,
      body: { name: 'twice', expires_at: inDays(app.current, 30), scopes: [one, one] },
    });
    expect(token.status, token.text).to.equal(201);
    expect(token.body.scopes).to.deep.equal([one]);
  });
});
