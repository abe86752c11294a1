import { expect } from 'chai';
import type { Sql } from '../../../src/platform/db/database.js';
import {
  AUDIT_EVENTS,
  CHANGE_RECORDS,
  keepAllPartitions,
  keepPartitions,
} from '../../../src/platform/db/partitions.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, useTestApp } from '../../support/app.js';
import { testDatabase } from '../../support/db.js';

interface Captured {
  query: string;
  parameters: unknown[];
}

interface PlanNode {
  'Relation Name'?: string;
  'Actual Loops'?: number;
  'Actual Rows'?: number;
  Plans?: PlanNode[];
}

/** The partitions of `table` a plan actually read (a node executed at least once). */
function partitionsRead(node: PlanNode, table: string, into = new Map<string, number>()): Map<string, number> {
  const name = node['Relation Name'];
  if (name?.startsWith(`${table}_`) && (node['Actual Loops'] ?? 0) > 0)
    into.set(name, (into.get(name) ?? 0) + (node['Actual Rows'] ?? 0) * node['Actual Loops']!);
  for (const child of node.Plans ?? []) partitionsRead(child, table, into);
  return into;
}

/**
 * Every query the request sent that reads `table`, run again under EXPLAIN ANALYZE with the same
 * parameters; returns the partitions each one read. Statements that write are left out.
 */
async function readsOf(
  sql: Sql,
  captured: Captured[],
  table: string,
): Promise<{ query: string; read: string[]; rows: Map<string, number> }[]> {
  const reads = [];
  for (const { query, parameters } of captured) {
    if (
      !new RegExp(`\\b${table}\\b`).test(query) ||
      /\b(insert|update|delete)\b/i.test(query) ||
      !/^\s*(select|with)\b/i.test(query)
    )
      continue;
    const [row] = await sql.unsafe<{ 'QUERY PLAN': [{ Plan: PlanNode }] }[]>(
      `explain (analyze, format json) ${query}`,
      parameters as never[],
    );
    const rows = partitionsRead(row!['QUERY PLAN'][0].Plan, table);
    reads.push({ query, read: [...rows.keys()].sort(), rows });
  }
  return reads;
}

describe('reads of partitioned history touch only the months they ask for', function () {
  this.timeout(60_000);
  const app = useTestApp();
  after(async () => keepAllPartitions((await testDatabase()).sql, new Date()));
  let admin: string;
  let captured: Captured[] = [];
  const pool = async () => (await testDatabase()).sql as Sql & { options: { debug?: unknown } };

  beforeEach(async () => {
    const { sql } = app.current;
    admin = await createKey(sql, 'adm');
    for (const at of [new Date('2031-01-01T00:00:00Z'), new Date('2031-04-01T00:00:00Z')]) {
      await keepPartitions(sql, CHANGE_RECORDS, at);
      await keepPartitions(sql, AUDIT_EVENTS, at);
    }
    // every hour from January to July 2031, and some on the exact first instant of each month
    await sql`
      with written as (
        insert into change_records (tenant_id, ci_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields, search_vector)
        select ${DEFAULT_TENANT_ID}, md5((i % 40)::text)::uuid, 'pod-' || (i % 40), 'shop', case when i % 3 = 0 then 'k8s.node' else 'k8s.pod' end,
               'UPDATED', at, '[{"field": "spec.replicas", "old_value": 1, "new_value": 2}]', '{spec.replicas}', to_tsvector('simple', 'pod-' || (i % 40) || ' shop')
        from generate_series('2031-01-01T00:00:00Z'::timestamptz, '2031-07-31T23:00:00Z', interval '1 hour') with ordinality as g(at, i)
        returning id, changed_at
      )
      insert into change_stats_queue (change_id, changed_at) select id, changed_at from written`;
    await sql`
      insert into audit_events (tenant_id, occurred_at, event_type, outcome, actor_kind)
      select ${DEFAULT_TENANT_ID}, at, 'auth.failed', 'failure', 'anonymous'
      from generate_series('2031-01-01T00:00:00Z'::timestamptz, '2031-07-31T23:00:00Z', interval '6 hours') as g(at)`;
    await sql`analyze change_records`;
  });

  async function capturing<T>(work: () => Promise<T>): Promise<T> {
    captured = [];
    const sql = await pool();
    sql.options.debug = (_connection: number, query: string, parameters: unknown[]) =>
      captured.push({ query, parameters });
    try {
      return await work();
    } finally {
      sql.options.debug = false;
    }
  }

  // two month boundaries, each window a few hours either side
  for (const [start, end, months] of [
    ['2031-03-31T22:00:00Z', '2031-04-01T02:00:00Z', ['03', '04']],
    ['2031-04-30T23:00:00Z', '2031-05-01T01:00:00Z', ['04', '05']],
  ] as const) {
    const allowed = months.map((m) => `change_records_y2031m${m}`);
    const window = `start_date=${encodeURIComponent(start)}&end_date=${encodeURIComponent(end)}`;
    const routes: [string, string, Record<string, string>?][] = [
      ['global changes, newest first', `/api/v1/changes?${window}`],
      ['filtered by CI type', `/api/v1/changes?${window}&filter=${encodeURIComponent('ci_type:eq:k8s.node')}`],
      [
        'filtered by changed field',
        `/api/v1/changes?${window}&filter=${encodeURIComponent('changed_field:eq:spec.replicas')}`,
      ],
      ['sorted by CI name', `/api/v1/changes?${window}&sort_by=ci_name&sort_order=asc`],
      ['with a search term', `/api/v1/changes?${window}&search=shop`],
      ['as CSV', `/api/v1/changes?${window}`, { accept: 'text/csv' }],
      ['change search', `/api/v1/changes/search?query=shop&${window}`],
      ['statistics of the window', `/api/v1/changes/stats?${window}`],
    ];
    for (const [label, path, headers] of routes) {
      it(`${label}, ${start} to ${end}: months ${months.join(' and ')} only`, async () => {
        const reply = await capturing(() => app.current.request('GET', path, { key: admin, headers }));
        expect(reply.status, reply.text).to.equal(200);
        const reads = await readsOf(app.current.sql, captured, 'change_records');
        expect(reads.length, 'queries reading change_records').to.be.greaterThan(0);
        for (const { query, read } of reads) {
          expect(read, query).to.satisfy((names: string[]) => names.every((n) => allowed.includes(n)));
        }
      });
    }

    it(`audit events, ${start} to ${end}: months ${months.join(' and ')} only`, async () => {
      const reply = await capturing(() => app.current.get(`/api/v1/audit-events?${window}`, admin));
      expect(reply.status, reply.text).to.equal(200);
      const reads = await readsOf(app.current.sql, captured, 'audit_events');
      expect(reads.length).to.be.greaterThan(0);
      for (const { query, read } of reads) {
        expect(read, query).to.satisfy((names: string[]) =>
          names.every((n) => months.some((m) => n === `audit_events_y2031m${m}`)),
        );
      }
    });
  }

  it("a page of the newest changes, and of one CI's history, reads rows back only as far as the page reaches", async () => {
    for (const path of [
      '/api/v1/changes?limit=5',
      `/api/v1/ci-changes/${(await app.current.sql<{ id: string }[]>`select md5('7')::uuid::text as id`)[0]!.id}?limit=5`,
    ]) {
      const reply = await capturing(() => app.current.get<{ items: { changed_at: string }[] }>(path, admin));
      expect(reply.status, reply.text).to.equal(200);
      expect(reply.body.items).to.have.length(5);
      const reads = await readsOf(app.current.sql, captured, 'change_records');
      const page = reads.filter((r) => /order by/i.test(r.query));
      expect(page.length, path).to.be.greaterThan(0);
      for (const { query, rows } of page) {
        // the newest records are in July 2031. Without a time bound the default partition could
        // hold any time, so the months are merged rather than appended in order: each older month
        // gives the merge its newest row, one index descent, and no more
        expect(rows.get('change_records_y2031m07'), query).to.be.at.least(5);
        for (const [name, read] of rows)
          if (name !== 'change_records_y2031m07') expect(read, `${name} in ${query}`).to.be.at.most(1);
      }
    }
  });
});
