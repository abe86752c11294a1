import { expect } from 'chai';
import type { Sql } from '../../../src/platform/db/database.js';
import { asJson } from '../../../src/platform/db/database.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, useTestApp } from '../../support/app.js';
import { buildPod, buildSource, ciIdOf, ingest } from '../../support/factories.js';

interface Page {
  items: {
    id: string;
    ci_id: string;
    changed_at: string;
    change_type: string;
    changes: { field: string; old_value: unknown; new_value: unknown }[];
  }[];
  total: number;
  offset: number;
  limit: number;
  has_more: boolean;
  next_cursor: string | null;
}

const T0 = Date.parse('2026-03-01T00:00:00Z');

/**
 * Writes `count` change records for one CI straight into the table: record i is `emptyEvery`-th
 * empty, and pairs of records share a timestamp down to the microsecond, so the walk has to break
 * ties on the id and keep microseconds in its position.
 */
async function seedHistory(
  sql: Sql,
  ciId: string,
  sourceId: string,
  scopeId: string | null,
  count: number,
  empty: (i: number) => boolean,
) {
  await sql`
    insert into change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields)
    select ${DEFAULT_TENANT_ID}, ${ciId}, ${sourceId}, ${scopeId}, 'web', 'default', 'k8s.pod', 'UPDATED',
           to_timestamp(${T0 / 1000}) + (i / 2) * interval '1 microsecond',
           case when e then '[]'::jsonb else jsonb_build_array(jsonb_build_object('field', 'raw_data.spec.replicas', 'old_value', i, 'new_value', i + 1)) end,
           case when e then '{}'::text[] else array['raw_data.spec.replicas'] end
    from unnest(${sql.array([...Array(count).keys()])}::int[], ${sql.array([...Array(count).keys()].map(empty))}::bool[]) as s(i, e)`;
}

describe('GET /api/v1/ci-changes/{ci_id}', () => {
  const app = useTestApp();
  let admin: string;
  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
  });

  async function walk(path: string, key: string, limit: number, offset = 0): Promise<Page[]> {
    const pages: Page[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `limit=${limit}&offset=${offset}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const reply = await app.current.get<Page>(`${path}?${query}`, key);
      expect(reply.status, reply.text).to.equal(200);
      pages.push(reply.body);
      cursor = reply.body.next_cursor;
      expect(reply.body.has_more).to.equal(cursor !== null);
      expect(pages.length).to.be.below(100);
    } while (cursor);
    return pages;
  }

  it('walks every non-empty record exactly once, newest first, while counting the empty ones', async () => {
    const pod = buildPod({ name: 'web' });
    const { sourceId } = await ingest(app.current.sql, [pod], { now: new Date(T0 - 60_000), scopeId: 'c1' });
    const ciId = await ciIdOf(app.current.sql, pod.external_id);
    // records 4..7 are empty in a row: with limit 3 one page holds no item at all
    await seedHistory(app.current.sql, ciId, sourceId, 'c1', 30, (i) => i % 3 === 0 || (i >= 4 && i <= 7));
    const expected = await app.current.sql<{ id: string }[]>`
      select id::text from change_records where ci_id = ${ciId} and changes <> '[]'::jsonb order by changed_at desc, change_records.id desc`;

    const pages = await walk(`/api/v1/ci-changes/${ciId}`, admin, 3);
    const ids = pages.flatMap((p) => p.items.map((i) => i.id));
    expect(ids).to.deep.equal(expected.map((r) => r.id));
    expect(new Set(ids).size).to.equal(ids.length);
    for (const page of pages) expect(page).to.include({ total: 31, offset: 0, limit: 3 });
    expect(
      pages.some((p) => p.items.length < 3 && p.has_more),
      'a short page before the end',
    ).to.equal(true);
    expect(
      pages.some((p) => p.items.length === 0 && p.has_more),
      'an empty page before the end',
    ).to.equal(true);
    expect(pages.at(-1)!.has_more).to.equal(false);
    const last = pages.at(-1)!.items.at(-1)!;
    expect(last.change_type).to.equal('CREATED');
    expect(last.changes).to.deep.include({ field: 'status', old_value: null, new_value: 'active' });
  });

  it("counts once per walk: cursor pages carry the first page's total instead of counting again", async () => {
    const pod = buildPod({ name: 'web' });
    const { sourceId } = await ingest(app.current.sql, [pod], { now: new Date(T0 - 60_000), scopeId: 'c1' });
    const ciId = await ciIdOf(app.current.sql, pod.external_id);
    await seedHistory(app.current.sql, ciId, sourceId, 'c1', 10, () => false);
    const first = await app.current.get<Page>(`/api/v1/ci-changes/${ciId}?limit=4`, admin);
    expect(first.body.total).to.equal(11);
    // written while the walk goes on: the walk's total stays the one it started with
    await seedHistory(app.current.sql, ciId, sourceId, 'c1', 5, () => false);
    const second = await app.current.get<Page>(
      `/api/v1/ci-changes/${ciId}?limit=4&cursor=${encodeURIComponent(first.body.next_cursor!)}`,
      admin,
    );
    expect(second.body.total).to.equal(11);
    expect((await app.current.get<Page>(`/api/v1/ci-changes/${ciId}?limit=4`, admin)).body.total).to.equal(16);
  });

  it('skips offset records on the first page and echoes the requested offset on cursor pages', async () => {
    const pod = buildPod({ name: 'web' });
    const { sourceId } = await ingest(app.current.sql, [pod], { now: new Date(T0 - 60_000) });
    const ciId = await ciIdOf(app.current.sql, pod.external_id);
    await seedHistory(app.current.sql, ciId, sourceId, null, 12, (i) => i === 9);
    const all = await app.current.sql<{ id: string; empty: boolean }[]>`
      select id::text, changes = '[]'::jsonb as empty from change_records where ci_id = ${ciId} order by changed_at desc, change_records.id desc`;

    const pages = await walk(`/api/v1/ci-changes/${ciId}`, admin, 4, 5);
    for (const page of pages) expect(page.offset).to.equal(5);
    const ids = pages.flatMap((p) => p.items.map((i) => i.id));
    expect(ids).to.deep.equal(
      all
        .slice(5)
        .filter((r) => !r.empty)
        .map((r) => r.id),
    );

    const beyond = await app.current.get<Page>(`/api/v1/ci-changes/${ciId}?offset=500`, admin);
    expect(beyond.body).to.deep.include({ items: [], total: 13, offset: 500, has_more: false, next_cursor: null });
  });

  it('refuses tampered, malformed and foreign cursors with a route 422', async () => {
    const pods = [buildPod({ name: 'a' }), buildPod({ name: 'b' })];
    const { sourceId } = await ingest(app.current.sql, pods, { now: new Date(T0) });
    const [a, b] = [
      await ciIdOf(app.current.sql, pods[0]!.external_id),
      await ciIdOf(app.current.sql, pods[1]!.external_id),
    ];
    await seedHistory(app.current.sql, a, sourceId, null, 6, () => false);
    const first = await app.current.get<Page>(`/api/v1/ci-changes/${a}?limit=2`, admin);
    const cursor = first.body.next_cursor!;
    expect(cursor).to.be.a('string');

    const [body, signature] = cursor.split('.');
    const decoded = JSON.parse(Buffer.from(body!, 'base64url').toString()) as { k: string[] };
    const forged = Buffer.from(JSON.stringify({ ...decoded, k: ['2030-01-01T00:00:00.000000Z', '1'] })).toString(
      'base64url',
    );
    for (const bad of [`${forged}.${signature}`, cursor.slice(0, -3), 'not-a-cursor', `${body}`]) {
      const reply = await app.current.get(`/api/v1/ci-changes/${a}?cursor=${encodeURIComponent(bad)}`, admin);
      expect(reply.status, bad).to.equal(422);
      expect(reply.body.error.code).to.equal('HTTP_422');
    }
    const foreign = await app.current.get(`/api/v1/ci-changes/${b}?cursor=${encodeURIComponent(cursor)}`, admin);
    expect(foreign.status).to.equal(422);
    expect(foreign.body.error).to.include({ code: 'HTTP_422', message: 'Cursor belongs to a different resource' });
  });

  it('keeps history readable after the CI was removed permanently, and 404s an id with neither', async () => {
    const pod = buildPod({ name: 'gone' });
    await ingest(app.current.sql, [pod], { now: new Date(T0) });
    await ingest(app.current.sql, [{ ...pod, raw_data: { ...pod.raw_data, spec: { replicas: 3 } } }], {
      now: new Date(T0 + 60_000),
    });
    const ciId = await ciIdOf(app.current.sql, pod.external_id);
    await app.current.sql`delete from configuration_items where ci_id = ${ciId}`;

    const reply = await app.current.get<Page>(`/api/v1/ci-changes/${ciId}`, admin);
    expect(reply.status).to.equal(200);
    expect(reply.body.items.map((i) => i.change_type)).to.deep.equal(['UPDATED', 'CREATED']);
    const update = reply.body.items[0]!.changes.find((c) => c.field === 'raw_data.spec.containers')!;
    expect(update.old_value).to.deep.equal([{ name: 'app', image: 'nginx:1.25' }]);
    expect(update.new_value).to.equal(null);

    const unknown = await app.current.get('/api/v1/ci-changes/0190a7c4-1111-7222-8333-444455556666', admin);
    expect(unknown.status).to.equal(404);
    expect(unknown.body.error).to.include({
      code: 'HTTP_404',
      path: '/api/v1/ci-changes/0190a7c4-1111-7222-8333-444455556666',
      method: 'GET',
    });
  });

  it('answers an existing CI without history with an empty page', async () => {
    const pod = buildPod({ name: 'quiet' });
    await ingest(app.current.sql, [pod], { now: new Date(T0) });
    const ciId = await ciIdOf(app.current.sql, pod.external_id);
    await app.current.sql`delete from change_records where ci_id = ${ciId}`;
    const reply = await app.current.get<Page>(`/api/v1/ci-changes/${ciId}`, admin);
    expect(reply.status).to.equal(200);
    expect(reply.body).to.deep.equal({
      items: [],
      total: 0,
      offset: 0,
      limit: 100,
      has_more: false,
      next_cursor: null,
    });
  });

  it('validates the id and the page parameters', async () => {
    const bad = await app.current.get('/api/v1/ci-changes/not-a-uuid', admin);
    expect(bad.status).to.equal(422);
    expect(bad.body.error.code).to.equal('VALIDATION_ERROR');
    for (const query of ['limit=5001', 'limit=0', 'offset=-1', 'offset=x']) {
      const reply = await app.current.get(`/api/v1/ci-changes/0190a7c4-1111-7222-8333-444455556666?${query}`, admin);
      expect(reply.status, query).to.equal(422);
      expect(reply.body.error.code).to.equal('VALIDATION_ERROR');
      expect(reply.body.error.details.errors[0].field).to.equal(query.split('=')[0]);
    }
    const max = await app.current.get('/api/v1/ci-changes/0190a7c4-1111-7222-8333-444455556666?limit=5000', admin);
    expect(max.status).to.equal(404);
  });

  describe('data scopes and access', () => {
    it('shows a scoped key the history of its instance only, removed CIs included', async () => {
      const inside = buildPod({ name: 'inside' });
      const outside = buildPod({ name: 'outside' });
      const other = buildPod({ name: 'other-source' });
      const { sourceId } = await ingest(app.current.sql, [inside], { now: new Date(T0), scopeId: 'c1' });
      await ingest(app.current.sql, [outside], { now: new Date(T0), scopeId: 'c2', mode: 'delta' });
      await ingest(app.current.sql, [other], { now: new Date(T0), source: 'k8s-dev', scopeId: 'c1' });
      const ids = await Promise.all([inside, outside, other].map((p) => ciIdOf(app.current.sql, p.external_id)));
      const key = await createKey(app.current.sql, 'svc', {
        permissions: ['changes:read'],
        scopes: [{ sourceId, scopeId: 'c1' }],
      });

      const seen = await app.current.get<Page>(`/api/v1/ci-changes/${ids[0]}`, key);
      expect(seen.status).to.equal(200);
      expect(seen.body.total).to.equal(1);
      for (const hidden of ids.slice(1)) {
        const reply = await app.current.get(`/api/v1/ci-changes/${hidden}`, key);
        expect(reply.status).to.equal(404);
      }
      await app.current.sql`delete from configuration_items where ci_id = any(${ids}::uuid[])`;
      expect((await app.current.get<Page>(`/api/v1/ci-changes/${ids[0]}`, key)).body.total).to.equal(1);
      expect((await app.current.get(`/api/v1/ci-changes/${ids[1]}`, key)).status).to.equal(404);
      expect((await app.current.get<Page>(`/api/v1/ci-changes/${ids[1]}`, admin)).body.total).to.equal(1);
    });

    it('scopes by the source and instance recorded with each change, not the CI as it is now', async () => {
      const pod = buildPod({ name: 'moved' });
      const { sourceId } = await ingest(app.current.sql, [pod], { now: new Date(T0), scopeId: 'c1' });
      const ciId = await ciIdOf(app.current.sql, pod.external_id);
      const otherSource = await buildSource(app.current.sql, 'k8s-dev');
      await app.current.sql`
        insert into change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_type, change_type, changed_at, changes, changed_fields)
        values (${DEFAULT_TENANT_ID}, ${ciId}, ${otherSource}, 'c9', 'moved', 'k8s.pod', 'UPDATED', ${new Date(T0 + 1000)},
                ${app.current.sql.json(asJson([{ field: 'name', old_value: 'a', new_value: 'b' }]))}, array['name'])`;
      const key = await createKey(app.current.sql, 'svc', {
        permissions: ['changes:read'],
        scopes: [{ sourceId, scopeId: 'c1' }],
      });
      const reply = await app.current.get<Page>(`/api/v1/ci-changes/${ciId}`, key);
      expect(reply.body.total).to.equal(1);
      expect(reply.body.items.map((i) => i.change_type)).to.deep.equal(['CREATED']);
    });

    it('needs a key with read on changes', async () => {
      const ciId = '0190a7c4-1111-7222-8333-444455556666';
      const anonymous = await app.current.get(`/api/v1/ci-changes/${ciId}`);
      expect(anonymous.status).to.equal(401);
      expect(anonymous.body.error.code).to.equal('HTTP_401');
      const ciReader = await createKey(app.current.sql, 'svc', { permissions: ['configuration_items:read'] });
      const denied = await app.current.get(`/api/v1/ci-changes/${ciId}`, ciReader);
      expect(denied.status).to.equal(403);
      expect(denied.body.error.code).to.equal('HTTP_403');
    });
  });
});
