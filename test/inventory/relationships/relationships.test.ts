import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { principalForKey } from '../../../src/platform/auth/api-keys.js';
import { encodeCursor } from '../../../src/platform/http/cursor.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, useTestApp, type Reply } from '../../support/app.js';
import { TEST_SECRET } from '../../support/db.js';
import { buildPod, buildSource, ciIdOf, ingest } from '../../support/factories.js';
import { hardDelete, insertRelationship, podName, seedHub, setStatus, type Hub } from './fixtures.js';

interface Item {
  id: string;
  relationship_type: string;
  direction: 'outgoing' | 'incoming';
  related_ci_id: string;
  related_ci_name: string;
  related_ci_type: string;
  related_ci_status: string;
  created_at: string;
  last_seen: string;
}

interface Page {
  items: Item[];
  total: number;
  offset: number;
  limit: number;
  has_more: boolean;
  next_cursor: string | null;
}

type Params = Record<string, string | number | boolean | undefined>;

const pathOf = (ciId: string) => `/api/v1/configuration-items/${ciId}/relationships`;

function url(ciId: string, params: Params = {}): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) search.set(name, String(value));
  const query = search.toString();
  return query ? `${pathOf(ciId)}?${query}` : pathOf(ciId);
}

function expectRoute422(reply: Reply, ciId: string, message: RegExp): void {
  expect(reply.status, reply.text).to.equal(422);
  expect(Object.keys(reply.body)).to.deep.equal(['error']);
  expect(reply.body.error).to.include({ code: 'HTTP_422', path: pathOf(ciId), method: 'GET' });
  expect(reply.body.error.id).to.be.a('string').that.is.not.empty;
  expect(reply.body.error.details).to.be.an('object');
  expect(reply.body.error.message).to.match(message);
}

const rank = (item: Item) => (item.direction === 'outgoing' ? 0 : 1);

/** The order the service promises for a sorted walk: value, then direction, then id. */
function sortedAsc(items: Item[], field: 'relationship_type' | 'related_ci_name' | 'related_ci_type'): Item[] {
  return [...items].sort((a, b) => {
    if (a[field] !== b[field]) return a[field] < b[field] ? -1 : 1;
    if (rank(a) !== rank(b)) return rank(a) - rank(b);
    return Number(BigInt(a.id) - BigInt(b.id));
  });
}

describe('GET /api/v1/configuration-items/{ci_id}/relationships', () => {
  const app = useTestApp();
  let admin: string;
  let seed: Hub;

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
    seed = await seedHub(app.current.sql);
  });

  const get = async (ciId: string, params: Params = {}, key: string = admin): Promise<Reply> =>
    app.current.get(url(ciId, params), key);

  async function ok(ciId: string, params: Params = {}, key: string = admin): Promise<Page> {
    const reply = await get(ciId, params, key);
    expect(reply.status, reply.text).to.equal(200);
    return reply.body;
  }

  /** Follows next_cursor to the end; the end is has_more false with a null cursor (rule 2). */
  async function walk(ciId: string, params: Params, key: string = admin): Promise<{ pages: Page[]; items: Item[] }> {
    const pages: Page[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 100; i++) {
      const page = await ok(ciId, { ...params, cursor }, key);
      pages.push(page);
      expect(page.items.length).to.be.at.most(page.limit);
      if (!page.has_more) {
        expect(page.next_cursor).to.equal(null);
        return { pages, items: pages.flatMap((p) => p.items) };
      }
      expect(page.next_cursor).to.be.a('string');
      cursor = page.next_cursor!;
    }
    throw new Error('walk did not end');
  }

  describe('access', () => {
    it('answers 401 without a key and 403 without relationships:read', async () => {
      const anonymous = await app.current.get(pathOf(seed.hub));
      expect(anonymous.status).to.equal(401);
      expect(anonymous.body.error.code).to.equal('HTTP_401');
      const ciReader = await createKey(app.current.sql, 'svc', {
        permissions: ['configuration_items:read'],
        scopes: [{ sourceId: null, scopeId: null }],
      });
      const denied = await get(seed.hub, {}, ciReader);
      expect(denied.status).to.equal(403);
      expect(denied.body.error.code).to.equal('HTTP_403');
    });

    it('answers 404 HTTP_404 for an unknown CI', async () => {
      const unknown = randomUUID();
      const reply = await get(unknown);
      expect(reply.status).to.equal(404);
      expect(reply.body.error).to.include({ code: 'HTTP_404', path: pathOf(unknown), method: 'GET' });
    });

    it('answers 404 once the CI itself was removed, although rows naming it remain', async () => {
      await hardDelete(app.current.sql, seed.hub);
      expect((await get(seed.hub)).status).to.equal(404);
    });
  });

  describe('listing', () => {
    it('lists both directions with the documented item fields', async () => {
      const page = await ok(seed.hub);
      expect(page).to.include({
        total: seed.live + seed.dangling,
        offset: 0,
        limit: 100,
        has_more: false,
        next_cursor: null,
      });
      expect(page.items).to.have.lengthOf(seed.live);
      const manages = page.items.find((i) => i.relationship_type === 'manages' && i.related_ci_name === podName(1))!;
      expect(manages).to.include({
        direction: 'outgoing',
        related_ci_id: seed.ids[podName(1)],
        related_ci_type: 'k8s.pod',
        related_ci_status: 'active',
      });
      const runsOn = page.items.find((i) => i.relationship_type === 'runs_on' && i.related_ci_name === podName(1))!;
      expect(runsOn).to.include({ direction: 'incoming', related_ci_id: seed.ids[podName(1)] });
      expect(Object.keys(runsOn).sort()).to.deep.equal([
        'created_at',
        'direction',
        'ended_at',
        'id',
        'last_seen',
        'related_ci_id',
        'related_ci_name',
        'related_ci_status',
        'related_ci_type',
        'relationship_type',
      ]);
      expect(new Date(runsOn.created_at).getTime()).to.be.a('number').and.not.NaN;
      expect(new Date(runsOn.last_seen).getTime()).to.be.at.least(new Date(runsOn.created_at).getTime());
    });

    it('lists outgoing before incoming, each by id, when unsorted', async () => {
      const { items } = await ok(seed.hub);
      const directions = items.map((i) => i.direction);
      expect(directions).to.deep.equal([...Array(6).fill('outgoing'), ...Array(7).fill('incoming')]);
      for (const direction of ['outgoing', 'incoming']) {
        const ids = items.filter((i) => i.direction === direction).map((i) => BigInt(i.id));
        expect(ids).to.deep.equal([...ids].sort((a, b) => (a < b ? -1 : 1)));
      }
    });

    it('filters by direction; the dangling rows of that direction still count', async () => {
      const outgoing = await ok(seed.hub, { direction: 'outgoing' });
      expect(outgoing.items.map((i) => i.direction)).to.deep.equal(Array(6).fill('outgoing'));
      expect(outgoing.total).to.equal(6 + 1);
      const incoming = await ok(seed.hub, { direction: 'incoming' });
      expect(incoming.items.map((i) => i.direction)).to.deep.equal(Array(7).fill('incoming'));
      expect(incoming.total).to.equal(7 + 2);
    });

    it('filters by a comma list of relationship types', async () => {
      const page = await ok(seed.hub, { relationship_types: ' manages, hosts ,' });
      expect(page.items.map((i) => `${i.relationship_type} ${i.direction}`).sort()).to.deep.equal([
        ...Array(3).fill('hosts outgoing'),
        'manages incoming',
        'manages outgoing',
        'manages outgoing',
      ]);
      expect(page.total).to.equal(6 + 1);
      const runsOnOut = await ok(seed.hub, { relationship_types: 'runs_on', direction: 'outgoing' });
      expect(runsOnOut.items.map((i) => i.related_ci_name)).to.deep.equal(['svc-01']);
      const combined = await ok(seed.hub, { relationship_types: 'hosts', direction: 'incoming' });
      expect(combined).to.include({ total: 0, has_more: false, next_cursor: null });
      expect(combined.items).to.deep.equal([]);
    });

    it('leaves out inactive and archived neighbours unless include_inactive is true', async () => {
      const { sql } = app.current;
      await setStatus(sql, seed.ids[podName(3)]!, 'archived');
      await setStatus(sql, seed.ids['svc-02']!, 'inactive');
      const current = await ok(seed.hub);
      expect(current.total).to.equal(seed.live - 2 + seed.dangling);
      expect(current.items.map((i) => i.related_ci_name)).to.not.include.members([podName(3), 'svc-02']);

      const everything = await ok(seed.hub, { include_inactive: true });
      expect(everything.total).to.equal(seed.live + seed.dangling);
      const statuses = Object.fromEntries(
        everything.items.map((i) => [i.related_ci_name + i.direction, i.related_ci_status]),
      );
      expect(statuses).to.include({
        [`${podName(3)}incoming`]: 'archived',
        'svc-02outgoing': 'inactive',
        [`${podName(4)}incoming`]: 'active',
      });
    });

    it('lists a relationship of a CI to itself once, as outgoing', async () => {
      await insertRelationship(app.current.sql, seed.hub, seed.hub, 'watches');
      const page = await ok(seed.hub, { relationship_types: 'watches' });
      expect(page.total).to.equal(1);
      expect(page.items.map((i) => [i.direction, i.related_ci_id])).to.deep.equal([['outgoing', seed.hub]]);
      expect((await ok(seed.hub, { relationship_types: 'watches', direction: 'incoming' })).total).to.equal(0);
    });
  });

  describe('parameter errors', () => {
    it('answers a route 422 for an invalid direction, sort_by, or sort_order without sort_by', async () => {
      expectRoute422(await get(seed.hub, { direction: 'sideways' }), seed.hub, /direction/);
      expectRoute422(await get(seed.hub, { direction: 'both' }), seed.hub, /direction/);
      expectRoute422(await get(seed.hub, { sort_by: 'created_at' }), seed.hub, /sort_by/);
      expectRoute422(await get(seed.hub, { sort_order: 'asc' }), seed.hub, /sort_order requires sort_by/);
      expectRoute422(await get(seed.hub, { sort_order: 'desc', limit: 5 }), seed.hub, /sort_order requires sort_by/);
    });

    it('answers VALIDATION_ERROR for an over-limit limit and a non-integer offset', async () => {
      for (const [params, field] of [
        [{ limit: 5001 }, 'limit'],
        [{ limit: 0 }, 'limit'],
        [{ offset: 1.5 }, 'offset'],
        [{ offset: 'x' }, 'offset'],
        [{ include_inactive: 'maybe' }, 'include_inactive'],
      ] as const) {
        const reply = await get(seed.hub, params);
        expect(reply.status, JSON.stringify(params)).to.equal(422);
        expect(reply.body.error.code).to.equal('VALIDATION_ERROR');
        expect(reply.body.error.details.errors.map((e: { field: string }) => e.field)).to.include(field);
      }
      expect((await get(seed.hub, { limit: 5000 })).status).to.equal(200);
    });
  });

  describe('rule 1: total counts rows whose neighbour no longer exists', () => {
    it('counts dangling rows in total but never lists them; a drained walk holds fewer items than total', async () => {
      const { items, pages } = await walk(seed.hub, { limit: 4 });
      expect(pages.every((p) => p.total === seed.live + seed.dangling)).to.equal(true);
      expect(items).to.have.lengthOf(seed.live);
      expect(new Set(items.map((i) => i.id)).size).to.equal(seed.live);
      expect(items.map((i) => i.related_ci_id)).to.not.include(seed.ids['pod-gone']);
    });

    it('returns an empty page with has_more true when a whole page is dangling', async () => {
      const { sql } = app.current;
      const sourceId = await buildSource(sql);
      await ingest(sql, [buildPod({ name: 'lonely' })], { scopeId: 'cluster-a' });
      const lonely = await ciIdOf(sql, 'pod/default/lonely');
      await insertRelationship(sql, lonely, randomUUID(), 'depends_on', sourceId);
      await insertRelationship(sql, lonely, randomUUID(), 'depends_on', sourceId);
      await insertRelationship(sql, lonely, seed.ids['svc-01']!, 'depends_on', sourceId);
      await insertRelationship(sql, lonely, seed.ids['svc-02']!, 'depends_on', sourceId);

      const first = await ok(lonely, { limit: 2 });
      expect(first).to.include({ total: 4, has_more: true, offset: 0, limit: 2 });
      expect(first.items).to.deep.equal([]);
      expect(first.next_cursor).to.be.a('string');
      const second = await ok(lonely, { limit: 2, cursor: first.next_cursor! });
      expect(second).to.include({ total: 4, has_more: false, next_cursor: null });
      expect(second.items.map((i) => i.related_ci_name)).to.deep.equal(['svc-01', 'svc-02']);
    });

    it('counts a neighbour removed for good after it was listed', async () => {
      const before = await ok(seed.hub);
      await hardDelete(app.current.sql, seed.ids['svc-02']!);
      const after = await ok(seed.hub);
      expect(after.total).to.equal(before.total);
      expect(after.items).to.have.lengthOf(before.items.length - 1);
      expect(after.items.map((i) => i.related_ci_name)).to.not.include('svc-02');
    });
  });

  describe('rules 2 and 3: cursor walks', () => {
    it('continues from an offset by keyset, echoing the requested offset on every page', async () => {
      const all = (await ok(seed.hub)).items;
      const { pages, items } = await walk(seed.hub, { offset: 3, limit: 3 });
      expect(pages.length).to.be.greaterThan(2);
      expect(pages.map((p) => p.offset)).to.deep.equal(pages.map(() => 3));
      expect(items.map((i) => i.id)).to.deep.equal(all.slice(3).map((i) => i.id));
    });

    it('does not apply the offset again on cursor pages', async () => {
      const all = (await ok(seed.hub)).items;
      const first = await ok(seed.hub, { offset: 2, limit: 2 });
      expect(first.items.map((i) => i.id)).to.deep.equal(all.slice(2, 4).map((i) => i.id));
      const withOffset = await ok(seed.hub, { offset: 2, limit: 2, cursor: first.next_cursor! });
      const withoutOffset = await ok(seed.hub, { limit: 2, cursor: first.next_cursor! });
      expect(withOffset.offset).to.equal(2);
      expect(withoutOffset.offset).to.equal(0);
      expect(withOffset.items.map((i) => i.id)).to.deep.equal(withoutOffset.items.map((i) => i.id));
      expect(withOffset.items.map((i) => i.id)).to.deep.equal(
        all.slice(4, 4 + withOffset.items.length).map((i) => i.id),
      );
    });

    it('ends with has_more false and a null cursor exactly when the rows run out', async () => {
      const exact = await ok(seed.hub, { limit: seed.live + seed.dangling });
      expect(exact).to.include({ has_more: false, next_cursor: null });
      const short = await ok(seed.hub, { limit: seed.live + seed.dangling - 1 });
      expect(short.has_more).to.equal(true);
      const rest = await ok(seed.hub, { limit: seed.live + seed.dangling - 1, cursor: short.next_cursor! });
      expect(rest).to.include({ has_more: false, next_cursor: null });
    });
  });

  describe('sorting across both directions', () => {
    for (const field of ['relationship_type', 'related_ci_name', 'related_ci_type'] as const) {
      for (const order of ['asc', 'desc'] as const) {
        it(`walks sort_by=${field} ${order} over many pages, every live relationship exactly once and in order`, async () => {
          const all = (await ok(seed.hub)).items;
          const expected = sortedAsc(all, field);
          if (order === 'desc') expected.reverse();
          const { pages, items } = await walk(seed.hub, { sort_by: field, sort_order: order, limit: 2 });
          expect(pages).to.have.lengthOf(Math.ceil((seed.live + seed.dangling) / 2));
          expect(pages.every((p) => p.total === seed.live + seed.dangling && p.offset === 0)).to.equal(true);
          expect(items.map((i) => i.id)).to.deep.equal(expected.map((i) => i.id));
          const switches = items.filter((item, i) => i > 0 && item.direction !== items[i - 1]!.direction).length;
          expect(switches, 'directions interleave').to.be.at.least(2);
        });
      }
    }

    it('puts vanished neighbours first when sorting by name ascending: an empty first page with has_more', async () => {
      const first = await ok(seed.hub, { sort_by: 'related_ci_name', limit: seed.dangling });
      expect(first).to.include({ has_more: true, total: seed.live + seed.dangling });
      expect(first.items).to.deep.equal([]);
      const next = await ok(seed.hub, {
        sort_by: 'related_ci_name',
        sort_order: 'asc',
        limit: 2,
        cursor: first.next_cursor!,
      });
      expect(next.items.map((i) => [i.related_ci_name, i.direction])).to.deep.equal([
        [podName(1), 'outgoing'],
        [podName(1), 'incoming'],
      ]);
    });

    it('combines sorting with the direction and type filters', async () => {
      const { items } = await walk(seed.hub, {
        sort_by: 'related_ci_name',
        sort_order: 'desc',
        direction: 'outgoing',
        limit: 2,
      });
      expect(items.map((i) => i.related_ci_name)).to.deep.equal([
        'svc-03',
        'svc-02',
        'svc-01',
        'svc-01',
        podName(2),
        podName(1),
      ]);
      const typed = await walk(seed.hub, {
        sort_by: 'related_ci_type',
        relationship_types: 'manages,runs_on',
        limit: 3,
      });
      expect(typed.items.map((i) => i.related_ci_type)).to.deep.equal([
        ...Array(8).fill('k8s.pod'),
        'k8s.service',
        'k8s.service',
      ]);
      expect(typed.pages[0]!.total).to.equal(10 + 2);
    });

    it('answers 422 for sort_by with an offset above 0 (rule 4)', async () => {
      expectRoute422(await get(seed.hub, { sort_by: 'related_ci_name', offset: 1 }), seed.hub, /offset/);
      expect((await get(seed.hub, { sort_by: 'related_ci_name', offset: 0 })).status).to.equal(200);
    });
  });

  describe('rule 5: a cursor is valid only for the parameters that produced it', () => {
    const cursorFor = async (ciId: string, params: Params) => {
      const page = await ok(ciId, { ...params, limit: 2 });
      expect(page.next_cursor).to.be.a('string');
      return page.next_cursor!;
    };

    it('refuses a sorted cursor replayed with a different or missing sort_by or sort_order', async () => {
      const cursor = await cursorFor(seed.hub, { sort_by: 'related_ci_name', sort_order: 'desc' });
      const replay = (params: Params) => get(seed.hub, { ...params, limit: 2, cursor });
      expectRoute422(await replay({ sort_by: 'related_ci_type', sort_order: 'desc' }), seed.hub, /sort/);
      expectRoute422(await replay({ sort_by: 'related_ci_name', sort_order: 'asc' }), seed.hub, /sort/);
      expectRoute422(await replay({ sort_by: 'related_ci_name' }), seed.hub, /sort/);
      expectRoute422(await replay({}), seed.hub, /sort/);
      expect((await replay({ sort_by: 'related_ci_name', sort_order: 'desc' })).status).to.equal(200);
    });

    it('accepts an ascending cursor replayed without sort_order, since asc is the default', async () => {
      const cursor = await cursorFor(seed.hub, { sort_by: 'relationship_type', sort_order: 'asc' });
      expect((await get(seed.hub, { sort_by: 'relationship_type', limit: 2, cursor })).status).to.equal(200);
    });

    it('refuses an unsorted cursor replayed with sort_by', async () => {
      const cursor = await cursorFor(seed.hub, {});
      expectRoute422(await get(seed.hub, { sort_by: 'relationship_type', cursor }), seed.hub, /sort/);
      expectRoute422(
        await get(seed.hub, { sort_by: 'relationship_type', sort_order: 'desc', cursor }),
        seed.hub,
        /sort/,
      );
    });

    it('refuses a cursor replayed with a different direction, relationship_types or include_inactive', async () => {
      const cursor = await cursorFor(seed.hub, { direction: 'incoming', relationship_types: 'runs_on' });
      const replay = (params: Params) => get(seed.hub, { ...params, limit: 2, cursor });
      expectRoute422(await replay({ relationship_types: 'runs_on' }), seed.hub, /filter/);
      expectRoute422(await replay({ direction: 'outgoing', relationship_types: 'runs_on' }), seed.hub, /filter/);
      expectRoute422(await replay({ direction: 'incoming' }), seed.hub, /filter/);
      expectRoute422(await replay({ direction: 'incoming', relationship_types: 'runs_on,hosts' }), seed.hub, /filter/);
      expectRoute422(
        await replay({ direction: 'incoming', relationship_types: 'runs_on', include_inactive: true }),
        seed.hub,
        /filter/,
      );
      expect((await replay({ direction: 'incoming', relationship_types: ' runs_on' })).status).to.equal(200);
    });

    it('refuses tampered, truncated, malformed and foreign cursors', async () => {
      const cursor = await cursorFor(seed.hub, {});
      const [body, signature] = cursor.split('.') as [string, string];
      const decoded = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
      const moved = Buffer.from(JSON.stringify({ ...decoded, k: [0, '1'] })).toString('base64url');
      const flipped = signature.slice(0, -2) + (signature.endsWith('AA') ? 'BB' : 'AA');
      const reader = (await principalForKey(app.current.sql, TEST_SECRET, admin, new Date()))!;
      const foreignBinding = {
        tenantId: DEFAULT_TENANT_ID,
        reader,
        scope: `relationships:${seed.hub}`,
        sort: null,
        filters: { direction: null, relationship_types: null, include_inactive: false },
      };
      const otherSecret = encodeCursor('another-secret-another-secret-0000000000', foreignBinding, [0, '1']);
      const attempts: [string, RegExp][] = [
        [`${moved}.${signature}`, /altered/],
        [`${body}.${flipped}`, /altered/],
        [cursor.slice(0, -4), /altered|Malformed/],
        [body, /Malformed/],
        [`${cursor}.x`, /Malformed/],
        ['not-a-cursor', /Malformed/],
        [otherSecret, /altered/],
        // correctly signed, but not a position this walk can continue from
        [encodeCursor(TEST_SECRET, foreignBinding, ['x', 0, '1']), /Malformed/],
        [encodeCursor(TEST_SECRET, foreignBinding, [2, '1']), /Malformed/],
        [encodeCursor(TEST_SECRET, foreignBinding, [0, '1; drop table relationships']), /Malformed/],
      ];
      for (const [tampered, message] of attempts)
        expectRoute422(await get(seed.hub, { limit: 2, cursor: tampered }), seed.hub, message);
      // a genuine cursor of another CI's walk
      const podPage = await ok(seed.ids[podName(1)]!, { limit: 1 });
      expectRoute422(await get(seed.hub, { limit: 1, cursor: podPage.next_cursor! }), seed.hub, /different resource/);
    });
  });

  it("counts once per walk: cursor pages carry the first page's total instead of counting again", async () => {
    const first = await ok(seed.hub, { limit: 5 });
    expect(first.total).to.equal(seed.live + seed.dangling);
    await insertRelationship(app.current.sql, seed.hub, seed.ids['svc-02']!, 'watches', seed.sourceId, {
      from: 'cluster-a',
      to: 'cluster-a',
    });
    const second = await ok(seed.hub, { limit: 5, cursor: first.next_cursor! });
    expect(second.total).to.equal(first.total);
    expect((await ok(seed.hub, { limit: 5 })).total).to.equal(first.total + 1);
  });

  describe('data scopes', () => {
    let outside: { bPod: string; prom: string };

    beforeEach(async () => {
      const { sql } = app.current;
      // cluster-b pods of the same source run on the hub in cluster-a
      const bPods = [1, 2].map((n) =>
        buildPod({ name: `b-pod-${n}`, relationships: [{ type: 'runs_on', target_external_id: 'node/hub' }] }),
      );
      await ingest(sql, bPods, { scopeId: 'cluster-b' });
      const promSource = await buildSource(sql, 'prom', 'prometheus');
      await ingest(sql, [buildPod({ name: 'target-1', external_id: 'target/1', ci_type: 'prometheus.target' })], {
        source: 'prom',
      });
      const prom = await ciIdOf(sql, 'target/1');
      await insertRelationship(sql, prom, seed.hub, 'scrapes', promSource);
      // a cluster-b pod that ran on the hub, removed for good since: its row stays, dangling
      await ingest(
        sql,
        [buildPod({ name: 'b-gone', relationships: [{ type: 'runs_on', target_external_id: 'node/hub' }] })],
        { scopeId: 'cluster-b' },
      );
      await hardDelete(sql, await ciIdOf(sql, 'pod/default/b-gone'));
      outside = { bPod: await ciIdOf(sql, 'pod/default/b-pod-1'), prom };
    });

    const scopedKey = (scopes: { sourceId: string; scopeId: string | null }[]) =>
      createKey(app.current.sql, 'svc', { permissions: ['relationships:read'], scopes });

    it('shows an unrestricted key the neighbours of every scope', async () => {
      const page = await ok(seed.hub);
      expect(page.total).to.equal(seed.live + seed.dangling + 3 + 1);
      expect(page.items.map((i) => i.related_ci_name)).to.include.members(['b-pod-1', 'b-pod-2', 'target-1']);
    });

    it("never lists or counts neighbours outside a scoped key's instance, in any mode", async () => {
      const key = await scopedKey([{ sourceId: seed.sourceId, scopeId: 'cluster-a' }]);
      const hidden = new Set(['b-pod-1', 'b-pod-2', 'target-1']);
      for (const params of [
        {},
        { include_inactive: true },
        { direction: 'incoming' },
        { relationship_types: 'runs_on,scrapes' },
      ] as Params[]) {
        const page = await ok(seed.hub, params, key);
        const unrestricted = await ok(seed.hub, params);
        expect(
          page.items.some((i) => hidden.has(i.related_ci_name)),
          JSON.stringify(params),
        ).to.equal(false);
        const hiddenCount = unrestricted.items.filter((i) => hidden.has(i.related_ci_name)).length;
        expect(hiddenCount).to.be.greaterThan(0);
        // the vanished cluster-b pod is counted for the unrestricted key only (it is never listed)
        const vanishedOutside = params.direction === 'outgoing' || params.relationship_types === 'scrapes' ? 0 : 1;
        expect(page.total, JSON.stringify(params)).to.equal(unrestricted.total - hiddenCount - vanishedOutside);
      }
      for (const sort_by of ['related_ci_name', 'relationship_type', 'related_ci_type']) {
        const { items, pages } = await walk(seed.hub, { sort_by, limit: 3 }, key);
        expect(items).to.have.lengthOf(seed.live);
        expect(pages[0]!.total).to.equal(seed.live + seed.dangling);
        expect(items.some((i) => hidden.has(i.related_ci_name))).to.equal(false);
      }
    });

    it("answers 404 for a CI outside the key's scopes, whether another instance or another source", async () => {
      const clusterB = await scopedKey([{ sourceId: seed.sourceId, scopeId: 'cluster-b' }]);
      const prom = await scopedKey([
        { sourceId: await buildSource(app.current.sql, 'prom', 'prometheus'), scopeId: null },
      ]);
      const nothing = await createKey(app.current.sql, 'svc', { permissions: ['relationships:read'] });
      for (const key of [clusterB, prom, nothing]) {
        const reply = await get(seed.hub, {}, key);
        expect(reply.status).to.equal(404);
        expect(reply.body.error.code).to.equal('HTTP_404');
      }
      // from the cluster-b side the hub is invisible: the pod's one relationship is neither listed nor counted
      const fromB = await ok(outside.bPod, { include_inactive: true }, clusterB);
      expect(fromB).to.include({ total: 0, has_more: false, next_cursor: null });
      expect(fromB.items).to.deep.equal([]);
      const fromProm = await ok(outside.prom, {}, prom);
      expect(fromProm.total).to.equal(0);
    });

    it("refuses another principal's cursor (422), so a scoped key never gets an unrestricted walk's page or total", async () => {
      const key = await scopedKey([{ sourceId: seed.sourceId, scopeId: 'cluster-a' }]);
      const unrestricted = await ok(seed.hub, { limit: 2 });
      const own = await ok(seed.hub, { limit: 2 }, key);
      expect(own.total).to.be.lessThan(unrestricted.total);
      const replayed = await get(seed.hub, { limit: 2, cursor: unrestricted.next_cursor! }, key);
      expectRoute422(replayed, seed.hub, /^Invalid cursor: it was issued to another principal/);
      expect(replayed.body.error.details.reason).to.equal('foreign_cursor');
      expect(replayed.text).to.not.include(`"total":${unrestricted.total}`);
      // and the other way round, and between two keys of the same rights
      expectRoute422(await get(seed.hub, { limit: 2, cursor: own.next_cursor! }), seed.hub, /another principal/);
      const twin = await scopedKey([{ sourceId: seed.sourceId, scopeId: 'cluster-a' }]);
      expectRoute422(await get(seed.hub, { limit: 2, cursor: own.next_cursor! }, twin), seed.hub, /another principal/);
      // its own cursor walks on, with its own total
      expect((await ok(seed.hub, { limit: 2, cursor: own.next_cursor! }, key)).total).to.equal(own.total);
    });

    it('lets a key scoped to the whole source see both instances', async () => {
      const key = await scopedKey([{ sourceId: seed.sourceId, scopeId: null }]);
      const page = await ok(seed.hub, {}, key);
      // both cluster-b pods, and the vanished one of cluster-b, which this key may count
      expect(page.total).to.equal(seed.live + seed.dangling + 2 + 1);
      expect(page.items.map((i) => i.related_ci_name))
        .to.include.members(['b-pod-1', 'b-pod-2'])
        .and.not.include('target-1');
    });
  });
});
