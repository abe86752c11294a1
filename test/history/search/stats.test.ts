import { expect } from 'chai';
import type { Sql } from '../../../src/platform/db/database.js';
import { SnapshotCache } from '../../../src/history/records/stats-cache.js';
import { defaultWindowStats, historyStats } from '../../../src/history/records/stats-read-store.js';
import { refreshStatsAggregate } from '../../../src/history/records/stats-store.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { createKey, startTestApp } from '../../support/app.js';
import { onRealPostgres, resetDatabase, testDatabase } from '../../support/db.js';
import { buildPod, ingest } from '../../support/factories.js';
import { planNodes } from '../../support/plans.js';

const HOUR = 3_600_000;
const T0 = new Date('2026-06-01T00:00:00Z');
const NOW = new Date('2026-06-02T00:00:00Z');

/** The figures the pre-aggregate must hold, computed from the change records directly. */
async function fromHistory(sql: Sql) {
  const [row] = await sql<{ buckets: unknown; days: unknown; affected: unknown }[]>`
    select
      (select coalesce(json_agg(b order by b.bucket, b.source_id, b.change_type, b.ci_type), '[]') from (
        select date_trunc('hour', changed_at, 'UTC') as bucket, source_id::text, scope_id, change_type, ci_type, count(*)::int as changes
        from change_records where changes <> '[]' group by 1, 2, 3, 4, 5) b) as buckets,
      (select coalesce(json_agg(d order by d.day, d.source_id, d.scope_id, d.change_type, d.ci_type), '[]') from (
        select date_trunc('day', changed_at, 'UTC') as day, source_id::text, scope_id, change_type, ci_type, count(*)::int as changes
        from change_records where changes <> '[]' group by 1, 2, 3, 4, 5) d) as days,
      (select coalesce(json_agg(a order by a.bucket, a.source_id), '[]') from (
        select bucket, source_id, scope_id, count(*)::int as cis from (
          select ci_id, source_id::text, scope_id, max(date_trunc('hour', changed_at, 'UTC')) as bucket
          from change_records where changes <> '[]' group by 1, 2, 3) l group by 1, 2, 3) a) as affected`;
  return row!;
}

async function fromAggregate(sql: Sql) {
  const [row] = await sql<{ buckets: unknown; days: unknown; affected: unknown }[]>`
    select
      (select coalesce(json_agg(b order by b.bucket, b.source_id, b.change_type, b.ci_type), '[]') from (
        select bucket, source_id::text, scope_id, change_type, ci_type, changes::int from change_stats_buckets) b) as buckets,
      (select coalesce(json_agg(d order by d.day, d.source_id, d.scope_id, d.change_type, d.ci_type), '[]') from (
        select day, source_id::text, scope_id, change_type, ci_type, changes::int from change_stats_days) d) as days,
      (select coalesce(json_agg(a order by a.bucket, a.source_id), '[]') from (
        select bucket, source_id::text as source_id, scope_id, cis::int from change_stats_affected where cis <> 0) a) as affected`;
  return row!;
}

describe('statistics pre-aggregate', function () {
  this.timeout(120_000);
  let sql: Sql;
  beforeEach(async () => {
    sql = (await testDatabase()).sql;
    await resetDatabase(sql);
  });

  it('folds in only what was written since the last refresh, keeping affected CIs exact as CIs change again later', async () => {
    const pods = Array.from({ length: 30 }, (_, i) => buildPod({ name: `s${i}` }));
    await ingest(sql, pods, { now: T0, scopeId: 'c1' });
    expect((await refreshStatsAggregate(sql, NOW, 7)).rows).to.equal(30);
    expect(await fromAggregate(sql)).to.deep.equal(await fromHistory(sql));
    // a third of the pods change two hours later, a few of them again three hours later
    await ingest(
      sql,
      pods.map((p, i) => (i % 3 === 0 ? { ...p, raw_data: { ...p.raw_data, v: 2 } } : p)),
      { now: new Date(T0.getTime() + 2 * HOUR), scopeId: 'c1' },
    );
    await ingest(
      sql,
      pods.map((p, i) => (i % 3 === 0 ? { ...p, raw_data: { ...p.raw_data, v: i % 2 ? 3 : 2 } } : p)),
      { now: new Date(T0.getTime() + 5 * HOUR), scopeId: 'c1' },
    );
    await ingest(sql, [buildPod({ name: 'other' })], { source: 'other', now: new Date(T0.getTime() + 5 * HOUR) });
    const second = await refreshStatsAggregate(sql, NOW, 4);
    expect(second.rows).to.equal(10 + 5 + 1);
    expect(await fromAggregate(sql)).to.deep.equal(await fromHistory(sql));
    expect((await refreshStatsAggregate(sql, NOW)).rows).to.equal(0);
    expect(await fromAggregate(sql)).to.deep.equal(await fromHistory(sql));
  });

  it('computes explicit windows exactly from whole hours, edge minutes and records not folded in yet', async () => {
    const MINUTE = 60_000;
    const pods = Array.from({ length: 12 }, (_, i) => buildPod({ name: `w${i}` }));
    for (let step = 0; step < 8; step++) {
      const at = new Date(T0.getTime() + step * 37 * MINUTE);
      await ingest(
        sql,
        pods.map((p, i) => ({ ...p, raw_data: { ...p.raw_data, step: i % (step + 1) } })),
        { now: at, scopeId: 'c1' },
      );
      // the first half is folded into the pre-aggregate, the rest waits in the queue
      if (step === 3) await refreshStatsAggregate(sql, NOW);
    }
    const principal = {
      tenantId: DEFAULT_TENANT_ID,
      kind: 'api_key' as const,
      id: 'x',
      name: 'x',
      tier: 'adm' as const,
      superadmin: false,
      permissions: new Set<never>(),
      scopes: 'all' as const,
    };
    const windows: [number, number, boolean][] = [
      [0, 300, false],
      [15, 200, false],
      [37, 111, true],
      [60, 180, true],
      [5, 20, false],
      [0, 60, true],
      [61, 239, false],
    ];
    for (const [fromMinute, untilMinute, exclusive] of windows) {
      const from = new Date(T0.getTime() + fromMinute * MINUTE).toISOString();
      const until = new Date(T0.getTime() + untilMinute * MINUTE).toISOString();
      const figures = await historyStats(sql, principal, { from, until, untilExclusive: exclusive }, 'hour', 10_000);
      const [expected] = await sql<{ total: number; affected: number; updated: number; created: number }[]>`
        select count(*)::int as total, count(distinct ci_id)::int as affected,
               count(*) filter (where change_type = 'UPDATED')::int as updated, count(*) filter (where change_type = 'CREATED')::int as created
        from change_records where changes <> '[]' and changed_at >= ${from}::timestamptz
          and (case when ${exclusive} then changed_at < ${until}::timestamptz else changed_at <= ${until}::timestamptz end)`;
      const label = `${fromMinute}-${untilMinute}${exclusive ? ' exclusive' : ''}`;
      expect(
        {
          total: figures.total_changes,
          affected: figures.affected_cis,
          updated: figures.changes_by_type.updated,
          created: figures.changes_by_type.created,
        },
        label,
      ).to.deep.equal(expected);
      expect(
        figures.series.reduce((sum, b) => sum + b.created + b.updated + b.archived, 0),
        label,
      ).to.equal(expected!.total);
    }
  });

  it('answers the default window from the snapshot it last decoded, until a refresh writes the snapshot again', async () => {
    const admin = {
      tenantId: DEFAULT_TENANT_ID,
      kind: 'api_key' as const,
      id: 'x',
      name: 'x',
      tier: 'adm' as const,
      superadmin: false,
      permissions: new Set<never>(),
      scopes: 'all' as const,
    };
    const cache = new SnapshotCache();
    const hourAgo = () => new Date(Date.now() - HOUR);
    await ingest(
      sql,
      Array.from({ length: 3 }, (_, i) => buildPod({ name: `k${i}` })),
      { now: hourAgo() },
    );
    await refreshStatsAggregate(sql, new Date());
    const first = await defaultWindowStats(sql, admin, 'hour', new Date(), cache);
    expect(first.total_changes).to.equal(3);
    const again = await defaultWindowStats(sql, admin, 'hour', new Date(), cache);
    expect(again).to.deep.equal(first);
    // the same figures, not decoded a second time
    expect(again.series).to.equal(first.series);
    await ingest(sql, [buildPod({ name: 'k9' })], { now: hourAgo() });
    await refreshStatsAggregate(sql, new Date());
    const after = await defaultWindowStats(sql, admin, 'hour', new Date(), cache);
    expect(after.total_changes).to.equal(4);
    expect(after.series).to.not.equal(first.series);
    const byDay = await defaultWindowStats(sql, admin, 'day', new Date(), cache);
    expect(byDay.total_changes).to.equal(4);
    expect(byDay.series.every((b) => b.bucket_start.endsWith('T00:00:00.000Z'))).to.equal(true);
  });

  it("reads a data-scoped default window through the instance indexes, from the instance's rows alone", async () => {
    // seven instances, every hour of the window, as many rows as the default window holds
    const start = new Date(Date.now() - 89 * 24 * HOUR);
    await sql`
      insert into change_stats_buckets (tenant_id, source_id, scope_id, bucket, change_type, ci_type, changes)
      select ${DEFAULT_TENANT_ID}, 1, 'cluster-' || i, date_trunc('hour', h), 'UPDATED', 'k8s.pod', 3
      from generate_series(${start}::timestamptz, now(), interval '1 hour') as h, generate_series(0, 6) as i`;
    await sql`
      insert into change_stats_affected (tenant_id, source_id, scope_id, bucket, cis)
      select ${DEFAULT_TENANT_ID}, 1, 'cluster-' || i, date_trunc('hour', h), 2
      from generate_series(${start}::timestamptz, now(), interval '1 hour') as h, generate_series(0, 6) as i`;
    await sql`analyze change_stats_buckets`;
    await sql`analyze change_stats_affected`;
    const scoped = {
      tenantId: DEFAULT_TENANT_ID,
      kind: 'api_key' as const,
      id: 'x',
      name: 'x',
      tier: 'svc' as const,
      superadmin: false,
      permissions: new Set<never>(),
      scopes: [{ sourceId: '1', scopeId: 'cluster-3' }],
    };
    const captured: { query: string; parameters: unknown[] }[] = [];
    const pool = sql as Sql & { options: { debug?: unknown } };
    pool.options.debug = (_connection: number, query: string, parameters: unknown[]) =>
      captured.push({ query, parameters });
    let figures;
    try {
      figures = await defaultWindowStats(sql, scoped, 'hour', new Date(), new SnapshotCache());
    } finally {
      pool.options.debug = false;
    }
    const [hours] = await sql<
      { n: number }[]
    >`select count(*)::int as n from change_stats_buckets where scope_id = 'cluster-3'`;
    expect(figures.total_changes).to.equal(3 * hours!.n);
    expect(figures.affected_cis).to.equal(2 * hours!.n);
    const instanceIndexes = new Set(
      (
        await sql<{ name: string }[]>`
        select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
        where i.inhparent in ('change_stats_buckets_by_instance'::regclass, 'change_stats_affected_by_instance'::regclass)`
      ).map((r) => r.name),
    );
    const reads = captured.filter((c) => /change_stats_(buckets|affected)/.test(c.query));
    expect(reads).to.have.length(3);
    for (const { query, parameters } of reads) {
      const plan = await planNodes(sql, query, parameters, { analyze: true });
      const indexed = plan.filter((node) => node['Index Name'] !== undefined);
      expect(indexed, query).to.not.be.empty;
      for (const node of indexed)
        expect(instanceIndexes, `${node['Node Type']} for ${query}`).to.include(node['Index Name']);
      // the rows read from the tables (one scan per monthly partition): the instance's, no more
      const tableRows = plan
        .filter((node) => node['Relation Name'] !== undefined)
        .reduce((sum, node) => sum + (node['Actual Rows'] ?? 0), 0);
      expect(tableRows, query).to.equal(hours!.n);
    }
  });

  (onRealPostgres ? describe : describe.skip)(
    'with several sessions (skipped on the embedded database: PGlite has one session)',
    () => {
      it('gives the same figures when several refreshes run at once as one refresh alone', async () => {
        for (let hour = 0; hour < 6; hour++) {
          await ingest(
            sql,
            Array.from({ length: 200 }, (_, i) => buildPod({ name: `c${i}`, replicas: hour })),
            { now: new Date(T0.getTime() + hour * HOUR), scopeId: `s${hour % 2}` },
          );
        }
        const results = await Promise.all([0, 1, 2, 3].map(() => refreshStatsAggregate(sql, NOW, 150)));
        expect(results.reduce((sum, r) => sum + r.rows, 0)).to.equal(1200);
        expect(await fromAggregate(sql)).to.deep.equal(await fromHistory(sql));
      });

      it('counts what was just written in the default window without waiting for a refresh, and says up to when', async () => {
        const app = await startTestApp();
        try {
          const key = await createKey(sql, 'adm');
          const empty = await app.get('/api/v1/changes/stats', key);
          expect(empty.status, empty.text).to.equal(200);
          expect(empty.body.total_changes).to.equal(0);
          await ingest(sql, [buildPod({ name: 'fresh-1' }), buildPod({ name: 'fresh-2' })], {
            now: new Date(Date.now() - HOUR),
          });
          const before = Date.now();
          const fresh = await app.get('/api/v1/changes/stats', key);
          expect(fresh.body).to.deep.include({ total_changes: 2, affected_cis: 2 });
          expect(fresh.body.changes_by_type).to.deep.include({ created: 2 });
          // the figures count up to the fold this read made
          expect(Date.parse(fresh.body.time_range.end)).to.be.at.least(before - 1000);
          const [queued] = await sql<{ n: number }[]>`select count(*)::int as n from change_stats_queue`;
          expect(queued!.n).to.equal(0);
          expect(await fromAggregate(sql)).to.deep.equal(await fromHistory(sql));
        } finally {
          await app.close();
        }
      });

      it('answers 422 when an explicit window cannot be computed within CINV_STATS_TIMEOUT, never a hang or a 500', async () => {
        await ingest(sql, [buildPod({ name: 'x' })]);
        const app = await startTestApp({ statsTimeoutMs: 300 });
        const holder = (await testDatabase()).connectOne();
        try {
          const key = await createKey(sql, 'adm');
          await holder`begin`;
          await holder`lock table change_records in access exclusive mode`;
          const started = performance.now();
          const reply = await app.get('/api/v1/changes/stats?start_date=2026-01-01', key);
          expect(reply.status, reply.text).to.equal(422);
          expect(reply.body.error).to.include({ code: 'HTTP_422' });
          expect(reply.body.error.message).to.match(/narrow it with end_date/);
          expect(performance.now() - started).to.be.below(3000);
        } finally {
          await holder`rollback`.catch(() => undefined);
          await holder.end();
          await app.close();
        }
      });
    },
  );
});
