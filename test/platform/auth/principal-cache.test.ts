import { expect } from 'chai';
import { PrincipalCache } from '../../../src/platform/auth/principal-cache.js';
import type { Principal } from '../../../src/platform/auth/principal.js';
import { createKey, useTestApp, type TestApp } from '../../support/app.js';
import type { Sql } from '../../../src/platform/db/database.js';
import { onRealPostgres, otherProcessConnection } from '../../support/db.js';

const LIST = '/api/v1/configuration-items';
const principal = {
  id: 'k',
  tenantId: 't',
  kind: 'api_key',
  name: 'k',
  superadmin: false,
  permissions: new Set(),
  scopes: 'all',
} as unknown as Principal;

describe('the key cache (PrincipalCache)', () => {
  it('does not keep what a lookup read before a change it was told of, nor anything before its listener is up', () => {
    const cache = new PrincipalCache(5_000);
    cache.store('a', principal, null, cache.generation, 1_000);
    expect(cache.get('a', 1_001), 'not listening yet').to.equal(undefined);
    cache.listened();
    const begun = cache.generation;
    cache.forget();
    cache.store('a', principal, null, begun, 1_000);
    expect(cache.get('a', 1_001), 'read before the drop').to.equal(undefined);
    cache.store('a', principal, null, cache.generation, 1_000);
    expect(cache.get('a', 1_001)).to.equal(principal);
  });

  it("lets an entry go at its key's expiry, at its maximum age, and when the clock goes back", () => {
    const cache = new PrincipalCache(5_000);
    cache.listened();
    cache.store('a', principal, new Date(3_000), cache.generation, 1_000);
    expect(cache.get('a', 2_999)).to.equal(principal);
    expect(cache.get('a', 3_000), 'expired').to.equal(undefined);
    cache.store('b', principal, null, cache.generation, 1_000);
    expect(cache.get('b', 5_999)).to.equal(principal);
    expect(cache.get('b', 6_000), 'older than the maximum age').to.equal(undefined);
    cache.store('c', principal, null, cache.generation, 1_000);
    expect(cache.get('c', 999), 'stored in the future').to.equal(undefined);
    cache.store('d', principal, null, cache.generation, 1_000);
    cache.close();
    expect(cache.get('d', 1_001), 'closed').to.equal(undefined);
    expect(cache.size).to.equal(0);
  });
});

describe('the key cache of a server', () => {
  const app = useTestApp({ keyCacheMs: 3_600_000 });
  let other: Sql;

  before(async () => {
    // another process's session: what it changes reaches the server only by notification (on the
    // embedded database, through the hosting process's socket)
    other = await otherProcessConnection();
  });
  after(async () => {
    await other.end();
  });

  const status = async (current: TestApp, key: string) => (await current.get(LIST, key)).status;

  /** Asks until the answer is `expected`, for at most two seconds; the number of tries it took. */
  async function until(current: TestApp, key: string, expected: number): Promise<number> {
    for (let tries = 1; tries <= 200; tries++) {
      if ((await status(current, key)) === expected) return tries;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`still not ${expected} after 2 s`);
  }

  /** Changes made through the server's own pool with the triggers off: announced to nobody. */
  const unannounced = (current: TestApp, change: (tx: Sql) => Promise<unknown>) =>
    current.sql.begin(async (tx) => {
      await tx`set local session_replication_role = replica`;
      await change(tx as unknown as Sql);
    });

  it('serves a used key from memory: a change nobody is told of shows only after the maximum age', async () => {
    const current = app.current;
    const key = await createKey(current.sql, 'ro');
    expect(await status(current, key)).to.equal(200);
    expect(current.context.principals!.size).to.equal(1);
    await unannounced(current, (tx) => tx`update api_keys set revoked_at = now() where tier = 'ro'`);
    expect(await status(current, key), 'from memory').to.equal(200);
    current.clock.now = new Date(current.clock.now.getTime() + 3_600_000);
    expect(await status(current, key), 'past the maximum age').to.equal(401);
  });

  it('refuses a key revoked through this server from the very next request, without waiting to be told', async () => {
    const current = app.current;
    const admin = await createKey(current.sql, 'adm');
    const key = await createKey(current.sql, 'ro', { name: 'revoked' });
    expect(await status(current, key)).to.equal(200);
    const [{ id }] = await current.sql<[{ id: string }]>`select id from api_keys where name = 'revoked'`;
    // no notification comes: only the server's own write can drop the key in time
    await current.sql`alter table api_keys disable trigger api_keys_principals_changed`;
    try {
      expect((await current.request('DELETE', `/api/v1/api-keys/${id}`, { key: admin })).status).to.equal(200);
      expect(await status(current, key)).to.equal(401);
    } finally {
      await current.sql`alter table api_keys enable trigger api_keys_principals_changed`;
    }
  });

  it('drops a key revoked, or a user deactivated, by another process', async () => {
    const current = app.current;
    const admin = await createKey(current.sql, 'adm');
    const key = await createKey(current.sql, 'ro', { name: 'elsewhere' });
    expect(await status(current, key)).to.equal(200);
    await other`update api_keys set revoked_at = now() where name = 'elsewhere'`;
    expect(await until(current, key, 401)).to.be.below(200);

    const user = await current.request('POST', '/api/v1/users', { key: admin, body: { name: 'ann' } });
    const expiresAt = new Date(current.clock.now.getTime() + 86_400_000).toISOString();
    const token = await current.request('POST', `/api/v1/users/${user.body.id}/tokens`, {
      key: admin,
      body: { name: 't', expires_at: expiresAt },
    });
    await current.request('PUT', `/api/v1/users/${user.body.id}/permissions`, {
      key: admin,
      body: { permissions: ['configuration_items:read'] },
    });
    await current.request('PUT', `/api/v1/users/${user.body.id}/scopes`, {
      key: admin,
      body: { scopes: [{ source_id: null, scope_id: null }] },
    });
    expect(await status(current, token.body.token)).to.equal(200);
    await other`delete from grants where user_id = ${user.body.id}`;
    expect(await until(current, token.body.token, 403), 'a withdrawn grant').to.be.below(200);
    await other`update users set deactivated_at = now() where id = ${user.body.id}`;
    expect(await until(current, token.body.token, 401), 'a deactivated user').to.be.below(200);
  });

  (onRealPostgres ? describe : describe.skip)(
    'told by PostgreSQL (skipped on the embedded database: there every unit another process runs drops the cache)',
    () => {
      it("is not told of a key's use: the bookkeeping write keeps the cache", async () => {
        const current = app.current;
        const key = await createKey(current.sql, 'ro');
        expect(await status(current, key)).to.equal(200);
        const generation = current.context.principals!.generation;
        await other`update api_keys set last_used_at = now()`;
        await other`update users set last_login_at = now()`;
        // a change that is announced, after the unannounced ones, so that waiting for it is enough
        await other`update api_keys set name = name || '' where tier = 'adm'`;
        for (let i = 0; i < 200 && current.context.principals!.generation === generation; i++)
          await new Promise((resolve) => setTimeout(resolve, 10));
        expect(current.context.principals!.generation, 'one drop: the announced change').to.equal(generation + 1);
      });

      it('drops everything when its listening connection comes back: what was said meanwhile is lost', async () => {
        const current = app.current;
        const key = await createKey(current.sql, 'ro', { name: 'while-away' });
        expect(await status(current, key)).to.equal(200);
        const generation = current.context.principals!.generation;
        await other`select pg_terminate_backend(pid) from pg_stat_activity where query ilike 'listen%' and datname = current_database()`;
        for (let i = 0; i < 300 && current.context.principals!.generation === generation; i++)
          await new Promise((resolve) => setTimeout(resolve, 10));
        expect(current.context.principals!.generation, 'listening again').to.be.above(generation);
        expect(current.context.principals!.size).to.equal(0);
        expect(await status(current, key)).to.equal(200);
      });
    },
  );
});
