import { expect } from 'chai';
import fc from 'fast-check';
import type { Sql } from '../../../src/platform/db/database.js';
import { createKey, startTestApp, type Reply, type TestApp } from '../../support/app.js';
import { resetDatabase, testDatabase } from '../../support/db.js';
import { ingest } from '../../support/factories.js';
import { queryArb } from './oracle/generate.js';
import { expectConsistent } from './oracle/positions.js';
import { renderQuery } from './oracle/query.js';

/**
 * The query endpoint against texts that are mostly wrong: valid queries from the generator with
 * characters inserted, deleted, replaced and repeated, random unicode, inputs up to the 10 000
 * characters a query may hold, deep nesting. No answer is a 5xx; a 422 INVALID_QUERY names a line,
 * a column that agrees with its offset, and an excerpt with a caret under it.
 */

const SEED = Number(process.env.CINV_QUERY_FUZZ_SEED ?? 20261002);
const RUNS = Number(process.env.CINV_QUERY_FUZZ_RUNS ?? 600);
const MAX_QUERY = 10_000;

/** Pieces the grammar gives a meaning to, and characters it has none for. */
const PIECES = [
  '(',
  ')',
  '[',
  ']',
  '-',
  '>',
  '<',
  '|',
  ',',
  '"',
  '\\',
  '=',
  '!=',
  '~',
  '.',
  '*',
  '$',
  ' ',
  '\n',
  '\t',
  '\r\n',
  'and',
  'or',
  'not ',
  'in',
  '..',
  '-[',
  ']->',
  '<-[',
  ']-',
  'since',
  'until',
  'type',
  'now-1h',
  '1e999',
  '-0',
  '2026-13-45',
  'count by',
  'sort',
  'limit 0',
  'matches "("',
  'raw_data.',
  '."a b"',
  '\u0000',
  '\u2028',
  '\ufeff',
  '\u202e',
  'e\u0301',
  '🙂',
  '\ud800',
  'ß',
  'İ',
  '\u{10ffff}',
];

const pieceArb = fc.oneof(
  { arbitrary: fc.constantFrom(...PIECES), weight: 4 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 4 }), weight: 1 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 4 }), weight: 1 },
);

type Mutation = { kind: 'insert' | 'delete' | 'replace' | 'repeat'; at: number; size: number; piece: string };

const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constantFrom('insert' as const, 'delete' as const, 'replace' as const, 'repeat' as const),
  at: fc.nat(),
  size: fc.integer({ min: 1, max: 6 }),
  piece: pieceArb,
});

function mutate(text: string, mutations: readonly Mutation[]): string {
  let out = text;
  for (const m of mutations) {
    const at = out.length === 0 ? 0 : m.at % (out.length + 1);
    if (m.kind === 'insert') out = out.slice(0, at) + m.piece + out.slice(at);
    else if (m.kind === 'delete') out = out.slice(0, at) + out.slice(at + m.size);
    else if (m.kind === 'replace') out = out.slice(0, at) + m.piece + out.slice(at + m.size);
    else out = out.slice(0, at) + out.slice(at, at + m.size).repeat(2 + m.size * 40) + out.slice(at + m.size);
  }
  return out.slice(0, MAX_QUERY);
}

/** Half a surrogate pair replaced, as a UTF-8 encoder does. */
const wellFormed = (text: string) =>
  text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');

const REFERENCES = { ci: () => '01900000-0000-7000-8000-000000000001', source: () => '1' };

/** What any reply to a text must be: no 5xx, and a 4xx in the error envelope, a query error with its position. */
function checkReply(text: string, reply: Reply): void {
  const shown = JSON.stringify(text.length > 300 ? `${text.slice(0, 300)}…` : text);
  expect(reply.status, `${shown}: ${reply.text.slice(0, 500)}`).to.be.below(500);
  if (reply.status < 400) return;
  const error = reply.body?.error;
  expect(error, `${shown}: the error envelope`).to.include.keys('id', 'code', 'message', 'details');
  if (reply.status !== 422) {
    // text PostgreSQL cannot hold (a NUL), or a number beyond its types: refused before running
    expect(reply.status, `${shown}: ${reply.text}`).to.equal(400);
    return;
  }
  // the request itself is refused (an empty query, a NUL in a link): the fields in error, not a position
  if (error.code === 'VALIDATION_ERROR') expect(error.details.errors, shown).to.be.an('array').that.is.not.empty;
  else if (error.code === 'INVALID_QUERY') {
    expect(error.details, shown).to.include.keys('line', 'column', 'offset', 'excerpt', 'message');
    expectConsistent(text, error.details);
  } else expect(error.details.reason, `${shown}: ${reply.text}`).to.equal('timeout');
}

describe('POST /api/v1/query: fuzzed and mutated texts', function () {
  this.timeout(600_000);
  let sql: Sql;
  let app: TestApp;
  let key: string;

  const send = (query: string, via: 'POST' | 'GET' = 'POST') =>
    via === 'POST'
      ? app.request('POST', '/api/v1/query', { key, body: { query } })
      : app.request('GET', `/api/v1/query?q=${encodeURIComponent(query)}`, { key });

  before(async () => {
    sql = (await testDatabase()).sql;
    await resetDatabase(sql);
    const at = new Date('2026-10-01T00:00:00Z');
    const records = ['web', 'api', 'db'].map((name, i) => ({
      external_id: `pod/${name}`,
      ci_type: 'k8s.pod',
      name,
      namespace: 'shop',
      raw_data: { spec: { replicas: i, image: `app:${i}` }, status: { ready: i > 0 } },
      relationships: [{ type: 'runs_on', target_external_id: 'node/n1' }],
    }));
    const node = { external_id: 'node/n1', ci_type: 'k8s.node', name: 'n1', namespace: null, raw_data: {} };
    await ingest(sql, [...records, node], { source: 'fuzz', now: at });
    await ingest(sql, [{ ...records[0]!, raw_data: { spec: { replicas: 5 } } }, node], {
      source: 'fuzz',
      mode: 'delta',
      now: new Date('2026-10-01T01:00:00Z'),
    });
    app = await startTestApp();
    app.clock.now = new Date('2026-10-01T02:00:00Z');
    key = await createKey(sql, 'adm');
  });
  after(async () => {
    await app?.close();
  });

  it(`answers no 5xx to mutated queries, and every query error names its position (${RUNS} texts, seed ${SEED})`, async () => {
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(
        queryArb,
        fc.array(mutationArb, { minLength: 0, maxLength: 4 }),
        fc.boolean(),
        async (q, mutations, viaLink) => {
          const mutated = mutate(renderQuery(q, REFERENCES), mutations);
          // a link carries UTF-8: half a surrogate pair cannot be written in one
          const text = viaLink ? wellFormed(mutated) : mutated;
          const reply = await send(text, viaLink ? 'GET' : 'POST');
          statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
          checkReply(text, reply);
        },
      ),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    console.log(`      statuses: ${JSON.stringify(Object.fromEntries(statuses))}`);
    // the mutations leave enough valid queries, and break enough
    expect(statuses.get(200) ?? 0).to.be.greaterThan(RUNS / 20);
    expect(statuses.get(422) ?? 0).to.be.greaterThan(RUNS / 4);
  });

  it('answers random unicode text with a position, never a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'binary', maxLength: 200 }), async (text) => {
        checkReply(text, await send(text));
      }),
      { seed: SEED, numRuns: 60, endOnFailure: true },
    );
  });

  it('refuses nesting deeper than it reads with a position, and reads what lies within', async () => {
    const parens = (n: number) => `${'('.repeat(n)}name = web${')'.repeat(n)}`;
    expect((await send(parens(100))).status).to.equal(200);
    const nots = (n: number) => `${'not '.repeat(n)}name = web`;
    expect((await send(nots(64))).status).to.equal(200);
    const nested = (n: number) => `${'(name = web or '.repeat(n)}name = api${')'.repeat(n)}`;
    expect((await send(nested(60))).status).to.equal(200);
    for (const text of [
      parens(101),
      parens(4990),
      nots(65),
      nots(2490),
      nested(500),
      `${'not('.repeat(1500)}name = web${')'.repeat(1500)}`,
      `${'['.repeat(3000)}`,
      `raw_data.${'a.'.repeat(4990)}b = 1`,
      `* | sort type_data.${'x.'.repeat(65)}y`,
      `name = ${'"'.repeat(5000)}`,
    ]) {
      const reply = await send(text);
      expect(reply.status, `${text.slice(0, 40)}…: ${reply.text.slice(0, 300)}`).to.equal(422);
      checkReply(text, reply);
    }
    // the refusals leave the server's connections as they were
    const after = await send('name = web | fields name');
    expect(after.status, after.text).to.equal(200);
    expect(after.body.items.map((i: { fields: { name: string } }) => i.fields.name)).to.deep.equal(['web']);
  });

  it('reads inputs up to the 10 000 characters a query may hold, and refuses one more', async () => {
    const fill = (unit: string, tail: string) =>
      unit.repeat(Math.floor((MAX_QUERY - tail.length) / unit.length)) + tail;
    const texts = [
      fill('name = web or ', 'name = api'),
      `name in (${fill('web, ', 'api)')}`.slice(0, MAX_QUERY),
      `name = "${'x'.repeat(MAX_QUERY - 9)}"`,
      `raw_data.${fill('a.', 'b')}`.slice(0, MAX_QUERY - 4) + ' = 1',
      fill('name = web -[*]-> ', '*'),
      fill('* | sort name ', ''),
      fill('🙂', ''),
      `* | fields ${fill('name, ', 'name')}`.slice(0, MAX_QUERY),
      `name matches "${'(a|b)*'.repeat(1600)}"`.slice(0, MAX_QUERY),
    ];
    for (const text of texts) {
      expect(text.length, text.slice(0, 30)).to.be.at.most(MAX_QUERY);
      checkReply(text, await send(text));
    }
    const tooLong = await send('x'.repeat(MAX_QUERY + 1));
    expect(tooLong.status).to.equal(422);
    expect(tooLong.body.error.code).to.equal('VALIDATION_ERROR');
    expect(tooLong.body.error.details.errors[0]).to.include({ field: 'query' });
  });

  it('answers a pattern PostgreSQL cannot read as a query error at the predicate', async () => {
    const text = 'name = web and\n  name matches "(unclosed"';
    const reply = await send(text);
    expect(reply.status, reply.text).to.equal(422);
    expect(reply.body.error.code).to.equal('INVALID_QUERY');
    expect(reply.body.error.details).to.include({ line: 2, column: 3 });
    checkReply(text, reply);
    const fine = await send('name matches "^(web|api)$" | fields name | sort name');
    expect(fine.body.items.map((i: { fields: { name: string } }) => i.fields.name)).to.deep.equal(['api', 'web']);
  });
});
