import { expect } from 'chai';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, useTestApp } from '../../support/app.js';
import { buildSource } from '../../support/factories.js';

describe('baselines: listed by every reader of the inventory, deleted only by their owner or by who covers it', function () {
  this.timeout(60_000);
  const app = useTestApp();
  const WRITE = ['configuration_items:read', 'configuration_items:write'] as const;
  let admin: string;
  let east: string;
  let west: string;
  let source: string;

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
    source = await buildSource(app.current.sql, 'k8s');
    east = await createKey(app.current.sql, 'svc', {
      name: 'east',
      permissions: [...WRITE],
      scopes: [{ sourceId: source, scopeId: 'east' }],
    });
    west = await createKey(app.current.sql, 'svc', {
      name: 'west',
      permissions: [...WRITE],
      scopes: [{ sourceId: source, scopeId: 'west' }],
    });
  });

  const create = async (key: string, name: string) => {
    const reply = await app.current.request<any>('POST', '/api/v1/baselines', { key, body: { name } });
    expect(reply.status, reply.text).to.equal(201);
    return reply.body.id as string;
  };
  const remove = (key: string, id: string) => app.current.request<any>('DELETE', `/api/v1/baselines/${id}`, { key });
  const exists = async (id: string) => (await app.current.sql`select 1 from baselines where id = ${id}`).length === 1;
  const keyId = async (name: string) =>
    (await app.current.sql<{ id: string }[]>`select id::text from api_keys where name = ${name}`)[0]!.id;

  it('records the principal that named it as its owner and refuses its deletion to others (403), keeping it', async () => {
    const id = await create(east, 'east release');
    const [row] = await app.current.sql<
      { api_key_id: string | null; user_id: string | null }[]
    >`select api_key_id::text, user_id::text from baselines where id = ${id}`;
    expect(row).to.deep.equal({ api_key_id: await keyId('east'), user_id: null });

    // shared reading: the other key lists it
    const listed = await app.current.get('/api/v1/baselines', west);
    expect(listed.body.items.map((b: { name: string }) => b.name)).to.deep.equal(['east release']);

    const refused = await remove(west, id);
    expect(refused.status).to.equal(403);
    expect(refused.body.error.details).to.deep.equal({ reason: 'not_owner', baseline_id: id });
    expect(await exists(id)).to.equal(true);
    await app.current.context.audit.flush();
    const [denied] = await app.current.sql<{ n: number }[]>`
      select count(*)::int as n from audit_events where event_type = 'permission.denied' and actor_name = 'west' and details->>'reason' = 'not_owner'`;
    expect(denied!.n).to.equal(1);

    expect((await remove(east, id)).status).to.equal(204);
    expect(await exists(id)).to.equal(false);
  });

  it("lets a principal whose rights cover the owner's delete it, and no one narrower than the owner", async () => {
    const byEast = await create(east, 'by east');
    expect((await remove(admin, byEast)).status, 'an adm key covers a scoped key').to.equal(204);
    expect(await exists(byEast)).to.equal(false);

    const byAdmin = await create(admin, 'by admin');
    expect((await remove(east, byAdmin)).status).to.equal(403);
    expect(await exists(byAdmin)).to.equal(true);
    const whole = await createKey(app.current.sql, 'svc', {
      name: 'whole',
      permissions: [...WRITE],
      scopes: [{ sourceId: source, scopeId: null }],
    });
    expect((await remove(whole, byAdmin)).status, 'all data, but not every permission of the adm key').to.equal(403);
    expect(await exists(byAdmin)).to.equal(true);
  });

  it("records the person behind a user token as the owner: the user's other tokens delete it, a covering key too, a narrower one not", async () => {
    const inDay = new Date(Date.now() + 86_400_000).toISOString();
    const ok = async (method: string, path: string, body: unknown) => {
      const reply = await app.current.request<any>(method, path, { key: admin, body });
      expect(reply.status, reply.text).to.be.oneOf([200, 201]);
      return reply.body;
    };
    const user = await ok('POST', '/api/v1/users', { name: 'release manager' });
    await ok('PUT', `/api/v1/users/${user.id}/permissions`, { permissions: [...WRITE] });
    await ok('PUT', `/api/v1/users/${user.id}/scopes`, { scopes: [{ source_id: source, scope_id: null }] });
    const first = (await ok('POST', `/api/v1/users/${user.id}/tokens`, { name: 'a', expires_at: inDay }))
      .token as string;
    const second = (await ok('POST', `/api/v1/users/${user.id}/tokens`, { name: 'b', expires_at: inDay }))
      .token as string;

    const a = await create(first, 'release a');
    const [row] = await app.current.sql<
      { api_key_id: string | null; user_id: string | null }[]
    >`select api_key_id::text, user_id::text from baselines where id = ${a}`;
    expect(row).to.deep.equal({ api_key_id: null, user_id: user.id });
    expect((await remove(east, a)).status, 'one instance does not cover the whole source').to.equal(403);
    expect(await exists(a)).to.equal(true);
    expect((await remove(second, a)).status, 'the same user through another token').to.equal(204);

    const b = await create(first, 'release b');
    const whole = await createKey(app.current.sql, 'svc', {
      name: 'whole',
      permissions: [...WRITE],
      scopes: [{ sourceId: source, scopeId: null }],
    });
    expect((await remove(whole, b)).status, 'the same rights cover the user').to.equal(204);
    expect(await exists(b)).to.equal(false);
  });

  it('leaves a baseline without an owner (named before owners were recorded) to principals with all data', async () => {
    const [row] = await app.current.sql<{ id: string }[]>`
      insert into baselines (id, tenant_id, name, at, created_at, created_by)
      values (gen_random_uuid(), ${DEFAULT_TENANT_ID}, 'legacy', now(), now(), 'key old') returning id::text`;
    expect((await remove(east, row!.id)).status).to.equal(403);
    expect(await exists(row!.id)).to.equal(true);
    const everything = await createKey(app.current.sql, 'svc', {
      name: 'everything',
      permissions: [...WRITE],
      scopes: [{ sourceId: null, scopeId: null }],
    });
    expect((await remove(everything, row!.id)).status).to.equal(204);
    expect(await exists(row!.id)).to.equal(false);
  });
});
