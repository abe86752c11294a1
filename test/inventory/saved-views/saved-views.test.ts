import { expect } from 'chai';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, useTestApp } from '../../support/app.js';
import { buildPod, ingest } from '../../support/factories.js';

describe('saved views', function () {
  this.timeout(60_000);
  const app = useTestApp();
  let admin: string;
  let reader: string;

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
    reader = await createKey(app.current.sql, 'ro');
  });

  const save = (key: string, body: Record<string, unknown>) =>
    app.current.request<any>('POST', '/api/v1/saved-views', { key, body });
  const list = async (key: string, query = '') =>
    (await app.current.get(`/api/v1/saved-views${query}`, key)).body.items as any[];

  it('keeps a view private to its owner unless shared, and lets only the owner delete it', async () => {
    const own = await save(admin, {
      name: 'Failing pods',
      view: 'inventory',
      query: 'status=all&filter=type_data.phase:eq:Failed',
    });
    expect(own.status, own.text).to.equal(201);
    expect(own.body).to.deep.include({ name: 'Failing pods', view: 'inventory', shared: false, mine: true });
    expect(own.body.owner.kind).to.equal('api_key');
    const shared = await save(admin, {
      name: 'Checkout changes',
      view: 'changes',
      query: 'q=checkout&range=24h',
      shared: true,
    });
    expect(shared.status, shared.text).to.equal(201);

    expect((await list(admin)).map((v) => v.name)).to.deep.equal(['Checkout changes', 'Failing pods']);
    const seen = await list(reader);
    expect(seen.map((v) => [v.name, v.mine])).to.deep.equal([['Checkout changes', false]]);
    expect((await list(admin, '?view=inventory')).map((v) => v.name)).to.deep.equal(['Failing pods']);

    const foreign = await app.current.request<any>('DELETE', `/api/v1/saved-views/${shared.body.id}`, { key: reader });
    expect(foreign.status).to.equal(403);
    const hidden = await app.current.request<any>('DELETE', `/api/v1/saved-views/${own.body.id}`, { key: reader });
    expect(hidden.status).to.equal(404);
    const deleted = await app.current.request('DELETE', `/api/v1/saved-views/${own.body.id}`, { key: admin });
    expect(deleted.status).to.equal(204);
    expect((await list(admin)).map((v) => v.name)).to.deep.equal(['Checkout changes']);
  });

  it("lets a principal covering the owner of a shared view delete it, and nobody narrower; a private view stays the owner's", async () => {
    const inDay = new Date(Date.now() + 86_400_000).toISOString();
    const ok = async (method: string, path: string, body: unknown) => {
      const reply = await app.current.request<any>(method, path, { key: admin, body });
      expect(reply.status, reply.text).to.be.oneOf([200, 201]);
      return reply.body;
    };
    const user = await ok('POST', '/api/v1/users', { name: 'analyst' });
    await ok('PUT', `/api/v1/users/${user.id}/permissions`, {
      permissions: ['configuration_items:read', 'changes:read'],
    });
    await ok('PUT', `/api/v1/users/${user.id}/scopes`, { scopes: [{ source_id: null, scope_id: null }] });
    const token = (await ok('POST', `/api/v1/users/${user.id}/tokens`, { name: 't', expires_at: inDay }))
      .token as string;
    const shared = await save(token, { name: 'Team board', view: 'changes', query: 'range=24h', shared: true });
    const secret = await save(token, { name: 'Mine only', view: 'changes', query: 'q=me' });
    const exists = async (id: string) =>
      (await app.current.sql`select 1 from saved_views where id = ${id}`).length === 1;

    // the same permissions without the analyst's data do not cover it
    const narrow = await createKey(app.current.sql, 'svc', {
      permissions: ['configuration_items:read', 'changes:read'],
      scopes: [],
    });
    const refused = await app.current.request<any>('DELETE', `/api/v1/saved-views/${shared.body.id}`, { key: narrow });
    expect(refused.status).to.equal(403);
    expect(refused.body.error.details).to.deep.include({ reason: 'not_owner' });
    expect(await exists(shared.body.id)).to.equal(true);
    expect(
      (await app.current.request('DELETE', `/api/v1/saved-views/${secret.body.id}`, { key: admin })).status,
      'private: not even an admin sees it',
    ).to.equal(404);
    expect(await exists(secret.body.id)).to.equal(true);
    expect(
      (await app.current.request('DELETE', `/api/v1/saved-views/${shared.body.id}`, { key: reader })).status,
      'the ro key covers the analyst',
    ).to.equal(204);
    expect(await exists(shared.body.id)).to.equal(false);
  });

  it('uses a name once per view and owner, and at most 200 views each', async () => {
    expect((await save(admin, { name: 'Pods', view: 'inventory', query: '' })).status).to.equal(201);
    const again = await save(admin, { name: 'Pods', view: 'inventory', query: 'status=all' });
    expect(again.status).to.equal(409);
    expect(again.body.error.message).to.match(/named "Pods" already/);
    expect((await save(admin, { name: 'Pods', view: 'changes', query: '' })).status, 'another view').to.equal(201);
    expect((await save(reader, { name: 'Pods', view: 'inventory', query: '' })).status, 'another owner').to.equal(201);

    const [key] = await app.current.sql<
      { id: string }[]
    >`select id from api_keys where tier = 'adm' order by created_at desc limit 1`;
    await app.current.sql`
      insert into saved_views (id, tenant_id, api_key_id, name, view, query, created_at)
      select gen_random_uuid(), ${DEFAULT_TENANT_ID}, ${key!.id}, 'filler ' || n, 'stats', '', now() from generate_series(1, 198) n`;
    const full = await save(admin, { name: 'One too many', view: 'stats', query: '' });
    expect(full.status).to.equal(409);
    expect(full.body.error.details).to.deep.equal({ limit: 200 });
  });

  it('refuses what is not a view, a name or a query string, naming the field', async () => {
    for (const [body, field] of [
      [{ name: 'x', view: 'admin', query: '' }, 'view'],
      [{ name: '   ', view: 'inventory', query: '' }, 'name'],
      [{ name: 'x', view: 'inventory', query: '?status=all' }, 'query'],
      [{ name: 'x', view: 'inventory', query: 'a=b#frag' }, 'query'],
      [{ name: 'x', view: 'inventory', query: '', owner: 'someone' }, 'owner'],
    ] as const) {
      const reply = await save(admin, body);
      expect(reply.status, JSON.stringify(body)).to.equal(422);
      expect(JSON.stringify(reply.body.error.details), JSON.stringify(body)).to.include(field);
    }
    expect(
      (await app.current.request('POST', '/api/v1/saved-views', { body: { name: 'x', view: 'inventory', query: '' } }))
        .status,
    ).to.equal(401);
  });

  it('shows each person of the tenant what they may see when a shared view is opened', async () => {
    await ingest(app.current.sql, [buildPod({ name: 'east-1' })], { source: 'east', scopeId: 'c1' });
    await ingest(app.current.sql, [buildPod({ name: 'west-1' })], { source: 'west', scopeId: 'c2' });
    const [east] = await app.current.sql<{ id: string }[]>`select id::text from sources where name = 'east'`;
    const scoped = await createKey(app.current.sql, 'svc', {
      permissions: ['configuration_items:read'],
      scopes: [{ sourceId: east!.id, scopeId: 'c1' }],
    });
    const view = await save(admin, {
      name: 'All pods',
      view: 'inventory',
      query: 'filter=ci_type:eq:k8s.pod',
      shared: true,
    });
    const [opened] = await list(scoped);
    expect(opened.id).to.equal(view.body.id);
    const names = async (key: string) =>
      (await app.current.get(`/api/v1/configuration-items?${opened.query}`, key)).body.items
        .map((ci: { name: string }) => ci.name)
        .sort();
    expect(await names(admin)).to.deep.equal(['east-1', 'west-1']);
    expect(await names(scoped)).to.deep.equal(['east-1']);
  });
});
