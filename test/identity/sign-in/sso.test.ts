import { expect } from 'chai';
import { SingleSignOn } from '../../../src/platform/auth/sso.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, ingest } from '../../support/factories.js';
import { Browser, startOidcProvider, type ProviderAccount, type RunningProvider } from '../../support/oidc-provider.js';

const LIST = '/api/v1/configuration-items';
const HOUR = 3_600_000;

describe('single sign-on against a real OpenID provider (oidc-provider, in process)', function () {
  this.timeout(60_000);
  let app: TestApp;
  let provider: RunningProvider;
  let admin: string;
  const alice: ProviderAccount = {
    sub: 'alice-sub',
    name: 'Alice Liddell',
    email: 'alice@example.com',
    email_verified: true,
    groups: [],
  };

  before(async () => {
    const { sql } = await testDatabase();
    await resetDatabase(sql);
    app = await startTestApp({ sessionTtlMs: 24 * HOUR });
    provider = await startOidcProvider(`${app.baseUrl}/auth/callback`, `${app.baseUrl}/auth/login`);
    app.context.sso = new SingleSignOn(
      {
        issuer: provider.issuer,
        clientId: provider.clientId,
        clientSecret: provider.clientSecret,
        redirectUri: `${app.baseUrl}/auth/callback`,
        scopes: 'openid profile email groups',
        groupsClaim: 'groups',
      },
      app.context.logger,
    );
    admin = await createKey(app.sql, 'adm');
    await ingest(app.sql, [buildPod({ name: 'web-1' })], { scopeId: 'c1' });
  });

  after(async () => {
    await app?.close();
    await provider?.close();
  });

  beforeEach(async () => {
    await app.sql`delete from sessions`;
    app.clock.now = new Date();
  });

  /** Signs in through the provider as `account`; returns the browser and where it landed. */
  async function signIn(
    account: ProviderAccount,
    returnTo?: string,
  ): Promise<{ browser: Browser; landed: string; status: number }> {
    provider.signInAs(account);
    const browser = new Browser();
    const start = `${app.baseUrl}/auth/login${returnTo === undefined ? '' : `?return_to=${encodeURIComponent(returnTo)}`}`;
    const atCallback = await browser.follow(start, `${app.baseUrl}/auth/callback`);
    const finished = await browser.fetch(atCallback.url, { headers: { accept: 'text/html' } });
    return { browser, landed: finished.headers.get('location') ?? '', status: finished.status };
  }

  const api = (browser: Browser, path: string, init: RequestInit = {}) => browser.fetch(`${app.baseUrl}${path}`, init);

  it('creates the user with name and email at the first sign-in and reuses it at the next, with a session cookie that works on the API', async () => {
    const first = await signIn(alice, '/api/v1/me?x=1');
    expect(first.status).to.equal(303);
    expect(first.landed).to.equal('/api/v1/me?x=1');
    const cookie = first.browser.cookie(app.baseUrl, 'cinv_session');
    expect(cookie).to.be.a('string');
    const me = await api(first.browser, '/api/v1/me');
    expect(me.status).to.equal(200);
    const body = (await me.json()) as any;
    expect(body).to.deep.include({ kind: 'user', tier: null, superadmin: false, permissions: [], scopes: [] });
    expect(body.user).to.deep.include({ name: 'Alice Liddell', email: 'alice@example.com' });
    // a new SSO user holds nothing until granted
    expect((await api(first.browser, LIST)).status).to.equal(403);
    expect((await api(first.browser, '/auth/me')).status).to.equal(200);

    const second = await signIn({ ...alice, name: 'Alice L.' });
    expect(second.landed).to.equal('/ui/');
    const again = (await (await api(second.browser, '/api/v1/me')).json()) as any;
    expect(again.user.id).to.equal(body.user.id);
    expect(again.user.name).to.equal('Alice L.');
    const users = await app.sql`select count(*)::int as n from users where subject = 'alice-sub'`;
    expect(users[0]!.n).to.equal(1);

    // the cookie is HttpOnly, SameSite=Lax, signed; the table keeps only a hash of it
    const stored = await app.sql<{ id_hash: Buffer }[]>`select id_hash from sessions`;
    expect(stored.map((s) => s.id_hash.toString())).to.not.include(cookie);
  });

  it('ignores a return_to on another origin', async () => {
    const signedIn = await signIn(alice, 'https://evil.example.com/steal');
    expect(signedIn.landed).to.equal('/ui/');
    expect((await signIn(alice, '//evil.example.com/x')).landed).to.equal('/ui/');
  });

  it('rolls the session while in use and ends it after the time to live without use', async () => {
    const { browser } = await signIn(alice);
    app.clock.now = new Date(app.clock.now.getTime() + 23 * HOUR);
    expect((await api(browser, '/api/v1/me')).status).to.equal(200);
    // used at 23 h: it now lasts until 47 h
    app.clock.now = new Date(app.clock.now.getTime() + 23 * HOUR);
    expect((await api(browser, '/api/v1/me')).status).to.equal(200);
    app.clock.now = new Date(app.clock.now.getTime() + 25 * HOUR);
    const expired = await api(browser, '/api/v1/me');
    expect(expired.status).to.equal(401);
    expect(((await expired.json()) as any).error.code).to.equal('HTTP_401');
    // a browser is sent to sign in again, and back afterwards
    const { browser: other } = await signIn(alice);
    app.clock.now = new Date(app.clock.now.getTime() + 25 * HOUR);
    const redirected = await api(other, `${LIST}?limit=5`, { headers: { accept: 'text/html' } });
    expect(redirected.status).to.equal(302);
    expect(redirected.headers.get('location')).to.equal(
      `/auth/login?return_to=${encodeURIComponent(`${LIST}?limit=5`)}`,
    );
  });

  it('signs out at once; cross-site sign-out and unsafe requests are refused', async () => {
    const { browser } = await signIn(alice);
    const crossSite = await api(browser, '/auth/logout', {
      method: 'POST',
      headers: { origin: 'https://evil.example.com' },
    });
    expect(crossSite.status).to.equal(403);
    const token = await api(browser, '/api/v1/tokens', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'laptop', expires_at: new Date(app.clock.now.getTime() + 24 * HOUR).toISOString() }),
    });
    expect(token.status, 'an unsafe request without Origin').to.equal(403);
    expect(((await token.json()) as any).error.details).to.deep.include({ reason: 'csrf' });

    const out = await api(browser, '/auth/logout', { method: 'POST', headers: { origin: app.baseUrl } });
    expect(out.status).to.equal(204);
    expect((await app.sql`select count(*)::int as n from sessions`)[0]!.n).to.equal(0);
    expect((await api(browser, '/api/v1/me')).status).to.equal(401);

    // a browser form post is sent on to the provider's logout, which returns it to the sign-in page
    const { browser: formUser } = await signIn(alice);
    const formOut = await api(formUser, '/auth/logout', {
      method: 'POST',
      headers: { origin: app.baseUrl, accept: 'text/html' },
    });
    expect(formOut.status).to.equal(303);
    const providerLogout = new URL(formOut.headers.get('location')!);
    expect(providerLogout.origin).to.equal(provider.issuer);
    expect(providerLogout.searchParams.get('post_logout_redirect_uri')).to.equal(`${app.baseUrl}/auth/login`);
  });

  it('refuses a tampered state, a replayed callback and a wrong nonce, with nothing signed in', async () => {
    provider.signInAs(alice);
    const browser = new Browser();
    const atCallback = await browser.follow(`${app.baseUrl}/auth/login`, `${app.baseUrl}/auth/callback`);
    const tampered = new URL(atCallback.url);
    tampered.searchParams.set('state', 'forged-state');
    const refused = await browser.fetch(tampered.href);
    expect(refused.status).to.equal(400);
    expect(browser.cookie(app.baseUrl, 'cinv_session')).to.equal(undefined);

    const fresh = await signIn(alice);
    expect(fresh.status).to.equal(303);
    // the same callback again: its sign-in was completed already
    const replayBrowser = new Browser();
    const second = await replayBrowser.follow(`${app.baseUrl}/auth/login`, `${app.baseUrl}/auth/callback`);
    expect((await replayBrowser.fetch(second.url)).status).to.equal(303);
    replayBrowser.setCookie(app.baseUrl, 'cinv_session', undefined);
    const replayed = await replayBrowser.fetch(second.url);
    expect(replayed.status).to.equal(400);
    expect(replayBrowser.cookie(app.baseUrl, 'cinv_session')).to.equal(undefined);

    // the provider is asked with another nonce than the one cinv keeps for this sign-in
    const nonceBrowser = new Browser();
    const toProvider = await nonceBrowser.fetch(`${app.baseUrl}/auth/login`);
    const authorize = new URL(toProvider.headers.get('location')!);
    authorize.searchParams.set('nonce', 'not-the-nonce');
    const wrongNonce = await nonceBrowser.follow(authorize.href, `${app.baseUrl}/auth/callback`);
    const nonceRefused = await nonceBrowser.fetch(wrongNonce.url);
    expect(nonceRefused.status).to.equal(400);
    expect(nonceBrowser.cookie(app.baseUrl, 'cinv_session')).to.equal(undefined);

    await app.context.audit.flush();
    const failures = await app.sql<
      { n: number }[]
    >`select count(*)::int as n from audit_events where event_type = 'auth.failed' and details->>'reason' = 'sso_failed'`;
    expect(failures[0]!.n).to.equal(3);
  });

  it("refuses a deactivated user's session and tokens on the next request", async () => {
    const bob: ProviderAccount = { sub: 'bob-sub', name: 'Bob', email: 'bob@example.com', groups: [] };
    const { browser } = await signIn(bob);
    const minted = await api(browser, '/api/v1/tokens', {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: app.baseUrl },
      body: JSON.stringify({ name: 'laptop', expires_at: new Date(app.clock.now.getTime() + 24 * HOUR).toISOString() }),
    });
    expect(minted.status).to.equal(201);
    const { token } = (await minted.json()) as { token: string };
    expect((await app.get('/api/v1/me', token)).status).to.equal(200);
    const me = (await (await api(browser, '/api/v1/me')).json()) as any;

    const deactivated = await app.request('POST', `/api/v1/users/${me.user.id}/deactivate`, { key: admin, body: {} });
    expect(deactivated.status).to.equal(200);
    expect((await api(browser, '/api/v1/me')).status).to.equal(401);
    expect((await app.get('/api/v1/me', token)).status).to.equal(401);
    // and cannot sign in again while deactivated
    expect((await signIn(bob)).status).to.equal(403);
  });

  it('maps the groups claim to teams of the same name, adding and removing memberships at each sign-in', async () => {
    const team = await app.request('POST', '/api/v1/teams', { key: admin, body: { name: 'platform' } });
    await app.request('PUT', `/api/v1/teams/${team.body.id}/permissions`, {
      key: admin,
      body: { permissions: ['configuration_items:read'] },
    });
    await app.request('PUT', `/api/v1/teams/${team.body.id}/scopes`, {
      key: admin,
      body: { scopes: [{ source_id: null, scope_id: null }] },
    });
    const carol: ProviderAccount = {
      sub: 'carol-sub',
      name: 'Carol',
      email: 'carol@example.com',
      groups: ['platform', 'unknown-group'],
    };

    const member = await signIn(carol);
    const list = await api(member.browser, LIST);
    expect(list.status).to.equal(200);
    expect(((await list.json()) as any).total).to.equal(1);

    const formerMember = await signIn({ ...carol, groups: [] });
    expect((await api(formerMember.browser, LIST)).status).to.equal(403);
    // an admin's own membership is not the provider's to remove
    const me = (await (await api(formerMember.browser, '/api/v1/me')).json()) as any;
    await app.request('PUT', `/api/v1/teams/${team.body.id}/members/${me.user.id}`, { key: admin, body: {} });
    const stillMember = await signIn({ ...carol, groups: [] });
    expect((await api(stillMember.browser, LIST)).status).to.equal(200);
  });

  it('answers 404 on the sign-in routes when single sign-on is not configured', async () => {
    const plain = await startTestApp();
    try {
      expect((await plain.get('/auth/login')).status).to.equal(404);
      expect((await plain.get('/auth/callback?code=x&state=y')).status).to.equal(404);
      expect((await plain.request('POST', '/auth/logout')).status).to.equal(204);
    } finally {
      await plain.close();
    }
  });
});
