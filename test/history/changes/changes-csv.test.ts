import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Sql } from '../../../src/platform/db/database.js';
import { asJson } from '../../../src/platform/db/database.js';
import { backfillSearchDocuments } from '../../../src/history/search/backfill.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, useTestApp } from '../../support/app.js';
import { onRealPostgres } from '../../support/db.js';
import { buildSource } from '../../support/factories.js';

const HEADER = [
  'change_id',
  'changed_at',
  'change_type',
  'ci_id',
  'ci_name',
  'ci_namespace',
  'ci_type',
  'kind',
  'severity',
  'field',
  'old_value',
  'new_value',
];

/** RFC 4180: quoted fields double their quotes and may hold newlines. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c === '"') {
      quoted = true;
    } else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else {
      field += c;
    }
  }
  if (field !== '' || row.length > 0) rows.push([...row, field]);
  return rows;
}

interface FieldChange {
  field: string;
  old_value: unknown;
  new_value: unknown;
}

interface Seed {
  ci: string;
  name: string;
  namespace: string | null;
  kind: 'CREATED' | 'UPDATED' | 'DELETED';
  at: string;
  source: string;
  scope: string | null;
  changes: FieldChange[];
}

/** Inserts a change record as the writer would (it enters the statistics queue too); returns its id. */
async function insert(sql: Sql, record: Seed): Promise<string> {
  const [row] = await sql<{ id: string }[]>`
    with written as (
      insert into change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields)
      values (${DEFAULT_TENANT_ID}, ${record.ci}, ${record.source}, ${record.scope}, ${record.name}, ${record.namespace}, 'k8s.pod', ${record.kind},
              ${record.at}::text::timestamptz, ${sql.json(asJson(record.changes))}::jsonb, ${record.changes.map((c) => c.field)}::text[])
      returning id, changed_at
    ), queued as (insert into change_stats_queue (change_id, changed_at) select id, changed_at from written)
    select id::text from written`;
  return row!.id;
}

/**
 * `count` records with two field changes each, spread over `names` CI names, one second apart,
 * set-based; the second change carries a sizeable array of objects.
 */
async function bulkInsert(
  sql: Sql,
  source: string,
  count: number,
  names: number,
  scope: string | null = null,
): Promise<void> {
  await sql`
    insert into change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields)
    select ${DEFAULT_TENANT_ID}, md5('ci' || (i % ${names}))::uuid, ${source}, ${scope}, 'pod' || (i % ${names}), 'default', 'k8s.pod', 'UPDATED',
           timestamptz '2026-01-01T00:00:00Z' + i * interval '1 second',
           jsonb_build_array(
             jsonb_build_object('field', 'raw_data.spec.replicas', 'old_value', i, 'new_value', i + 1),
             jsonb_build_object('field', 'raw_data.status.conditions',
               'old_value', jsonb_build_array(jsonb_build_object('type', 'Ready', 'status', 'True', 'message', repeat('a', 120))),
               'new_value', jsonb_build_array(jsonb_build_object('type', 'Ready', 'status', 'False', 'message', repeat('b', 120))))),
           array['raw_data.spec.replicas', 'raw_data.status.conditions']
    from generate_series(1, ${count}) as i`;
  // as the writer does, every record enters the statistics queue
  await sql`insert into change_stats_queue (change_id, changed_at) select id, changed_at from change_records on conflict do nothing`;
  await sql`analyze change_records`;
}

describe('GET /api/v1/changes (CSV)', () => {
  const app = useTestApp();
  let admin: string;
  let source: string;

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm');
    source = await buildSource(app.current.sql, 'k8s-prod');
  });

  const csv = (query = '', key = admin, accept = 'text/csv') =>
    app.current.request('GET', `/api/v1/changes${query ? `?${query}` : ''}`, { key, headers: { accept } });

  it('writes a header and one row per field change: text as text, numbers and booleans as literals, null empty, objects and arrays as JSON', async () => {
    const tricky = 'line one\nline "two", with a comma';
    const conditions = [
      { type: 'Ready', status: 'False', reason: 'CrashLoopBackOff', lastProbeTime: null },
      { type: 'PodScheduled', status: 'True' },
    ];
    const ci = randomUUID();
    const created = await insert(app.current.sql, {
      ci,
      name: 'web, "frontend"',
      namespace: null,
      kind: 'CREATED',
      at: '2026-01-01T09:00:00.123456Z',
      source,
      scope: null,
      changes: [{ field: 'status', old_value: null, new_value: 'active' }],
    });
    const updated = await insert(app.current.sql, {
      ci,
      name: 'web, "frontend"',
      namespace: 'default',
      kind: 'UPDATED',
      at: '2026-01-01T10:00:00Z',
      source,
      scope: null,
      changes: [
        { field: 'raw_data.status.conditions', old_value: [], new_value: conditions },
        {
          field: 'raw_data.metadata.annotations',
          old_value: { note: tricky },
          new_value: { note: 'ok', 'a,b': [1, 2.5, true, null] },
        },
        { field: 'raw_data.spec.replicas', old_value: 2, new_value: 3 },
        { field: 'raw_data.metadata.labels.tier', old_value: 'web', new_value: null },
      ],
    });
    await insert(app.current.sql, {
      ci,
      name: 'web',
      namespace: null,
      kind: 'UPDATED',
      at: '2026-01-01T11:00:00Z',
      source,
      scope: null,
      changes: [],
    });

    const reply = await csv();
    expect(reply.status).to.equal(200);
    expect(reply.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
    expect(reply.headers.get('content-disposition')).to.match(/^attachment; filename="changes-\d{8}T\d{6}Z\.csv"$/);
    expect(reply.headers.get('vary')).to.match(/accept/i);
    const [header, ...rows] = parseCsv(reply.text);
    expect(header).to.deep.equal(HEADER);
    expect(rows).to.have.lengthOf(5);
    expect(rows.map((r) => r[0])).to.deep.equal([updated, updated, updated, updated, created]);
    // complex values are JSON that parses back to the original, whatever quotes, commas and lines they hold
    expect(
      rows.slice(0, 2).map((r) => ({
        field: r[9],
        old_value: JSON.parse(r[10]!) as unknown,
        new_value: JSON.parse(r[11]!) as unknown,
      })),
    ).to.deep.equal([
      { field: 'raw_data.status.conditions', old_value: [], new_value: conditions },
      {
        field: 'raw_data.metadata.annotations',
        old_value: { note: tricky },
        new_value: { note: 'ok', 'a,b': [1, 2.5, true, null] },
      },
    ]);
    expect(rows.slice(2, 4).map((r) => r.slice(9))).to.deep.equal([
      ['raw_data.spec.replicas', '2', '3'],
      ['raw_data.metadata.labels.tier', 'web', ''],
    ]);
    expect(rows[4]).to.deep.equal([
      created,
      '2026-01-01T09:00:00.123Z',
      'CREATED',
      ci,
      'web, "frontend"',
      '',
      'k8s.pod',
      // written by hand as records before classification were
      '',
      '',
      'status',
      '',
      'active',
    ]);
    expect(rows[0]!.slice(1, 7)).to.deep.equal([
      '2026-01-01T10:00:00.000Z',
      'UPDATED',
      ci,
      'web, "frontend"',
      'default',
      'k8s.pod',
    ]);
  });

  it('exports every match without a limit, and counts an explicit limit and offset in change records', async () => {
    await bulkInsert(app.current.sql, source, 4500, 700);
    const all = parseCsv((await csv()).text);
    expect(all).to.have.lengthOf(1 + 9000);
    const ids = [...new Set(all.slice(1).map((r) => r[0]))];
    expect(ids).to.have.lengthOf(4500);
    const expected = await app.current.sql<
      { id: string }[]
    >`select id::text from change_records order by changed_at desc, change_records.id desc`;
    expect(ids).to.deep.equal(expected.map((r) => r.id));

    const limited = parseCsv((await csv('limit=10')).text);
    expect(limited).to.have.lengthOf(1 + 20);
    const window = parseCsv((await csv('limit=1000&offset=4000')).text).slice(1);
    expect(window).to.have.lengthOf(1000);
    expect([...new Set(window.map((r) => r[0]))]).to.deep.equal(expected.slice(4000, 4500).map((r) => r.id));
    expect(parseCsv((await csv('offset=4499')).text)).to.have.lengthOf(1 + 2);
  });

  it('walks sorted exports across batches without losing or repeating records that tie on the sort value', async () => {
    await bulkInsert(app.current.sql, source, 4500, 7);
    for (const [sortBy, order] of [
      ['ci_name', 'asc'],
      ['ci_type', 'desc'],
      ['change_type', 'asc'],
      ['changed_at', 'asc'],
    ] as const) {
      const rows = parseCsv((await csv(`sort_by=${sortBy}&sort_order=${order}`)).text).slice(1);
      const ids = [...new Set(rows.map((r) => r[0]))];
      const column = app.current.sql(sortBy);
      const direction = order === 'asc' ? app.current.sql`asc` : app.current.sql`desc`;
      const expected = await app.current.sql<
        { id: string }[]
      >`select id::text from change_records order by ${column} ${direction}, change_records.id ${direction}`;
      expect(ids, `${sortBy} ${order}`).to.deep.equal(expected.map((r) => r.id));
      expect(rows).to.have.lengthOf(9000);
    }
    const skipped = parseCsv((await csv('sort_by=ci_name&sort_order=desc&offset=100')).text).slice(1);
    const rest = await app.current.sql<
      { id: string }[]
    >`select id::text from change_records order by ci_name desc, change_records.id desc offset 100`;
    expect([...new Set(skipped.map((r) => r[0]))]).to.deep.equal(rest.map((r) => r.id));
    const window = parseCsv((await csv('sort_by=ci_name&sort_order=desc&limit=1000&offset=2500')).text).slice(1);
    expect([...new Set(window.map((r) => r[0]))]).to.deep.equal(rest.slice(2400, 3400).map((r) => r.id));
  });

  it('applies the same filters, search, dates and sort as the JSON list', async () => {
    await bulkInsert(app.current.sql, source, 300, 30);
    await insert(app.current.sql, {
      ci: randomUUID(),
      name: 'special',
      namespace: 'kube-system',
      kind: 'DELETED',
      at: '2026-01-01T00:02:30Z',
      source,
      scope: null,
      changes: [{ field: 'status', old_value: 'active', new_value: 'archived' }],
    });
    // records inserted by hand get their search documents the way older records do
    await backfillSearchDocuments(app.current.sql);
    const queries = [
      `filter=${encodeURIComponent('changed_at:gte:2026-01-01T00:02:00Z')}&filter=${encodeURIComponent('changed_at:lt:2026-01-01T00:03:00Z')}`,
      `filter=${encodeURIComponent('changed_field:eq:status')}`,
      `filter=${encodeURIComponent('change_type:ne:DELETED')}&filter=${encodeURIComponent('ci_name:in:pod1,pod2')}&sort_by=ci_name&sort_order=asc`,
      'search=kube&sort_by=change_type',
      'search=pod1&start_date=2026-01-01T00:01:00Z&end_date=2026-01-01T00:04:00Z',
      'start_date=2026-01-01&end_date=2026-01-01&sort_by=ci_type&sort_order=asc',
    ];
    for (const query of queries) {
      const json = await app.current.get<{ items: { id: string; changes: unknown[] }[]; total: number }>(
        `/api/v1/changes?${query}&limit=1000`,
        admin,
      );
      expect(json.status, query).to.equal(200);
      const rows = parseCsv((await csv(query)).text).slice(1);
      expect([...new Set(rows.map((r) => r[0]))], query).to.deep.equal(json.body.items.map((i) => i.id));
      expect(rows.length, query).to.equal(json.body.items.reduce((n, i) => n + i.changes.length, 0));
      expect(json.body.total).to.be.above(0);
    }
    const none = await csv('search=nothing-like-this');
    expect(none.status).to.equal(200);
    expect(none.text).to.equal(`${HEADER.join(',')}\n`);
  });

  it('negotiates the representation from Accept, and answers what it cannot serve with 406', async () => {
    await bulkInsert(app.current.sql, source, 3, 3);
    expect((await csv('', admin, 'application/json')).body.total).to.equal(3);
    expect((await csv('', admin, '*/*')).body.total).to.equal(3);
    expect((await csv('', admin, 'text/*')).headers.get('content-type')).to.equal('text/csv; charset=utf-8');
    expect((await csv('', admin, 'application/json;q=0.5, text/csv')).headers.get('content-type')).to.equal(
      'text/csv; charset=utf-8',
    );

    const withoutAccept = await new Promise<{ status: number; type: string | undefined }>((resolve, reject) => {
      const request = http.get(
        `${app.current.baseUrl}/api/v1/changes`,
        { headers: { 'x-api-key': admin } },
        (response) => {
          response.resume();
          resolve({ status: response.statusCode ?? 0, type: response.headers['content-type'] });
        },
      );
      request.on('error', reject);
    });
    expect(withoutAccept).to.deep.equal({ status: 200, type: 'application/json; charset=utf-8' });

    for (const accept of ['application/xml', 'text/html', 'application/json;q=0, text/csv;q=0']) {
      const reply = await csv('', admin, accept);
      expect(reply.status, accept).to.equal(406);
      expect(reply.body.error).to.include({ code: 'HTTP_406', path: '/api/v1/changes', method: 'GET' });
      expect(reply.body.error.details.available).to.deep.equal(['application/json', 'text/csv']);
    }
    expect((await csv('sort_by=nope')).status).to.equal(422);
    expect((await app.current.request('GET', '/api/v1/changes', { headers: { accept: 'text/csv' } })).status).to.equal(
      401,
    );
  });

  it("exports only rows of changes inside the key's data scopes", async () => {
    const other = await buildSource(app.current.sql, 'k8s-dev');
    await bulkInsert(app.current.sql, source, 50, 5, 'c1');
    await bulkInsert(app.current.sql, source, 40, 5, 'c2');
    await bulkInsert(app.current.sql, other, 30, 5, 'c1');
    const keyFor = (scopes: { sourceId: string; scopeId: string | null }[]) =>
      createKey(app.current.sql, 'svc', { permissions: ['changes:read'], scopes });
    const scopedIds = async (key: string) => {
      const ids = parseCsv((await csv('', key)).text)
        .slice(1)
        .map((r) => r[0]!);
      return new Set(ids);
    };
    const inScope = async (where: { source: string; scope: string | null }) =>
      new Set(
        (
          await app.current.sql<{ id: string }[]>`
        select id::text from change_records where source_id = ${where.source} and (${where.scope}::text is null or scope_id = ${where.scope})`
        ).map((r) => r.id),
      );

    expect(await scopedIds(await keyFor([{ sourceId: source, scopeId: 'c1' }]))).to.deep.equal(
      await inScope({ source, scope: 'c1' }),
    );
    expect(await scopedIds(await keyFor([{ sourceId: source, scopeId: null }]))).to.deep.equal(
      await inScope({ source, scope: null }),
    );
    expect(await scopedIds(await keyFor([{ sourceId: other, scopeId: 'c1' }]))).to.deep.equal(
      await inScope({ source: other, scope: 'c1' }),
    );
    expect((await scopedIds(await keyFor([]))).size).to.equal(0);
  });

  describe('large exports', function () {
    this.timeout(180_000);

    it('streams 200 000 rows with flat memory', async () => {
      await bulkInsert(app.current.sql, source, 100_000, 5000);
      const gc = collector();
      gc();
      const baseline = process.memoryUsage();
      const peak = { heap: baseline.heapUsed, rss: baseline.rss };
      // live memory, not garbage the collector has yet to reclaim: collect before each sample
      const sampler = setInterval(() => {
        gc();
        const usage = process.memoryUsage();
        peak.heap = Math.max(peak.heap, usage.heapUsed);
        peak.rss = Math.max(peak.rss, usage.rss);
      }, 1000);
      const started = Date.now();
      let lines = 0;
      let bytes = 0;
      try {
        const response = await fetch(`${app.current.baseUrl}/api/v1/changes`, {
          headers: { accept: 'text/csv', 'x-api-key': admin },
        });
        expect(response.status).to.equal(200);
        for await (const chunk of response.body!) {
          const buffer = Buffer.from(chunk);
          bytes += buffer.length;
          for (let at = buffer.indexOf(10); at !== -1; at = buffer.indexOf(10, at + 1)) lines++;
        }
      } finally {
        clearInterval(sampler);
      }
      const seconds = (Date.now() - started) / 1000;
      const mb = (n: number) => Math.round(n / 1e6);
      console.log(
        `      CSV export: ${lines - 1} rows, ${mb(bytes)} MB in ${seconds.toFixed(1)} s (${Math.round((lines - 1) / seconds)} rows/s, ` +
          `client in the same process); live heap +${mb(peak.heap - baseline.heapUsed)} MB, rss +${mb(peak.rss - baseline.rss)} MB`,
      );
      expect(lines).to.equal(1 + 200_000);
      // the body is ~63 MB: holding it, or any sizeable part of it, would show here
      expect(peak.heap - baseline.heapUsed).to.be.below(25e6);
      expect(peak.rss - baseline.rss).to.be.below(100e6);
    });

    it('stops reading from the database when the client disconnects mid-download', async () => {
      await bulkInsert(app.current.sql, source, 30_000, 500);
      const controller = new AbortController();
      const response = await fetch(`${app.current.baseUrl}/api/v1/changes`, {
        headers: { accept: 'text/csv', 'x-api-key': admin },
        signal: controller.signal,
      });
      const reader = response.body!.getReader();
      await reader.read();
      // stop reading for a moment: the server must wait for the client rather than run ahead
      await new Promise((resolve) => setTimeout(resolve, 300));
      controller.abort();

      const ended = await waitForLog(() => app.current.logs, 'change export ended', 10_000);
      expect(ended.complete).to.equal(false);
      expect(ended.rows).to.be.below(60_000);

      const started = Date.now();
      const next = await app.current.get('/api/v1/changes?limit=1', admin);
      expect(next.status).to.equal(200);
      expect(Date.now() - started).to.be.below(2000);
      const rowsAtEnd = ended.rows;
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(app.current.logs.filter((line) => line.includes('change export ended'))).to.have.lengthOf(1);
      expect(rowsAtEnd).to.equal(ended.rows);
      if (onRealPostgres) {
        const running = await app.current.sql<{ query: string }[]>`
          select query from pg_stat_activity
          where datname = current_database() and state = 'active' and pid <> pg_backend_pid() and query like '%change_records%'`;
        expect(running).to.deep.equal([]);
      }
    });
  });
});

/** The collector, callable: lets the memory test sample live memory instead of uncollected garbage. */
function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

interface ExportLog {
  rows: number;
  records: number;
  complete: boolean;
}

async function waitForLog(logs: () => string[], message: string, timeoutMs: number): Promise<ExportLog> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const line = logs().find((entry) => entry.includes(message));
    if (line) return JSON.parse(line) as ExportLog;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no "${message}" log line within ${timeoutMs} ms`);
}
