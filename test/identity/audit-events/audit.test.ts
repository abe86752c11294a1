import { expect } from 'chai';
import { runSweep } from '../../../src/inventory/lifecycle/scheduler.js';
import { createKey, useTestApp } from '../../support/app.js';
import { runCli, startServer, stopServer, useCliEnvironment } from '../../support/cli.js';
import { onRealPostgres } from '../../support/db.js';

const AUDIT = '/api/v1/audit-events';

describe('security audit log', () => {
  const app = useTestApp();
  let admin: string;

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm', { name: 'ops admin' });
  });

  const flush = () => app.current.context.audit.flush();
  const events = async (query = '') => {
    await flush();
    const reply = await app.current.get(`${AUDIT}${query}`, admin);
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    return reply.body.items as any[];
  };

  it('records a denied permission with the error id the client was given, and who was refused', async () => {
    const readOnly = await createKey(app.current.sql, 'ro', { name: 'dashboards' });
    const refused = await app.current.request('POST', '/api/v1/api-keys', {
      key: readOnly,
      body: { name: 'x', tier: 'adm' },
    });
    expect(refused.status).to.equal(403);
    const [denied, ...rest] = await events('?event_type=permission.denied');
    expect(rest).to.deep.equal([]);
    expect(denied).to.deep.include({
      event_type: 'permission.denied',
      outcome: 'failure',
      request_id: refused.body.error.id,
    });
    expect(denied.actor).to.deep.include({ kind: 'api_key', name: 'dashboards' });
    expect(denied.details).to.deep.include({ route: 'POST /api/v1/api-keys', resource: 'api_keys', action: 'write' });
    expect(denied.client_address).to.be.a('string').and.not.equal('');
  });

  it('records failed authentications with a reason and a hint, never the presented secret', async () => {
    const revoked = await createKey(app.current.sql, 'ro', { name: 'old' });
    await app.current.sql`update api_keys set revoked_at = now() where name = 'old'`;
    expect((await app.current.get('/api/v1/configuration-items', revoked)).status).to.equal(401);
    expect((await app.current.get('/api/v1/configuration-items', 'not-a-key-at-all-secret-ish')).status).to.equal(401);
    expect((await app.current.get('/api/v1/configuration-items')).status).to.equal(401);
    const failures = await events('?event_type=auth.failed');
    expect(failures.map((e) => e.details.reason).sort()).to.deep.equal([
      'malformed_key',
      'missing_credentials',
      'unknown_revoked_or_expired',
    ]);
    const hinted = failures.find((e) => e.details.reason === 'unknown_revoked_or_expired');
    expect(hinted.details.key_hint).to.equal(`cinv_ro_…${revoked.slice(-4)}`);
    const [stored] = await app.current.sql<
      { dump: string }[]
    >`select coalesce(string_agg(audit_events::text, ' '), '') as dump from audit_events`;
    expect(stored!.dump).to.not.include(revoked);
    expect(stored!.dump).to.not.include(revoked.slice(9, -4));
    expect(stored!.dump).to.not.include('not-a-key-at-all-secret-ish');
  });

  it("takes a browser's session check without any credential as an answer, not a failed authentication", async () => {
    for (let i = 0; i < 3; i++) expect((await app.current.get('/auth/me')).status).to.equal(401);
    expect(await events('?event_type=auth.failed')).to.deep.equal([]);
    // a check that presents something refused is audited as anywhere else
    expect((await app.current.get('/auth/me', 'not-a-key-at-all')).status).to.equal(401);
    const failures = await events('?event_type=auth.failed');
    expect(failures.map((e) => e.details.reason)).to.deep.equal(['malformed_key']);
    // the same request elsewhere is a failed authentication
    expect((await app.current.get('/api/v1/me')).status).to.equal(401);
    expect((await events('?event_type=auth.failed')).map((e) => e.details.reason)).to.include('missing_credentials');
  });

  it('records a sign-in through the web page, refused or not, with the client address and agent it came from', async () => {
    const key = await createKey(app.current.sql, 'ro', { name: 'web reader' });
    const headers = { origin: app.current.baseUrl, 'user-agent': 'Mozilla/5.0 (cinv test)' };
    expect(
      (await app.current.request('POST', '/auth/session', { body: { api_key: 'cinv_ro_wrong' }, headers })).status,
    ).to.equal(401);
    expect((await app.current.request('POST', '/auth/session', { body: { api_key: key }, headers })).status).to.equal(
      200,
    );
    const signIns = (await events()).filter(
      (e) => e.details.method === 'session' || e.details.route === 'POST /auth/session',
    );
    expect(signIns.map((e) => [e.event_type, e.client_address, e.user_agent]).sort()).to.deep.equal([
      ['auth.failed', '127.0.0.1', 'Mozilla/5.0 (cinv test)'],
      ['auth.succeeded', '127.0.0.1', 'Mozilla/5.0 (cinv test)'],
    ]);
  });

  it('writes one auth.succeeded per credential and client address in five minutes, not one per request', async () => {
    const key = await createKey(app.current.sql, 'ro', { name: 'busy' });
    for (let i = 0; i < 4; i++)
      expect((await app.current.get('/api/v1/configuration-items', key)).status).to.equal(200);
    const busy = (await events('?event_type=auth.succeeded')).filter((e) => e.actor.name === 'busy');
    expect(busy).to.have.length(1);
    expect(busy[0].details).to.deep.include({ method: 'api_key' });
    app.current.clock.now = new Date(app.current.clock.now.getTime() + 5 * 60_000 + 1000);
    expect((await app.current.get('/api/v1/configuration-items', key)).status).to.equal(200);
    expect((await events('?event_type=auth.succeeded')).filter((e) => e.actor.name === 'busy')).to.have.length(2);
  });

  it('records key, user, token, grant and membership changes with actor and target', async () => {
    const post = (p: string, body: unknown) => app.current.request('POST', p, { key: admin, body });
    const put = (p: string, body: unknown) => app.current.request('PUT', p, { key: admin, body });
    const key = await post('/api/v1/api-keys', { name: 'ci pipeline', tier: 'ro' });
    expect(key.status).to.equal(201);
    expect((await app.current.request('DELETE', `/api/v1/api-keys/${key.body.id}`, { key: admin })).status).to.equal(
      200,
    );
    const user = await post('/api/v1/users', { name: 'Deploy Bot', email: 'bot@example.com' });
    const expires = new Date(app.current.clock.now.getTime() + 86_400_000).toISOString();
    const token = await post(`/api/v1/users/${user.body.id}/tokens`, { name: 'deploys', expires_at: expires });
    expect(token.status).to.equal(201);
    const team = await post('/api/v1/teams', { name: 'platform' });
    expect((await put(`/api/v1/teams/${team.body.id}/members/${user.body.id}`, {})).status).to.equal(200);
    expect((await put(`/api/v1/users/${user.body.id}/permissions`, { permissions: ['changes:read'] })).status).to.equal(
      200,
    );
    expect((await post(`/api/v1/users/${user.body.id}/deactivate`, {})).status).to.equal(200);

    const all = await events('?limit=1000');
    const byType = (type: string) => all.filter((e) => e.event_type === type);
    expect(byType('api_key.created')[0]).to.deep.include({
      target: { type: 'api_key', id: key.body.id, name: 'ci pipeline' },
    });
    expect(byType('api_key.created')[0].actor).to.deep.include({ kind: 'api_key', name: 'ops admin' });
    expect(byType('api_key.revoked')[0].target.id).to.equal(key.body.id);
    expect(byType('user.created')[0].target).to.deep.include({ type: 'user', id: user.body.id });
    expect(byType('token.created')[0].details).to.deep.include({ user_id: user.body.id });
    expect(byType('membership.changed')[0].details).to.deep.equal({ added: user.body.id });
    expect(byType('grant.changed')[0].details).to.deep.equal({ permissions: ['changes:read'] });
    expect(byType('user.deactivated')[0].target.id).to.equal(user.body.id);
    expect(JSON.stringify(all)).to.not.include(token.body.token);
    expect(JSON.stringify(all)).to.not.include(key.body.key);
  });

  it('pages newest first with a cursor bound to its filters, filters by actor and outcome, and exports CSV', async () => {
    const readOnly = await createKey(app.current.sql, 'ro', { name: 'dashboards' });
    for (let i = 0; i < 5; i++) {
      app.current.clock.now = new Date(app.current.clock.now.getTime() + 1000);
      await app.current.request('POST', '/api/v1/teams', { key: readOnly, body: { name: `t${i}` } });
    }
    await flush();
    const first = await app.current.get(`${AUDIT}?event_type=permission.denied&limit=2`, admin);
    expect(first.body.items).to.have.length(2);
    expect(first.body.has_more).to.equal(true);
    const times: string[] = first.body.items.map((e: any) => e.occurred_at);
    let cursor = first.body.next_cursor;
    while (cursor) {
      const next = await app.current.get(
        `${AUDIT}?event_type=permission.denied&limit=2&cursor=${encodeURIComponent(cursor)}`,
        admin,
      );
      expect(next.status).to.equal(200);
      times.push(...next.body.items.map((e: any) => e.occurred_at));
      cursor = next.body.next_cursor;
    }
    expect(times).to.have.length(5);
    expect([...times].sort().reverse()).to.deep.equal(times);
    const foreign = await app.current.get(
      `${AUDIT}?event_type=auth.failed&limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`,
      admin,
    );
    expect(foreign.status).to.equal(422);

    const actorId = (await events('?event_type=permission.denied&limit=1'))[0].actor.id;
    expect(await events(`?actor_id=${actorId}&outcome=failure`)).to.have.length(5);
    expect((await events(`?actor_id=${actorId}&outcome=success`)).map((e) => e.event_type)).to.deep.equal([
      'auth.succeeded',
    ]);
    expect(await events(`?start_date=2000-01-01&end_date=2000-01-02`)).to.have.length(0);

    // a refused window is an answer, not a download cut short
    const reversed = await app.current.request<any>('GET', `${AUDIT}?start_date=2002-12-27&end_date=2000-01-01`, {
      key: admin,
      headers: { accept: 'text/csv' },
    });
    expect(reversed.status).to.equal(422);
    expect(reversed.body.error.details.errors[0].field).to.equal('end_date');

    const csv = await app.current.request('GET', `${AUDIT}?event_type=permission.denied`, {
      key: admin,
      headers: { accept: 'text/csv' },
    });
    expect(csv.status).to.equal(200);
    expect(csv.headers.get('content-disposition')).to.match(/^attachment; filename="audit-\d{8}T\d{6}Z\.csv"$/);
    const lines = csv.text.trim().split('\n');
    expect(lines[0]).to.equal(
      'id,occurred_at,event_type,outcome,actor_kind,actor_id,actor_name,target_type,target_id,target_name,client_address,user_agent,request_id,details',
    );
    expect(lines).to.have.length(6);
    expect(lines[1]).to.include(',permission.denied,failure,api_key,');
  });

  it('needs audit:read: a read-only key may read it, a service key without the grant may not', async () => {
    const readOnly = await createKey(app.current.sql, 'ro');
    expect((await app.current.get(AUDIT, readOnly)).status).to.equal(200);
    const service = await createKey(app.current.sql, 'svc', { permissions: ['configuration_items:read'] });
    expect((await app.current.get(AUDIT, service)).status).to.equal(403);
  });

  it('keeps events for CINV_AUDIT_RETENTION: the sweep removes older ones', async () => {
    const readOnly = await createKey(app.current.sql, 'ro');
    await app.current.request('POST', '/api/v1/teams', { key: readOnly, body: { name: 'x' } });
    expect(await events('?event_type=permission.denied')).to.have.length(1);
    app.current.clock.now = new Date(app.current.clock.now.getTime() + app.current.config.auditRetentionMs + 60_000);
    await runSweep(app.current.context);
    expect(await events('?event_type=permission.denied')).to.have.length(0);
  });
});

describe(`security audit log across a shutdown (${onRealPostgres ? 'PostgreSQL server' : 'embedded database'})`, function () {
  this.timeout(120_000);
  const env = useCliEnvironment('cinv_audit');

  it('writes what it buffered when the server gets SIGTERM right after the requests', async () => {
    const created = await runCli(['keys', 'create', '--tier', 'ro', '--name', 'viewer'], env());
    expect(created.code, created.stderr).to.equal(0);
    const admin = await runCli(['keys', 'create', '--tier', 'adm', '--name', 'ops'], env());
    const server = await startServer(env());
    const base = `http://127.0.0.1:${server.port}`;
    const refusals = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fetch(`${base}/api/v1/teams`, {
          method: 'POST',
          headers: { 'x-api-key': created.stdout.trim(), 'content-type': 'application/json' },
          body: JSON.stringify({ name: `t${i}` }),
        }).then((r) => r.status),
      ),
    );
    expect(refusals).to.deep.equal(Array(20).fill(403));
    expect(await stopServer(server.child)).to.equal(0);

    const again = await startServer(env());
    try {
      const reply = await fetch(`http://127.0.0.1:${again.port}${AUDIT}?event_type=permission.denied&limit=100`, {
        headers: { 'x-api-key': admin.stdout.trim() },
      });
      const body = (await reply.json()) as { items: unknown[] };
      expect(body.items).to.have.length(20);
    } finally {
      expect(await stopServer(again.child)).to.equal(0);
    }
  });
});
