import { expect } from 'chai';
import type { Sql } from '../../../src/platform/db/database.js';
import {
  addMonths,
  AUDIT_EVENTS,
  CHANGE_RECORDS,
  defaultRows,
  keepAllPartitions,
  keepPartitions,
  monthOf,
  monthPartitions,
  MONTHS_AHEAD,
  partitionName,
  PartitionRetries,
  retryOver,
  RETRY_FIRST_WAIT_MS,
  RETRY_MAX_WAIT_MS,
} from '../../../src/platform/db/partitions.js';
import { trimAuditEvents } from '../../../src/platform/audit/store.js';
import { trimChangeHistory } from '../../../src/history/records/retention.js';
import { refreshStatsAggregate } from '../../../src/history/records/stats-store.js';
import { runSweep } from '../../../src/inventory/lifecycle/scheduler.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { useTestApp } from '../../support/app.js';
import { onRealPostgres, REAL_DATABASE_URL, testDatabase } from '../../support/db.js';
import postgres from 'postgres';

const DAY = 86_400_000;

/** Writes one change record at a time given as text, so offsets and microseconds reach PostgreSQL as written. */
async function record(sql: Sql, name: string, at: string, ciType = 'k8s.pod'): Promise<void> {
  await sql`
    with written as (
      insert into change_records (tenant_id, ci_id, ci_name, ci_type, change_type, changed_at, changes, changed_fields)
      values (${DEFAULT_TENANT_ID}, gen_random_uuid(), ${name}, ${ciType}, 'UPDATED', ${at}::text::timestamptz,
              '[{"field": "status", "old_value": "a", "new_value": "b"}]', '{status}')
      returning id, changed_at
    )
    insert into change_stats_queue (change_id, changed_at) select id, changed_at from written`;
}

/** Each record's partition, by name. */
async function homes(sql: Sql): Promise<Record<string, string>> {
  const rows = await sql<
    { name: string; home: string }[]
  >`select ci_name as name, tableoid::regclass::text as home from change_records`;
  return Object.fromEntries(rows.map((r) => [r.name, r.home]));
}

const names = async (sql: Sql) => (await monthPartitions(sql, 'change_records', CHANGE_RECORDS)).map((p) => p.name);

describe('change history partitions', () => {
  const app = useTestApp();
  // retention far in the future drops this month's partitions too: the suites after this one find them again
  after(async () => keepAllPartitions((await testDatabase()).sql, new Date()));
  // the months these tests use start out without partitions, whatever other suites made before
  beforeEach(async () => {
    const { sql } = app.current;
    const made = await sql<{ name: string }[]>`
      select relname as name from pg_class where relkind = 'r' and relname ~ '_y(203[1-4]|2099|1999)m[0-9]{2}$' and relnamespace = current_schema()::regnamespace`;
    for (const { name } of made) await sql.unsafe(`drop table ${name}`);
  });

  it('files each record under the month of its UTC time: the last microsecond, the first instant, and times written with offsets', async () => {
    const { sql } = app.current;
    const upkeep = await keepPartitions(sql, CHANGE_RECORDS, new Date('2031-03-15T00:00:00Z'));
    expect(upkeep.created).to.include.members([
      'change_records_y2031m03',
      'change_records_y2031m04',
      'change_records_y2031m06',
    ]);
    await record(sql, 'last-of-march', '2031-03-31T23:59:59.999999Z');
    await record(sql, 'first-of-april', '2031-04-01T00:00:00Z');
    // local midnight past in Brazil, already April in UTC; and the reverse east of Greenwich
    await record(sql, 'april-in-utc', '2031-03-31T23:30:00-02:00');
    await record(sql, 'march-in-utc', '2031-04-01T01:30:00+02:00');
    expect(await homes(sql)).to.deep.equal({
      'last-of-march': 'change_records_y2031m03',
      'first-of-april': 'change_records_y2031m04',
      'april-in-utc': 'change_records_y2031m04',
      'march-in-utc': 'change_records_y2031m03',
    });
    const [row] = await sql<
      { n: number }[]
    >`select count(*)::int as n from change_records where changed_at >= '2031-04-01T00:00:00Z' and changed_at < '2031-05-01T00:00:00Z'`;
    const n = row!.n;
    expect(n).to.equal(2);
  });

  it('takes a record from a clock far off into the default partition, never failing the write, and the sweep moves it into its own month and says so', async () => {
    const { sql, context, logs } = app.current;
    await record(sql, 'far-future', '2099-07-04T12:00:00Z');
    await record(sql, 'far-past', '1999-12-31T23:59:59Z');
    expect(await homes(sql)).to.deep.equal({
      'far-future': 'change_records_default',
      'far-past': 'change_records_default',
    });
    expect(await defaultRows(sql, CHANGE_RECORDS)).to.equal(2);

    await runSweep(context);
    expect(await homes(sql)).to.deep.equal({
      'far-future': 'change_records_y2099m07',
      'far-past': 'change_records_y1999m12',
    });
    expect(await defaultRows(sql, CHANGE_RECORDS)).to.equal(0);
    const report = logs
      .map((line) => JSON.parse(line) as { msg: string; table?: string; moved?: number })
      .find((l) => /outside the monthly partitions/.test(l.msg));
    expect(report).to.include({ table: 'change_records', moved: 2 });
    // the months made ahead of the sweep's clock exist too
    expect(await names(sql)).to.include(partitionName(CHANGE_RECORDS, addMonths(monthOf(context.now()), MONTHS_AHEAD)));
  });

  it("drops the months past the horizon whole, trims only the month holding it, and forgets the dropped records' queue entries", async () => {
    const { sql } = app.current;
    const now = new Date('2031-06-15T00:00:00Z');
    await keepAllPartitions(sql, new Date('2031-02-01T00:00:00Z'));
    await keepAllPartitions(sql, now);
    for (const [name, at] of [
      ['feb', '2031-02-10T00:00:00Z'],
      ['mar', '2031-03-20T00:00:00Z'],
      ['apr-expired', '2031-04-10T00:00:00Z'],
      ['apr-kept', '2031-04-20T00:00:00Z'],
      ['may', '2031-05-05T00:00:00Z'],
      ['jun', '2031-06-10T00:00:00Z'],
    ])
      await record(sql, name!, at!);
    await refreshStatsAggregate(sql, now);
    // 60 days before 15 June: 16 April (months of the other tests go as well: before the horizon too)
    const trimmed = await trimChangeHistory(sql, { defaultMs: 60 * DAY, byType: new Map() }, now, 100);
    expect(trimmed.partitions.filter((name) => name.includes('_y2031')).sort()).to.deep.equal([
      'change_records_y2031m02',
      'change_records_y2031m03',
      'change_stats_affected_y2031m02',
      'change_stats_affected_y2031m03',
      'change_stats_buckets_y2031m02',
      'change_stats_buckets_y2031m03',
      // the ways back of the inventory, which no read may go back to past the horizon
      'ci_undo_y2031m02',
      'ci_undo_y2031m03',
      'relationship_history_y2031m02',
      'relationship_history_y2031m03',
    ]);
    // what is left of the statistics is what is left of the records, by hour and by day
    const [stats] = await sql<{ hours: string[]; days: string[] }[]>`
      select array(select to_char(bucket at time zone 'UTC', 'MM-DD') from change_stats_buckets order by 1) as hours,
             array(select to_char(day at time zone 'UTC', 'MM-DD') || '=' || changes from change_stats_days order by 1) as days`;
    expect(stats).to.deep.equal({ hours: ['04-20', '05-05', '06-10'], days: ['04-20=1', '05-05=1', '06-10=1'] });
    expect(Object.keys(await homes(sql)).sort()).to.deep.equal(['apr-kept', 'jun', 'may']);
    expect(await names(sql))
      .to.include('change_records_y2031m04')
      .and.not.include('change_records_y2031m03');
    const [row] = await sql<{ orphans: number }[]>`
      select count(*)::int as orphans from change_stats_queue q where not exists (select 1 from change_records cr where cr.id = q.change_id)`;
    const orphans = row!.orphans;
    expect(orphans).to.equal(0);
    // idempotent
    expect(
      (await trimChangeHistory(sql, { defaultMs: 60 * DAY, byType: new Map() }, now, 100)).partitions,
    ).to.deep.equal([]);
  });

  it("keeps a month that a longer-kept type still needs, deleting only the expired types' records in it", async () => {
    const { sql } = app.current;
    const now = new Date('2032-06-15T00:00:00Z');
    await keepPartitions(sql, CHANGE_RECORDS, new Date('2032-02-01T00:00:00Z'));
    await record(sql, 'pod', '2032-02-10T00:00:00Z');
    await record(sql, 'node', '2032-02-10T00:00:00Z', 'k8s.node');
    const trimmed = await trimChangeHistory(
      sql,
      { defaultMs: 60 * DAY, byType: new Map([['k8s.node', 365 * DAY]]) },
      now,
      100,
    );
    expect(trimmed.partitions).not.to.include('change_records_y2032m02');
    expect(await homes(sql)).to.deep.equal({ node: 'change_records_y2032m02' });
  });

  it('applies a retention changed at runtime at the next sweep', async () => {
    const { sql, context, clock } = app.current;
    clock.now = new Date('2033-06-15T00:00:00Z');
    await keepPartitions(sql, CHANGE_RECORDS, new Date('2033-01-01T00:00:00Z'));
    await record(sql, 'jan', '2033-01-10T00:00:00Z');
    await record(sql, 'may', '2033-05-10T00:00:00Z');
    context.config.changeRetention = { defaultMs: 400 * DAY, byType: new Map() };
    await runSweep(context);
    expect(Object.keys(await homes(sql)).sort()).to.deep.equal(['jan', 'may']);
    context.config.changeRetention = { defaultMs: 90 * DAY, byType: new Map() };
    await runSweep(context);
    expect(Object.keys(await homes(sql))).to.deep.equal(['may']);
    expect(await names(sql)).not.to.include('change_records_y2033m01');
  });

  it('drops expired months of audit events the same way, keeping the month that holds the horizon', async () => {
    const { sql } = app.current;
    await keepPartitions(sql, AUDIT_EVENTS, new Date('2031-02-01T00:00:00Z'));
    await keepPartitions(sql, AUDIT_EVENTS, new Date('2031-04-01T00:00:00Z'));
    for (const at of ['2031-02-03T00:00:00Z', '2031-04-02T00:00:00Z', '2031-04-20T00:00:00Z']) {
      await sql`insert into audit_events (tenant_id, occurred_at, event_type, outcome, actor_kind) values (${DEFAULT_TENANT_ID}, ${at}::text::timestamptz, 'auth.failed', 'failure', 'anonymous')`;
    }
    expect(await trimAuditEvents(sql, new Date('2031-04-10T00:00:00Z'), 100)).to.be.at.least(1);
    const left = await sql<{ at: string; home: string }[]>`
      select to_char(occurred_at at time zone 'UTC', 'YYYY-MM-DD') as at, tableoid::regclass::text as home from audit_events order by occurred_at`;
    expect(left).to.deep.equal([{ at: '2031-04-20', home: 'audit_events_y2031m04' }]);
    const months = (await monthPartitions(sql, 'audit_events', AUDIT_EVENTS)).map((p) => p.name);
    expect(months).to.include('audit_events_y2031m04').and.not.include('audit_events_y2031m02');
  });

  (onRealPostgres ? it : it.skip)(
    'leaves a month whose rows cannot move within the bound in the default partition, whole, with the months after it, and moves them without one (skipped on the embedded database: PGlite does not enforce statement timeouts)',
    async function () {
      this.timeout(60_000);
      const { sql } = app.current;
      await sql`
        insert into change_records (tenant_id, ci_id, ci_name, ci_type, change_type, changed_at, changes, changed_fields)
        select ${DEFAULT_TENANT_ID}, gen_random_uuid(), 'bulk-' || g, 'k8s.pod', 'UPDATED', timestamptz '2099-05-01' + g * interval '10 seconds',
               '[{"field": "status", "old_value": "a", "new_value": "b"}]', '{status}'
        from generate_series(1, 50000) g`;
      const inDefault = async () =>
        (
          await sql<
            { n: number }[]
          >`select count(*)::int as n from change_records_default where changed_at >= '2099-05-01' and changed_at < '2099-06-01'`
        )[0]!.n;
      expect(await inDefault()).to.equal(50_000);

      const now = new Date('2099-05-10T00:00:00Z');
      const retries = new PartitionRetries(sql);
      const bounded = await keepPartitions(sql, CHANGE_RECORDS, now, { moveTimeoutMs: 1, retries });
      // one try: each month after it would scan the same default partition, with writers waiting
      const ahead = [6, 7, 8].map((m) => `change_records_y2099m0${m}`);
      expect(bounded.deferred).to.deep.equal(['change_records_y2099m05', ...ahead]);
      expect(bounded.created).to.deep.equal([]);
      expect(await names(sql)).not.to.include.members(['change_records_y2099m05', ...ahead]);
      expect(await inDefault()).to.equal(50_000);
      const [all] = await sql<
        { n: number }[]
      >`select count(distinct ci_name)::int as n from change_records where ci_name like 'bulk-%'`;
      expect(all?.n).to.equal(50_000);

      // the next sweeps leave it untried until its retry is due, though they could move it now
      const waiting = await keepPartitions(sql, CHANGE_RECORDS, new Date(now.getTime() + RETRY_FIRST_WAIT_MS - 1000), {
        moveTimeoutMs: 0,
        retries,
      });
      expect(waiting.deferred).to.deep.equal(['change_records_y2099m05', ...ahead]);
      expect(await inDefault()).to.equal(50_000);

      const unbounded = await keepPartitions(sql, CHANGE_RECORDS, new Date(now.getTime() + RETRY_FIRST_WAIT_MS), {
        moveTimeoutMs: 0,
        retries,
      });
      expect(unbounded.deferred).to.deep.equal([]);
      expect(unbounded.created).to.deep.equal(['change_records_y2099m05', ...ahead]);
      expect(unbounded.movedFromDefault).to.equal(50_000);
      expect(await inDefault()).to.equal(0);
      const [home] = await sql<{ home: string; n: number }[]>`
        select tableoid::regclass::text as home, count(*)::int as n from change_records where ci_name like 'bulk-%' group by 1`;
      expect(home).to.deep.equal({ home: 'change_records_y2099m05', n: 50_000 });
      await sql`delete from change_records where ci_name like 'bulk-%'`;
    },
  );

  it('tries a deferred month again only when its retry is due, the months after it with it, and forgets it once made', async () => {
    const { sql } = app.current;
    await record(sql, 'late', '2031-01-10T00:00:00Z');
    await record(sql, 'later', '2031-02-10T00:00:00Z');
    const now = new Date('2031-06-10T00:00:00Z');
    // as a try of January that ran out of time leaves it, in another process
    await new PartitionRetries(sql).deferred('change_records_y2031m01', now);
    const retries = new PartitionRetries(sql);
    const early = await keepPartitions(sql, CHANGE_RECORDS, new Date(now.getTime() + RETRY_FIRST_WAIT_MS - 1), {
      retries,
    });
    expect(early.created).to.deep.equal([
      'change_records_y2031m06',
      'change_records_y2031m07',
      'change_records_y2031m08',
      'change_records_y2031m09',
    ]);
    expect(early.deferred).to.deep.equal(['change_records_y2031m01', 'change_records_y2031m02']);
    expect(await homes(sql)).to.include({ late: 'change_records_default', later: 'change_records_default' });
    const due = await keepPartitions(sql, CHANGE_RECORDS, new Date(now.getTime() + RETRY_FIRST_WAIT_MS), { retries });
    expect(due.created).to.deep.equal(['change_records_y2031m01', 'change_records_y2031m02']);
    expect(due.deferred).to.deep.equal([]);
    expect(await sql`select partition_name from partition_retries`).to.deep.equal([]);
    expect(await homes(sql)).to.include({ late: 'change_records_y2031m01', later: 'change_records_y2031m02' });
    await sql`delete from change_records where ci_name in ('late', 'later')`;
  });

  it('forgets the retry of a month that an upkeep without a schedule made (cinv migrate)', async () => {
    const { sql } = app.current;
    await record(sql, 'forced', '2032-01-10T00:00:00Z');
    const now = new Date('2032-06-10T00:00:00Z');
    await new PartitionRetries(sql).deferred('change_records_y2032m01', now);
    const made = await keepPartitions(sql, CHANGE_RECORDS, now, { moveTimeoutMs: 0 });
    expect(made.created).to.include('change_records_y2032m01');
    expect(await sql`select partition_name from partition_retries`).to.deep.equal([]);
    await sql`delete from change_records where ci_name = 'forced'`;
  });

  it('waits an hour before the second try of a month, then twice as long after each further one, never more than a day, whichever process asks', async () => {
    const { sql } = app.current;
    const name = 'change_records_y2031m01';
    let at = Date.parse('2031-06-10T00:00:00Z');
    const waits: number[] = [];
    for (let i = 0; i < 8; i++) {
      // each try from a process of its own: the schedule is the database's
      await new PartitionRetries(sql).deferred(name, new Date(at));
      const retries = new PartitionRetries(sql);
      let wait = 0;
      while (!(await retries.due(name, new Date(at + wait)))) wait += 15 * 60_000;
      waits.push(wait / 3_600_000);
      at += wait;
    }
    expect(waits).to.deep.equal([1, 2, 4, 8, 16, 24, 24, 24]);
    expect(RETRY_FIRST_WAIT_MS).to.equal(3_600_000);
    expect(RETRY_MAX_WAIT_MS).to.equal(24 * 3_600_000);
    // a second process that tried at the same moment, not due by then, does not double the wait again
    const retries = new PartitionRetries(sql);
    await retries.deferred(name, new Date(at));
    await retries.deferred(name, new Date(at + 60_000));
    expect(await retries.due(name, new Date(at + 24 * 3_600_000 - 1))).to.equal(false);
    expect(await retries.due(name, new Date(at + 24 * 3_600_000))).to.equal(true);
    expect(await retries.due('change_records_y2031m02', new Date(at))).to.equal(true);
    await retryOver(sql, name);
    expect(await retries.due(name, new Date(at))).to.equal(true);
  });

  it('makes only the months writes go to when asked, leaving older months in the default partition to the sweep', async () => {
    const { sql } = app.current;
    await record(sql, 'stray', '2031-01-10T00:00:00Z');
    const upkeep = await keepPartitions(sql, CHANGE_RECORDS, new Date('2031-06-10T00:00:00Z'), { aheadOnly: true });
    expect(upkeep.created).to.deep.equal([
      'change_records_y2031m06',
      'change_records_y2031m07',
      'change_records_y2031m08',
      'change_records_y2031m09',
    ]);
    expect(await homes(sql)).to.include({ stray: 'change_records_default' });
    const swept = await keepPartitions(sql, CHANGE_RECORDS, new Date('2031-06-10T00:00:00Z'));
    expect(swept.created).to.deep.equal(['change_records_y2031m01']);
    expect(await homes(sql)).to.include({ stray: 'change_records_y2031m01' });
    await sql`delete from change_records where ci_name = 'stray'`;
  });

  (onRealPostgres ? describe : describe.skip)(
    'beside concurrent writers (skipped on the embedded database: PGlite has one session)',
    () => {
      it('creates months and drops expired ones while other sessions keep writing, losing no write', async function () {
        this.timeout(60_000);
        const { sql } = app.current;
        const writers = postgres(REAL_DATABASE_URL!, { max: 4, onnotice: () => {} });
        try {
          await keepPartitions(sql, CHANGE_RECORDS, new Date('2034-01-01T00:00:00Z'));
          await record(sql, 'expired', '2034-01-05T00:00:00Z');
          let stop = false;
          let written = 0;
          const writing = Array.from({ length: 4 }, async (_, w) => {
            for (let i = 0; !stop; i++) {
              // into the months being created, a month being kept, and the default until its month exists
              const at = new Date(Date.UTC(2034, 2 + (i % 14), 1 + (i % 27), w)).toISOString();
              await record(writers as unknown as Sql, `w${w}-${i}`, at);
              written++;
            }
          });
          // the writers are under way before the first month is made
          // (a writer's failure ends the wait with its error)
          while (written < 20)
            await Promise.race([new Promise((resolve) => setTimeout(resolve, 5)), Promise.all(writing)]);
          const before = written;
          for (let step = 0; step < 14; step++) {
            await keepPartitions(sql, CHANGE_RECORDS, new Date(Date.UTC(2034, 1 + step, 1)));
            // 30 days before 15 March: January goes whole, while the writers write from March on
            if (step === 3) {
              const trimmed = await trimChangeHistory(
                sql,
                { defaultMs: 30 * DAY, byType: new Map() },
                new Date('2034-03-15T00:00:00Z'),
                100,
              );
              expect(trimmed.partitions).to.include('change_records_y2034m01');
            }
          }
          const during = written - before;
          stop = true;
          await Promise.all(writing);
          const [row] = await sql<
            { n: number }[]
          >`select count(*)::int as n from change_records where ci_name like 'w%'`;
          const n = row!.n;
          expect(n).to.equal(written);
          expect(during, 'writes while the months were made and dropped').to.be.greaterThan(0);
          expect(Object.keys(await homes(sql))).not.to.include('expired');
          await keepPartitions(sql, CHANGE_RECORDS, new Date('2035-03-01T00:00:00Z'));
          expect(await defaultRows(sql, CHANGE_RECORDS)).to.equal(0);
        } finally {
          await writers.end();
        }
      });
    },
  );
});
