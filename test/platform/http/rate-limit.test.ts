import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { createConnection } from 'node:net';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { describeWith, listening } from '../../support/dependencies.js';

const LIST = '/api/v1/configuration-items';
const REDIS_URL = process.env.CINV_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Whether a Redis answers at the test URL (under CI=true its absence fails the Redis tests). */
function redisAnswers(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = createConnection({ host: hostname, port: Number(port || 6379) });
    socket.setTimeout(1000);
    socket.once('connect', () => {
      socket.end();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

describe('rate limits per credential', function () {
  this.timeout(60_000);
  const apps: TestApp[] = [];
  const start = async (overrides: Parameters<typeof startTestApp>[0]) => {
    const app = await startTestApp(overrides);
    apps.push(app);
    return app;
  };

  before(async () => {
    await resetDatabase((await testDatabase()).sql);
  });
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  it('gives a signed-in browser an allowance of its own, apart from the key it was opened with', async () => {
    const app = await start({ rateLimit: 3, rateBurst: 3, sessionRateLimit: 8, sessionRateBurst: 8 });
    const key = await createKey(app.sql, 'ro');
    const origin = { origin: app.baseUrl };
    const opened = await app.request('POST', '/auth/session', { body: { api_key: key }, headers: origin });
    expect(opened.status, opened.text).to.equal(200);
    const cookie = opened.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const byKey = [];
    for (let i = 0; i < 4; i++) byKey.push((await app.get(LIST, key)).status);
    expect(byKey, 'the key alone is held to its own limit').to.deep.equal([200, 200, 200, 429]);
    const bySession = [];
    for (let i = 0; i < 9; i++) {
      const reply = await app.request('GET', LIST, { headers: { cookie, ...origin } });
      bySession.push(reply.status);
      if (i === 0) expect(reply.headers.get('x-ratelimit-limit')).to.equal('8');
    }
    expect(bySession, "the session has the session allowance, untouched by the key's").to.deep.equal([
      200, 200, 200, 200, 200, 200, 200, 200, 429,
    ]);
  });

  it('refuses the request beyond the burst with a 429 envelope and Retry-After, and reports the allowance on every answer', async () => {
    const app = await start({ rateLimit: 5, rateBurst: 5 });
    const key = await createKey(app.sql, 'ro');
    const other = await createKey(app.sql, 'ro');
    const replies = [];
    for (let i = 0; i < 6; i++) replies.push(await app.get(LIST, key));
    expect(replies.map((r) => r.status)).to.deep.equal([200, 200, 200, 200, 200, 429]);
    expect(replies.map((r) => r.headers.get('x-ratelimit-remaining'))).to.deep.equal(['4', '3', '2', '1', '0', '0']);
    expect(replies[0]!.headers.get('x-ratelimit-limit')).to.equal('5');
    const reset = Number(replies[0]!.headers.get('x-ratelimit-reset'));
    expect(reset).to.be.within(Date.now() / 1000, Date.now() / 1000 + 61);
    const refused = replies[5]!;
    expect(refused.body.error).to.include({ code: 'HTTP_429', method: 'GET', path: LIST });
    expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 60);
    // another credential has its own allowance
    expect((await app.get(LIST, other)).status).to.equal(200);
  });

  it('counts requests without valid credentials per client address', async () => {
    const app = await start({ rateLimit: 3, rateBurst: 3 });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await app.get(LIST, 'cinv_ro_guessing')).status);
    expect(statuses).to.deep.equal([401, 401, 401, 429]);
    // public routes are not limited
    for (let i = 0; i < 5; i++) expect((await app.get('/health')).status).to.equal(200);
  });

  it('gives paths named in the overrides their own, lower allowance', async () => {
    const app = await start({
      rateLimit: 100,
      rateBurst: 100,
      rateLimitOverrides: [{ prefix: '/api/v1/changes', method: 'GET', limit: 2, burst: 2 }],
    });
    const key = await createKey(app.sql, 'ro');
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await app.get('/api/v1/changes', key)).status);
    expect(statuses).to.deep.equal([200, 200, 429]);
    const list = await app.get(LIST, key);
    expect(list.status).to.equal(200);
    expect(list.headers.get('x-ratelimit-limit')).to.equal('100');
  });

  it('falls back to per-process limits when Redis cannot be reached, says so, and never fails a request', async () => {
    const app = await start({ rateLimit: 3, rateBurst: 3, redisUrl: 'redis://127.0.0.1:1' });
    const key = await createKey(app.sql, 'ro');
    await waitFor(() => app.context.limits.state().status === 'degraded');
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await app.get(LIST, key)).status);
    expect(statuses).to.deep.equal([200, 200, 200, 429]);
    const health = await app.get('/health');
    expect(health.status).to.equal(200);
    expect(health.body.checks.rate_limits).to.include({ backend: 'redis', status: 'degraded' });
    expect(app.logs.some((line) => line.includes('Redis unreachable'))).to.equal(true);
  });

  describeWith(listening(REDIS_URL, 6379))(
    'shared through the real Redis at CINV_TEST_REDIS_URL (skipped outside CI when no Redis answers there; under CI=true a missing Redis fails)',
    () => {
      before(async () => {
        if (!(await redisAnswers(REDIS_URL))) throw new Error(`no Redis answers at ${REDIS_URL}`);
      });

      it('holds one allowance across two replicas', async () => {
        // a new key per run: counts another run left in the same Redis belong to other credentials
        const limits = { rateLimit: 4, rateBurst: 4, redisUrl: REDIS_URL };
        const [a, b] = [await start(limits), await start(limits)];
        const key = await createKey(a.sql, 'ro', { name: `shared-${randomUUID()}` });
        await waitFor(() => a.context.limits.state().status === 'ok' && b.context.limits.state().status === 'ok');
        const statuses = [];
        for (let i = 0; i < 5; i++) statuses.push((await (i % 2 === 0 ? a : b).get(LIST, key)).status);
        expect(statuses).to.deep.equal([200, 200, 200, 200, 429]);
        const ready = await a.get('/health/ready');
        expect(ready.body.checks.rate_limits).to.deep.equal({ backend: 'redis', status: 'ok' });
      });
    },
  );
});

async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
