import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { installBootstrapKey, issueApiKey } from '../../../src/platform/auth/api-keys.js';
import { generateApiKey, hashApiKey, parseApiKey } from '../../../src/platform/auth/api-key-format.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, useTestApp } from '../../support/app.js';
import { TEST_SECRET } from '../../support/db.js';
import { buildPod, buildSource, ciIdOf, ingest } from '../../support/factories.js';

const LIST = '/api/v1/configuration-items';

describe('API keys', () => {
  it('have the tier prefix, 30 random base62 characters and a checksum', () => {
    const seen = new Set<string>();
    for (const tier of ['adm', 'svc', 'ro', 'usr'] as const) {
      const key = generateApiKey(tier);
      expect(key).to.match(new RegExp(`^cinv_${tier}_[0-9A-Za-z]{36}$`));
      expect(parseApiKey(key)).to.deep.equal({ tier });
      seen.add(key.slice(-36, -6));
      const last = key.at(-1) === 'a' ? 'b' : 'a';
      expect(parseApiKey(key.slice(0, -1) + last), 'checksum catches a typo').to.equal(undefined);
      expect(parseApiKey(key.replace(`_${tier}_`, tier === 'adm' ? '_svc_' : '_adm_'))).to.equal(undefined);
    }
    expect(seen.size).to.equal(4);
    // 30 characters of a 62-letter alphabet: log2(62) * 30 > 160 bits
    expect(Math.log2(62) * 30).to.be.greaterThan(160);
  });
});

describe('authentication and authorization', () => {
  const app = useTestApp();

  const expect401 = (reply: { status: number; body: any }, reason: RegExp) => {
    expect(reply.status).to.equal(401);
    expect(reply.body.error).to.include({ code: 'HTTP_401', message: 'Authentication required' });
    expect(reply.body.error.details.reason).to.match(reason);
  };

  it('stores only a keyed hash of the key', async () => {
    const { id, key } = await issueApiKey(app.current.sql, TEST_SECRET, {
      tenantId: DEFAULT_TENANT_ID,
      name: 'k',
      tier: 'adm',
    });
    const [row] = await app.current.sql`select * from api_keys where id = ${id}`;
    const stored = JSON.stringify(row, (_k, v) => (v?.type === 'Buffer' ? Buffer.from(v.data).toString('hex') : v));
    expect(stored).to.not.include(key);
    expect(stored).to.not.include(key.slice(9, 30));
    expect(Buffer.compare(row!.key_hash, hashApiKey(TEST_SECRET, key))).to.equal(0);
    expect(row!.key_hint).to.equal(key.slice(-4));
  });

  it('rejects a missing, malformed, unknown, revoked or expired key with 401', async () => {
    expect401(await app.current.get(LIST), /missing/);
    expect401(await app.current.get(LIST, 'not-a-key'), /invalid/);
    expect401(await app.current.get(LIST, generateApiKey('adm')), /invalid/);
    const revoked = await createKey(app.current.sql, 'adm');
    await app.current.sql`update api_keys set revoked_at = now()`;
    expect401(await app.current.get(LIST, revoked), /revoked/);
    const expired = await createKey(app.current.sql, 'ro', { expiresAt: new Date(Date.now() + 60_000) });
    expect((await app.current.get(LIST, expired)).status).to.equal(200);
    app.current.clock.now = new Date(Date.now() + 120_000);
    expect401(await app.current.get(LIST, expired), /expired/);
  });

  it('never accepts a key in the query string', async () => {
    const key = await createKey(app.current.sql, 'adm');
    for (const name of ['api_key', 'apikey', 'key', 'X-API-Key']) {
      expect401(await app.current.get(`${LIST}?${name}=${key}`), /X-API-Key header/);
    }
  });

  it('keeps keys out of log lines', async () => {
    const key = await createKey(app.current.sql, 'adm');
    await app.current.get(LIST, key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a'));
    await app.current.get(`${LIST}?api_key=${key}`);
    expect(app.current.logs.join('\n')).to.not.include(key.slice(9, 30));
  });

  it('lets every tier read, only adm and permitted svc keys delete', async () => {
    await ingest(app.current.sql, [buildPod({ name: 'p1' }), buildPod({ name: 'p2' }), buildPod({ name: 'p3' })]);
    const [a, b, c] = await Promise.all(['p1', 'p2', 'p3'].map((n) => ciIdOf(app.current.sql, `pod/default/${n}`)));
    const adm = await createKey(app.current.sql, 'adm');
    const ro = await createKey(app.current.sql, 'ro');
    const reader = await createKey(app.current.sql, 'svc', {
      permissions: ['configuration_items:read'],
      scopes: [{ sourceId: null, scopeId: null }],
    });
    const deleter = await createKey(app.current.sql, 'svc', {
      permissions: ['configuration_items:read', 'configuration_items:delete'],
      scopes: [{ sourceId: null, scopeId: null }],
    });
    const nothing = await createKey(app.current.sql, 'svc', { scopes: [{ sourceId: null, scopeId: null }] });
    for (const key of [adm, ro, reader, deleter]) expect((await app.current.get(LIST, key)).body.total).to.equal(3);

    const denied = await app.current.request('DELETE', `${LIST}/${a}`, { key: ro });
    expect(denied.status).to.equal(403);
    expect(denied.body.error).to.include({ code: 'HTTP_403', method: 'DELETE' });
    expect(denied.body.error.details).to.deep.equal({ resource: 'configuration_items', action: 'delete' });
    expect((await app.current.request('DELETE', `${LIST}/${a}`, { key: reader })).status).to.equal(403);
    expect((await app.current.get(LIST, nothing)).status).to.equal(403);
    expect((await app.current.request('DELETE', `${LIST}/${a}`, { key: deleter })).status).to.equal(200);
    expect((await app.current.request('DELETE', `${LIST}/${b}`, { key: adm })).status).to.equal(200);
    expect((await app.current.get(`${LIST}/${c}`, ro)).status).to.equal(200);
    const ingestByRo = await app.current.request(
      'POST',
      `/api/v1/sources/${await buildSource(app.current.sql)}/ingest`,
      { key: ro, body: { items: [] } },
    );
    expect(ingestByRo.status).to.equal(403);
  });

  it('shows a data-scoped key only the CIs of its scopes, in list and detail', async () => {
    const { sql } = app.current;
    await ingest(sql, [buildPod({ name: 'a1' })], { source: 'k8s', scopeId: 'cluster-1' });
    await ingest(sql, [buildPod({ name: 'a2' })], { source: 'k8s', scopeId: 'cluster-2' });
    await ingest(sql, [buildPod({ name: 'b1' })], { source: 'prom' });
    const k8s = await buildSource(sql, 'k8s');
    const prom = await buildSource(sql, 'prom');
    const read = ['configuration_items:read', 'configuration_items:delete'] as const;
    const cluster1 = await createKey(sql, 'svc', {
      permissions: [...read],
      scopes: [{ sourceId: k8s, scopeId: 'cluster-1' }],
    });
    const wholeK8s = await createKey(sql, 'svc', {
      permissions: [...read],
      scopes: [{ sourceId: k8s, scopeId: null }],
    });
    const mixed = await createKey(sql, 'svc', {
      permissions: [...read],
      scopes: [
        { sourceId: k8s, scopeId: 'cluster-2' },
        { sourceId: prom, scopeId: null },
      ],
    });
    const unscoped = await createKey(sql, 'svc', { permissions: [...read] });

    const visible = async (key: string) =>
      ((await app.current.get(`${LIST}?sort_by=name&sort_order=asc`, key)).body.items as { name: string }[]).map(
        (i) => i.name,
      );
    expect(await visible(cluster1)).to.deep.equal(['a1']);
    expect(await visible(wholeK8s)).to.deep.equal(['a1', 'a2']);
    expect(await visible(mixed)).to.deep.equal(['a2', 'b1']);
    expect(await visible(unscoped)).to.deep.equal([]);
    expect((await app.current.get(LIST, cluster1)).body.total).to.equal(1);
    expect((await app.current.get(`${LIST}?filter=name:in:a1,a2,b1`, cluster1)).body.total).to.equal(1);

    const a2 = await ciIdOf(sql, 'pod/default/a2');
    const outside = await app.current.get(`${LIST}/${a2}`, cluster1);
    expect(outside.status).to.equal(404);
    expect(outside.body.error.code).to.equal('HTTP_404');
    expect((await app.current.get(`${LIST}/${a2}`, wholeK8s)).status).to.equal(200);
    expect((await app.current.request('DELETE', `${LIST}/${a2}`, { key: cluster1 })).status).to.equal(404);
    expect((await sql`select status from configuration_items where ci_id = ${a2}`)[0]!.status).to.equal('active');
  });

  it('lets a data-scoped key ingest only into the instances it covers', async () => {
    const { sql } = app.current;
    const k8s = await buildSource(sql, 'k8s');
    const prom = await buildSource(sql, 'prom');
    const writer = await createKey(sql, 'svc', {
      permissions: ['configuration_items:write'],
      scopes: [{ sourceId: k8s, scopeId: 'cluster-1' }],
    });
    const body = (scope: string) => ({ scope_id: scope, items: [buildPod({ name: `w-${scope}` })] });
    const ok = await app.current.request('POST', `/api/v1/sources/${k8s}/ingest`, {
      key: writer,
      body: body('cluster-1'),
    });
    expect(ok.status).to.equal(200);
    expect(ok.body).to.include({ received: 1, created: 1 });
    const otherInstance = await app.current.request('POST', `/api/v1/sources/${k8s}/ingest`, {
      key: writer,
      body: body('cluster-2'),
    });
    expect(otherInstance.status).to.equal(403);
    const otherSource = await app.current.request('POST', `/api/v1/sources/${prom}/ingest`, {
      key: writer,
      body: body('x'),
    });
    expect(otherSource.status).to.equal(404);
    expect(await sql`select name from configuration_items`).to.deep.equal([{ name: 'w-cluster-1' }]);
  });

  it("bounds every read by the key's tenant", async () => {
    const { sql } = app.current;
    await ingest(sql, [buildPod({ name: 'default-tenant-pod' })]);
    const ciId = await ciIdOf(sql, 'pod/default/default-tenant-pod');
    const tenantId = randomUUID();
    await sql`insert into tenants (id, slug, name) values (${tenantId}, 'other', 'Other')`;
    const { key } = await issueApiKey(sql, TEST_SECRET, { tenantId, name: 'other admin', tier: 'adm' });
    expect((await app.current.get(LIST, key)).body.total).to.equal(0);
    expect((await app.current.get(`${LIST}/${ciId}`, key)).status).to.equal(404);
    expect((await app.current.request('DELETE', `${LIST}/${ciId}`, { key })).status).to.equal(404);
  });

  it('installs a bootstrap admin key once and refuses a malformed one', async () => {
    const key = generateApiKey('adm');
    expect(await installBootstrapKey(app.current.sql, TEST_SECRET, DEFAULT_TENANT_ID, key)).to.equal(true);
    expect(await installBootstrapKey(app.current.sql, TEST_SECRET, DEFAULT_TENANT_ID, key)).to.equal(false);
    expect((await app.current.get(LIST, key)).status).to.equal(200);
    let failure: Error | undefined;
    try {
      await installBootstrapKey(app.current.sql, TEST_SECRET, DEFAULT_TENANT_ID, generateApiKey('ro'));
    } catch (error) {
      failure = error as Error;
    }
    expect(failure?.message).to.match(/CINV_BOOTSTRAP_ADMIN_KEY/);
  });
});
