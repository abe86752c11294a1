import { expect } from 'chai';
import { loadConfig, type ChangeRetention } from '../../../src/platform/config/config.js';
import { historyCoversSince, trimChangeHistory } from '../../../src/history/records/retention.js';
import { refreshStatsAggregate } from '../../../src/history/records/stats-store.js';
import { createKey, useTestApp } from '../../support/app.js';
import { buildPod, ingest } from '../../support/factories.js';

const DAY = 86_400_000;
const NOW = new Date('2026-11-20T12:00:00Z');
const ago = (days: number) => new Date(NOW.getTime() - days * DAY);
const env = { CINV_SECRET: 'x'.repeat(32), DATABASE_URL: 'postgres://unused' };

describe('change history retention', () => {
  it('reads CINV_CHANGE_RETENTION (0 keeps forever) and per-type overrides, naming what is wrong', () => {
    expect(loadConfig(env).changeRetention).to.deep.equal({ defaultMs: 400 * DAY, byType: new Map() });
    const given = loadConfig({
      ...env,
      CINV_CHANGE_RETENTION: '0',
      CINV_CHANGE_RETENTION_OVERRIDES: 'k8s.pod=90d, k8s.event = 12h ,pg.role=0',
    });
    expect(given.changeRetention).to.deep.equal({
      defaultMs: null,
      byType: new Map<string, number | null>([
        ['k8s.pod', 90 * DAY],
        ['k8s.event', DAY / 2],
        ['pg.role', null],
      ]),
    });
    for (const [name, value, message] of [
      ['CINV_CHANGE_RETENTION', 'soon', /CINV_CHANGE_RETENTION.*"soon"/],
      ['CINV_CHANGE_RETENTION', '-5d', /CINV_CHANGE_RETENTION/],
      ['CINV_CHANGE_RETENTION_OVERRIDES', 'k8s.pod', /CI_TYPE=DURATION/],
      ['CINV_CHANGE_RETENTION_OVERRIDES', 'k8s.pod=90d,k8s.pod=9d', /given twice/],
      ['CINV_CHANGE_RETENTION_OVERRIDES', 'k8s.pod=ninety', /"ninety"/],
    ] as const) {
      expect(() => loadConfig({ ...env, [name]: value }), `${name}=${value}`).to.throw(message);
    }
  });

  it('says from when history is complete: the latest horizon of any type, none when all is kept', () => {
    const retention = (defaultMs: number | null, byType: [string, number | null][] = []): ChangeRetention => ({
      defaultMs,
      byType: new Map(byType),
    });
    expect(historyCoversSince(retention(30 * DAY), NOW)).to.deep.equal(ago(30));
    expect(
      historyCoversSince(
        retention(30 * DAY, [
          ['k8s.node', 10 * DAY],
          ['k8s.deployment', null],
        ]),
        NOW,
      ),
    ).to.deep.equal(ago(10));
    expect(historyCoversSince(retention(null, [['k8s.node', 10 * DAY]]), NOW)).to.deep.equal(ago(10));
    expect(historyCoversSince(retention(null), NOW)).to.equal(null);
  });

  describe('the sweep', () => {
    const app = useTestApp({
      changeRetention: {
        defaultMs: 30 * DAY,
        byType: new Map([
          ['k8s.node', 10 * DAY],
          ['k8s.deployment', null],
        ]),
      },
    });

    const kinds = async () => {
      const rows = await app.current.sql<{ name: string; change_type: string }[]>`
        select ci_name as name, change_type from change_records order by ci_name, changed_at`;
      return rows.map((r) => `${r.name} ${r.change_type}`);
    };

    it("removes the records past their type's horizon with their statistics, keeps the rest, and is idempotent", async () => {
      const { sql } = app.current;
      const pod = (name: string, replicas = 1) => buildPod({ name, replicas, external_id: `pod/${name}` });
      const node = (name: string, replicas = 1) => ({
        ...pod(name, replicas),
        ci_type: 'k8s.node',
        external_id: `node/${name}`,
      });
      const deployment = (name: string, replicas = 1) => ({
        ...pod(name, replicas),
        ci_type: 'k8s.deployment',
        external_id: `deploy/${name}`,
      });
      const delta = (records: ReturnType<typeof buildPod>[], at: Date) =>
        ingest(sql, records, { now: at, mode: 'delta' });
      await delta([pod('old-pod'), node('old-node'), deployment('old-deploy'), deployment('lonely-deploy')], ago(400));
      await delta([pod('old-pod', 2)], ago(40));
      // exactly on the default horizon: kept (records strictly before it expire); half an hour
      // before it: expired, and so is its hour's bucket, which ends on the horizon
      await delta([pod('old-pod', 3)], ago(30));
      await delta([pod('edge-pod')], new Date(ago(30).getTime() - 1_800_000));
      await delta([pod('old-pod', 4), node('old-node', 2)], ago(20));
      await delta([node('old-node', 3), deployment('old-deploy', 2)], ago(5));
      await refreshStatsAggregate(sql, ago(1));
      const buckets = async (ciType: string) =>
        Number(
          (
            await sql<
              { n: string }[]
            >`select coalesce(sum(changes), 0)::text as n from change_stats_buckets where ci_type = ${ciType}`
          )[0]!.n,
        );
      expect([await buckets('k8s.pod'), await buckets('k8s.node'), await buckets('k8s.deployment')]).to.deep.equal([
        5, 3, 3,
      ]);

      const trimmed = await trimChangeHistory(sql, app.current.config.changeRetention, NOW, 1);
      expect(trimmed.records).to.equal(5);
      expect(await kinds()).to.deep.equal([
        'lonely-deploy CREATED',
        'old-deploy CREATED',
        'old-deploy UPDATED',
        'old-node UPDATED',
        'old-pod UPDATED',
        'old-pod UPDATED',
      ]);
      expect([await buckets('k8s.pod'), await buckets('k8s.node'), await buckets('k8s.deployment')]).to.deep.equal([
        2, 1, 3,
      ]);
      // each day still holds exactly the sum of its hours (the day of the horizon gave back what went)
      const [daysDiffer] = await sql<{ n: number }[]>`
        with h as (
          select tenant_id, source_id, scope_id, date_trunc('day', bucket, 'UTC') as day, change_type, ci_type, sum(changes)::bigint as changes
          from change_stats_buckets group by 1, 2, 3, 4, 5, 6
        ), d as (select tenant_id, source_id, scope_id, day, change_type, ci_type, changes from change_stats_days)
        select count(*)::int as n from ((select * from h except select * from d) union all (select * from d except select * from h)) differ`;
      expect(daysDiffer!.n).to.equal(0);
      const queued =
        await sql`select 1 from change_stats_queue q where not exists (select 1 from change_records cr where cr.id = q.change_id)`;
      expect(queued).to.have.length(0);
      expect(await trimChangeHistory(sql, app.current.config.changeRetention, NOW, 1)).to.deep.include({
        records: 0,
        buckets: 0,
      });

      // once no type keeps anything from an hour, its distinct-CI figures go too
      const oldHours = async () =>
        (
          await sql`select 1 from change_stats_affected where bucket < ${ago(30)} union all select 1 from change_stats_ci_last where last_bucket < ${ago(30)}`
        ).length;
      expect(await oldHours()).to.be.greaterThan(0);
      const finite: ChangeRetention = { defaultMs: 30 * DAY, byType: new Map([['k8s.node', 10 * DAY]]) };
      expect(await trimChangeHistory(sql, finite, NOW, 100)).to.deep.include({ records: 2, buckets: 1 });
      expect(await oldHours()).to.equal(0);
      expect(await kinds()).to.deep.equal([
        'old-deploy UPDATED',
        'old-node UPDATED',
        'old-pod UPDATED',
        'old-pod UPDATED',
      ]);
    });

    it('reports what the history covers on /health, and starts a statistics window reaching back before it there', async () => {
      app.current.clock.now = NOW;
      const health = await app.current.get('/health');
      expect(health.body.history).to.deep.equal({
        covers_since: ago(10).toISOString(),
        retention: { default_days: 30, by_ci_type: { 'k8s.node': 10, 'k8s.deployment': null } },
      });
      const key = await createKey(app.current.sql, 'ro');
      const wide = await app.current.get(
        `/api/v1/changes/stats?start_date=${ago(60).toISOString()}&end_date=${ago(1).toISOString()}`,
        key,
      );
      expect(wide.status, wide.text).to.equal(200);
      expect(wide.body.time_range).to.deep.equal({ start: ago(10).toISOString(), end: ago(1).toISOString() });
      const inside = await app.current.get(
        `/api/v1/changes/stats?start_date=${ago(3).toISOString()}&end_date=${ago(1).toISOString()}`,
        key,
      );
      expect(inside.body.time_range).to.deep.equal({ start: ago(3).toISOString(), end: ago(1).toISOString() });
    });
  });
});
