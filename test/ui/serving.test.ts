import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { packagePath } from '../../src/platform/paths.js';
import { buildWebInterface } from '../../src/ui/build.js';
import { createKey, startTestApp, type TestApp } from '../support/app.js';
import { resetDatabase, testDatabase } from '../support/db.js';

describe("the web interface's server side: serving the built app, and key sign-in sessions", function () {
  this.timeout(60_000);
  let app: TestApp;
  let origin: Record<string, string>;

  before(async () => {
    if (!existsSync(packagePath('dist', 'ui', 'index.html'))) {
      await buildWebInterface();
    }
    await resetDatabase((await testDatabase()).sql);
    app = await startTestApp();
    origin = { origin: app.baseUrl };
  });
  after(async () => {
    await app?.close();
  });

  const signIn = async (key: string, headers: Record<string, string> = origin) =>
    app.request<any>('POST', '/auth/session', { body: { api_key: key }, headers });
  const cookieOf = (reply: { headers: Headers }) =>
    reply.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
  const withCookie = (cookie: string, method = 'GET', path = '/api/v1/me', body?: unknown) =>
    app.request<any>(method, path, { headers: { cookie, ...origin }, body });

  it('serves the app: the index page for every view path, hashed assets cached for a year and gzipped, a strict content policy', async () => {
    for (const path of ['/ui/', '/ui/inventory?status=all', '/ui/ci/0190a0e0-0000-7000-8000-000000000000']) {
      const page = await fetch(app.baseUrl + path, { headers: { 'accept-encoding': 'gzip' } });
      expect(page.status, path).to.equal(200);
      expect(page.headers.get('content-type')).to.equal('text/html; charset=utf-8');
      expect(page.headers.get('cache-control')).to.equal('no-cache');
      expect(page.headers.get('content-security-policy')).to.include("script-src 'self'");
      const html = await page.text();
      expect(html).to.include('<div id="app">');
      const asset = /src="(\/ui\/assets\/[^"]+\.js)"/.exec(html)?.[1];
      expect(asset).to.be.a('string');
      const script = await fetch(app.baseUrl + asset!, { headers: { 'accept-encoding': 'gzip' } });
      expect(script.status).to.equal(200);
      expect(script.headers.get('cache-control')).to.equal('public, max-age=31536000, immutable');
      expect(script.headers.get('content-encoding')).to.equal('gzip');
      expect(await script.text()).to.have.length.greaterThan(1000);
    }
  });

  it('answers a missing asset, a write and an API client at / with the error envelope; sends browsers at / and /ui to the app', async () => {
    const missing = await app.get('/ui/assets/nothing-here.js');
    expect(missing.status).to.equal(404);
    expect((missing.body as any).error.code).to.equal('HTTP_404');
    const post = await app.request('POST', '/ui/inventory');
    expect(post.status).to.equal(405);
    expect((post.body as any).error.details.allowed).to.deep.equal(['GET', 'HEAD']);
    const browser = await fetch(`${app.baseUrl}/`, { headers: { accept: 'text/html' }, redirect: 'manual' });
    expect(browser.status).to.equal(302);
    expect(browser.headers.get('location')).to.equal('/ui/');
    const client = await app.request('GET', '/', { headers: { accept: 'application/json' } });
    expect(client.status).to.equal(404);
    expect((client.body as any).error.code).to.equal('HTTP_404');
    const bare = await fetch(`${app.baseUrl}/ui?x=1`, { redirect: 'manual' });
    expect(bare.headers.get('location')).to.equal('/ui/?x=1');
  });

  it('exchanges a key for a session that acts as the key, and ends when the key is revoked', async () => {
    const admin = await createKey(app.sql, 'adm');
    const reader = await createKey(app.sql, 'ro', { name: 'reader' });
    const signedIn = await signIn(reader);
    expect(signedIn.status, signedIn.text).to.equal(200);
    expect(signedIn.body).to.deep.include({ kind: 'api_key', tier: 'ro', name: 'reader' });
    const setCookie = signedIn.headers.getSetCookie().find((c) => c.startsWith('cinv_session='))!;
    expect(setCookie)
      .to.match(/httponly/i)
      .and.to.match(/samesite=lax/i);
    expect(signedIn.text).to.not.include(reader);
    const cookie = cookieOf(signedIn);
    expect((await withCookie(cookie)).body).to.deep.include({ kind: 'api_key', tier: 'ro' });
    // the tier holds: a read-only key's session cannot write
    expect((await withCookie(cookie, 'POST', '/api/v1/teams', { name: 'nope' })).status).to.equal(403);

    const [row] = await app.sql<{ id: string }[]>`select id from api_keys where name = 'reader'`;
    expect((await app.request('DELETE', `/api/v1/api-keys/${row!.id}`, { key: admin })).status).to.equal(200);
    const after = await withCookie(cookie);
    expect(after.status).to.equal(401);
    expect(after.body.error.code).to.equal('HTTP_401');
    expect(await app.sql`select 1 from sessions where api_key_id = ${row!.id}`).to.have.length(0);
  });

  it("keeps a scoped key's data scopes in its session", async () => {
    const admin = await createKey(app.sql, 'adm');
    const added = await app.request<any>('POST', '/api/v1/sources', {
      key: admin,
      body: { name: 'east', collector_type: 'universal' },
    });
    expect(added.status, added.text).to.equal(201);
    const sourceId = String(added.body.id);
    const scoped = await createKey(app.sql, 'svc', {
      permissions: ['configuration_items:read'],
      scopes: [{ sourceId, scopeId: 'east' }],
    });
    const signedIn = await signIn(scoped);
    expect(signedIn.status, signedIn.text).to.equal(200);
    const me = await withCookie(cookieOf(signedIn));
    expect(me.body.scopes).to.deep.equal([{ source_id: sourceId, scope_id: 'east' }]);
    expect(me.body.permissions).to.deep.equal(['configuration_items:read']);
  });

  it('refuses a cross-site or origin-less exchange, an unknown or malformed key, and a body it does not know', async () => {
    const admin = await createKey(app.sql, 'adm');
    const crossSite = await signIn(admin, { origin: 'https://evil.example.com' });
    expect(crossSite.status).to.equal(403);
    expect(crossSite.body.error.details.reason).to.equal('csrf');
    expect(crossSite.headers.getSetCookie()).to.deep.equal([]);
    expect((await signIn(admin, {})).status).to.equal(403);
    expect((await signIn(admin, { 'sec-fetch-site': 'same-origin' })).status).to.equal(200);
    for (const bad of ['cinv_adm_notarealkeyatallnotarealkeyatall', 'garbage']) {
      const refused = await signIn(bad);
      expect(refused.status, bad).to.equal(401);
      expect(refused.body.error.code).to.equal('HTTP_401');
      expect(refused.text).to.not.include(bad);
    }
    const extra = await app.request<any>('POST', '/auth/session', {
      body: { api_key: admin, remember: true },
      headers: origin,
    });
    expect(extra.status).to.equal(422);
    expect((await app.get<any>('/auth/methods')).body).to.deep.equal({ sso: false, api_key: true });
  });
});
