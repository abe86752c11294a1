import { expect } from 'chai';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { onRealPostgres, resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, ingest } from '../../support/factories.js';

const PODS = 1_100;
const name = (i: number) => `p-${String(i).padStart(4, '0')}`;
const CIS = '/api/v1/configuration-items';

interface Page {
  items: { name: string; scope_id: string }[];
  total: number;
  total_exact: boolean;
  has_more: boolean;
  next_cursor: string | null;
}

/**
 * A first page filtered on a raw_data path reads the ids of up to 1 000 matches in the list's
 * order, takes its total from their number when they are all, and reads the page by id. Its
 * pages and totals must be those of the list read the usual way (a page of 1 000, which does not
 * take that path), on either side of the 1 000.
 */
describe(`pages of a raw_data filter, with few matches and with many (${onRealPostgres ? 'PostgreSQL server' : 'embedded database'})`, function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: string;
  let eastOnly: string;

  const page = async (query: string, key = admin): Promise<Page> => {
    const reply = await app.request('GET', `${CIS}?${query}`, { key });
    expect(reply.status, `${query}: ${reply.text}`).to.equal(200);
    return reply.body as Page;
  };
  const names = (p: Page) => p.items.map((item) => item.name);

  before(async () => {
    const { sql } = await testDatabase();
    await resetDatabase(sql);
    app = await startTestApp();
    const pod = (i: number) =>
      buildPod({
        name: name(i),
        namespace: `ns-${i % 3}`,
        external_id: `pod/${name(i)}`,
        raw_data: { kind: 'Pod', metadata: { name: name(i) }, spec: { nodeName: i < 600 ? 'node-a' : 'node-b' } },
      });
    const all = Array.from({ length: PODS }, (_, i) => pod(i));
    // two instances of one source, created at two moments: east holds the even pods
    await ingest(
      sql,
      all.filter((_, i) => i % 2 === 0),
      { scopeId: 'east', now: new Date('2026-03-01T00:00:00Z') },
    );
    await ingest(
      sql,
      all.filter((_, i) => i % 2 === 1),
      { scopeId: 'west', now: new Date('2026-03-01T00:01:00Z') },
    );
    admin = await createKey(sql, 'adm');
    const [source] = await sql<{ id: string }[]>`select id::text from sources where name = 'k8s-prod'`;
    eastOnly = await createKey(sql, 'ro', { scopes: [{ sourceId: source!.id, scopeId: 'east' }] });
  });

  after(async () => {
    await app?.close();
  });

  for (const [label, filter, matches] of [
    ['fewer matches than 1 000', 'raw_data.spec.nodeName:eq:node-a', 600],
    ['more matches than 1 000', 'raw_data.kind:eq:Pod', PODS],
  ] as const) {
    for (const sort of ['', '&sort_by=name&sort_order=asc', '&sort_by=namespace&sort_order=desc']) {
      it(`${label}, ${sort ? sort.slice(1) : 'default order'}: pages, totals and cursors as the list read whole`, async () => {
        const whole = names(await page(`filter=${filter}${sort}&limit=1000`));
        expect(whole).to.have.length(Math.min(matches, 1000));
        const first = await page(`filter=${filter}${sort}&limit=50`);
        expect(names(first)).to.deep.equal(whole.slice(0, 50));
        expect([first.total, first.total_exact, first.has_more]).to.deep.equal([matches, true, true]);
        const deeper = await page(`filter=${filter}${sort}&limit=50&offset=120`);
        expect(names(deeper)).to.deep.equal(whole.slice(120, 170));
        expect(deeper.total).to.equal(matches);
        const second = await page(`filter=${filter}${sort}&limit=50&cursor=${encodeURIComponent(first.next_cursor!)}`);
        expect(names(second)).to.deep.equal(whole.slice(50, 100));
        expect(second.total).to.equal(matches);
      });
    }
  }

  it('names the pods in order by name, the last page short, past the end empty', async () => {
    const p = await page('filter=raw_data.spec.nodeName:eq:node-a&sort_by=name&sort_order=asc&limit=50&offset=580');
    expect(names(p)).to.deep.equal(Array.from({ length: 20 }, (_, i) => name(580 + i)));
    expect([p.total, p.has_more, p.next_cursor]).to.deep.equal([600, false, null]);
    const beyond = await page('filter=raw_data.spec.nodeName:eq:node-a&limit=50&offset=900');
    expect([beyond.items.length, beyond.total, beyond.has_more]).to.deep.equal([0, 600, false]);
  });

  it("counts and shows only the rows inside a scoped key's instance", async () => {
    const p = await page('filter=raw_data.spec.nodeName:eq:node-a&sort_by=name&sort_order=asc&limit=50', eastOnly);
    expect(p.total).to.equal(300);
    expect(names(p)).to.deep.equal(Array.from({ length: 50 }, (_, i) => name(2 * i)));
    expect(p.items.every((item) => item.scope_id === 'east')).to.equal(true);
  });

  it('combines a raw_data filter with a column filter and a status', async () => {
    const p = await page(
      'filter=raw_data.spec.nodeName:eq:node-b&filter=namespace:eq:ns-1&status=active&sort_by=name&sort_order=asc&limit=50',
    );
    const expected = Array.from({ length: PODS }, (_, i) => i).filter((i) => i >= 600 && i % 3 === 1);
    expect(p.total).to.equal(expected.length);
    expect(names(p)).to.deep.equal(expected.slice(0, 50).map(name));
    const archived = await page('filter=raw_data.spec.nodeName:eq:node-b&status=archived');
    expect([archived.total, archived.items.length]).to.deep.equal([0, 0]);
  });
});
