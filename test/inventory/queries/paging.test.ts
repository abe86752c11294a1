import { expect } from 'chai';
import type { Sql } from '../../../src/platform/db/database.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';
import { createKey, startTestApp, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { ingest } from '../../support/factories.js';
import { codepoints, compareJsonb, nodeAt, type Json } from './oracle/model.js';

/**
 * Cursor paging of query answers: walking every page of a sorted query (keys ascending and
 * descending, JSON paths holding every kind of value or nothing) yields the whole answer in its
 * order, each CI once; a cursor belongs to its query, moment, sort and reader.
 */

const T0 = new Date('2026-10-01T00:00:00Z');
const T1 = new Date('2026-10-01T01:00:00Z');

/** Values of a path: every JSON kind, an empty array and an empty object, JSON null and nothing. */
const RANKS: (Json | undefined)[] = [
  3,
  1,
  2.5,
  -1,
  'b',
  'a',
  'B',
  true,
  false,
  null,
  undefined,
  [],
  [1],
  [1, 2],
  [0, 5],
  {},
  { k: 1 },
];
const NAMES = ['a', 'b', 'c', 'B'];
const NAMESPACES = ['x', 'y', null];

function record(i: number): UniversalRecord {
  const rank = RANKS[i % RANKS.length];
  const raw: Record<string, Json> = { spec: i % 3 === 0 ? {} : { size: (i * 7) % 5 } };
  if (rank !== undefined) raw.rank = rank;
  return {
    external_id: `pod/${i}`,
    ci_type: i % 4 === 0 ? 'k8s.node' : 'k8s.pod',
    name: NAMES[i % NAMES.length]!,
    namespace: NAMESPACES[(i >> 1) % NAMESPACES.length]!,
    raw_data: raw,
    relationships: i % 4 === 0 ? [] : [{ type: 'runs_on', target_external_id: `pod/${i - (i % 4)}` }],
  };
}

interface Row {
  ci_id: string;
  name: string;
  namespace: string | null;
  created_at: Date;
  status_updated_at: Date | null;
  raw_data: Json;
}

type Key = { path: string; desc?: boolean };

/** The order the docs give: missing values as the smallest, jsonb's order of the rest, ties by ci_id. */
function ordered(rows: Row[], keys: Key[]): string[] {
  const value = (row: Row, path: string): { json?: Json; text?: string; time?: number } => {
    if (path.startsWith('raw_data.')) return { json: nodeAt(row.raw_data, path.split('.').slice(1)) ?? null };
    if (path === 'created_at') return { time: row.created_at.getTime() };
    if (path === 'status_updated_at') return { time: row.status_updated_at?.getTime() ?? -Infinity };
    return { text: ((row as unknown as Record<string, string | null>)[path] ?? '') as string };
  };
  return [...rows]
    .sort((a, b) => {
      for (const key of keys) {
        const [x, y] = [value(a, key.path), value(b, key.path)];
        const c =
          x.json !== undefined
            ? compareJsonb(x.json, y.json!)
            : x.time !== undefined
              ? Math.sign(x.time - y.time!) || 0
              : codepoints(x.text!, y.text!);
        if (c !== 0) return key.desc ? -c : c;
      }
      return codepoints(a.ci_id, b.ci_id);
    })
    .map((row) => row.ci_id);
}

const sortText = (keys: Key[]) => keys.map((k) => `${k.path}${k.desc ? ' desc' : ''}`).join(', ');

describe('POST /api/v1/query: cursor paging', function () {
  this.timeout(300_000);
  let sql: Sql;
  let app: TestApp;
  let admin: string;
  let rows: Row[];

  const run = (body: Record<string, unknown>, key = admin) => app.request('POST', '/api/v1/query', { key, body });

  /** Every page of a query, `limit` at a time, checking each page on the way. */
  async function walk(body: Record<string, unknown>, limit: number): Promise<string[]> {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 200; pages++) {
      const page = await run({ ...body, limit, ...(cursor ? { cursor } : {}) });
      expect(page.status, page.text).to.equal(200);
      expect(page.body.items.length).to.be.at.most(limit);
      seen.push(...page.body.items.map((item: { ci_id: string }) => item.ci_id));
      cursor = page.body.next_cursor ?? undefined;
      if (!cursor) return seen;
      expect(page.body.items.length, 'a page before the last is full').to.equal(limit);
    }
    throw new Error('the walk did not end');
  }

  before(async () => {
    sql = (await testDatabase()).sql;
    await resetDatabase(sql);
    const records = Array.from({ length: 45 }, (_, i) => record(i));
    await ingest(sql, records.slice(0, 30), { source: 'paging', mode: 'delta', now: T0 });
    await ingest(sql, records.slice(30), { source: 'paging', mode: 'delta', now: T1 });
    rows = await sql<
      Row[]
    >`select ci_id, name, namespace, created_at, status_updated_at, raw_data from configuration_items`;
    app = await startTestApp();
    app.clock.now = new Date('2026-10-01T02:00:00Z');
    admin = await createKey(sql, 'adm');
  });
  after(async () => {
    await app?.close();
  });

  const SORTS: { keys: Key[]; limit: number }[] = [
    { keys: [{ path: 'raw_data.rank' }, { path: 'name', desc: true }], limit: 3 },
    {
      keys: [{ path: 'raw_data.rank', desc: true }, { path: 'namespace' }, { path: 'raw_data.spec.size', desc: true }],
      limit: 4,
    },
    { keys: [{ path: 'namespace', desc: true }, { path: 'name' }, { path: 'created_at', desc: true }], limit: 5 },
    { keys: [{ path: 'raw_data.spec.size', desc: true }], limit: 2 },
    { keys: [{ path: 'raw_data.spec' }, { path: 'raw_data.rank', desc: true }], limit: 7 },
    { keys: [{ path: 'status_updated_at' }, { path: 'name' }], limit: 4 },
  ];

  for (const { keys, limit } of SORTS) {
    it(`walks sort ${sortText(keys)} ${limit} at a time: the whole answer in order, each CI once`, async () => {
      const body = { query: `* | sort ${sortText(keys)}` };
      const whole = await run({ ...body, limit: 1000 });
      expect(whole.status, whole.text).to.equal(200);
      const answer = whole.body.items.map((item: { ci_id: string }) => item.ci_id);
      expect(answer, 'the one-page answer in the documented order').to.deep.equal(ordered(rows, keys));
      const walked = await walk(body, limit);
      expect(new Set(walked).size, 'no CI twice').to.equal(walked.length);
      expect(walked).to.deep.equal(answer);
    });
  }

  it('walks the pages of a path and of a moment the same way', async () => {
    const hop = { query: 'ci_type = k8s.pod -[runs_on]-> * | sort raw_data.rank desc, name' };
    const whole = await run({ ...hop, limit: 1000 });
    expect(whole.body.items.length).to.be.greaterThan(4);
    expect(await walk(hop, 2)).to.deep.equal(whole.body.items.map((i: { ci_id: string }) => i.ci_id));
    const past = { query: '* | sort raw_data.rank, namespace desc', as_of: '2026-10-01T00:30:00Z' };
    const then = await run({ ...past, limit: 1000 });
    expect(then.body.items.length).to.equal(30);
    expect(await walk(past, 4)).to.deep.equal(then.body.items.map((i: { ci_id: string }) => i.ci_id));
  });

  it('refuses a cursor replayed with another query, moment, sort or reader (422)', async () => {
    const body = { query: '* | sort raw_data.rank', limit: 3 };
    const first = await run(body);
    const cursor = first.body.next_cursor as string;
    expect(cursor).to.be.a('string');
    expect((await run({ ...body, cursor })).status).to.equal(200);
    const other = await createKey(sql, 'adm', { name: 'another adm key' });
    for (const [what, reply] of [
      ['another query', await run({ ...body, query: 'name = a | sort raw_data.rank', cursor })],
      ['another sort', await run({ ...body, query: '* | sort raw_data.rank desc', cursor })],
      ['another moment', await run({ ...body, as_of: '2026-10-01T01:30:00Z', cursor })],
      ['another compare_to', await run({ ...body, compare_to: '2026-10-01T00:30:00Z', cursor })],
      ['another reader', await run({ ...body, cursor }, other)],
      ['a tampered cursor', await run({ ...body, cursor: `${cursor.slice(0, -2)}xx` })],
    ] as const) {
      expect(reply.status, `${what}: ${reply.text}`).to.equal(422);
      expect(reply.body.error, what).to.include.keys('code', 'message');
    }
  });
});
