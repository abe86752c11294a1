import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { connectServer, type RawDatabase, type Sql } from '../../../src/platform/db/database.js';
import { hostEmbedded } from '../../../src/platform/db/embedded.js';
import { listMigrations, migrate } from '../../../src/platform/db/migrate.js';
import { migrateIntoPartitions, pendingPartitionMigrations } from '../../../src/platform/db/partition-migration.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { ROOT, runCli } from '../../support/cli.js';
import { onRealPostgres } from '../../support/db.js';
import { createScratchDatabase } from '../../support/scratch-db.js';

/** A database of its own: a second PGlite in memory, or a scratch database on the server. */
async function ownDatabase(): Promise<{ db: RawDatabase; url?: string; drop(): Promise<void> }> {
  if (onRealPostgres) {
    const scratch = await createScratchDatabase('cinv_partmig');
    const db = connectServer(scratch.url, { poolSize: 4, acquireTimeoutMs: 5000, statementTimeoutMs: 0 });
    return { db, url: scratch.url, drop: async () => (await db.close(), await scratch.drop()) };
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'cinv-partmig-'));
  const db = await hostEmbedded({ pgDataDir: undefined, socketPath: path.join(dir, '.s.PGSQL.5432') });
  return { db, drop: async () => (await db.close(), rmSync(dir, { recursive: true, force: true })) };
}

/** The schema as it was before history was partitioned: migrations up to 0015. */
async function migrateToUnpartitioned(sql: Sql): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'cinv-legacy-sql-'));
  try {
    for (const migration of (await listMigrations()).filter((m) => m.version <= 15))
      copyFileSync(migration.file, path.join(dir, path.basename(migration.file)));
    await migrate(sql, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `n` change records over January to March 2031 (with their statistics queue entries, as written then) and `n / 10` audit events. */
async function fillLegacy(sql: Sql, n: number): Promise<void> {
  await sql`
    insert into change_records (tenant_id, ci_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields, search_vector)
    select ${DEFAULT_TENANT_ID}, md5(i::text)::uuid, 'pod-' || i, 'ns-' || (i % 7), 'k8s.pod', 'UPDATED',
           '2031-01-01T00:00:00Z'::timestamptz + (i * interval '89 days' / ${n}),
           jsonb_build_array(jsonb_build_object('field', 'spec.replicas', 'old_value', i, 'new_value', i + 1)), '{spec.replicas}',
           to_tsvector('simple', 'pod-' || i)
    from generate_series(1, ${n}) as i`;
  await sql`insert into change_stats_queue (change_id) select id from change_records where id % 10 = 0`;
  await sql`
    insert into audit_events (tenant_id, occurred_at, event_type, outcome, actor_kind, details)
    select ${DEFAULT_TENANT_ID}, '2031-01-01T00:00:00Z'::timestamptz + (i * interval '1 day'), 'auth.failed', 'failure', 'anonymous', jsonb_build_object('i', i)
    from generate_series(1, ${Math.ceil(n / 10)}) as i`;
}

/** An installation from before partitioning holding `n` records, upgraded (the move pending), handed to `work` and dropped after. */
async function withUpgradedInstallation(
  n: number,
  work: (own: { db: RawDatabase; url?: string }) => Promise<void>,
): Promise<void> {
  const own = await ownDatabase();
  try {
    await migrateToUnpartitioned(own.db.sql);
    await fillLegacy(own.db.sql, n);
    await migrate(own.db.sql);
    await work(own);
  } finally {
    await own.drop();
  }
}

const relkind = async (sql: Sql, name: string) =>
  (await sql<{ relkind: string }[]>`select relkind from pg_class where relname = ${name}`)[0]?.relkind ?? null;

async function writeRecord(sql: Sql, name: string, at: string): Promise<void> {
  await sql`
    insert into change_records (tenant_id, ci_id, ci_name, ci_type, change_type, changed_at, changes, changed_fields)
    values (${DEFAULT_TENANT_ID}, gen_random_uuid(), ${name}, 'k8s.pod', 'UPDATED', ${at}::text::timestamptz, '[]', '{}')`;
}

describe(`moving existing history into partitions online (${onRealPostgres ? 'PostgreSQL server' : 'embedded database'})`, function () {
  this.timeout(120_000);

  it('copies in batches while writes go on, swaps, and compares count and checksum: nothing lost, nothing twice', async () => {
    await withUpgradedInstallation(3000, async ({ db: { sql } }) => {
      expect((await pendingPartitionMigrations(sql)).map((m) => [m.table_name, m.status])).to.deep.equal([
        ['audit_events', 'copying'],
        ['change_records', 'copying'],
      ]);
      expect(await relkind(sql, 'change_records')).to.equal('r');
      const [queue] = await sql<
        { missing: number }[]
      >`select count(*) filter (where changed_at is null)::int as missing from change_stats_queue`;
      expect(queue!.missing).to.equal(0);

      // the service goes on writing the current table: an insert, an update, a delete, all mirrored
      await writeRecord(sql, 'before-copy', '2031-03-30T12:00:00Z');
      await sql`update change_records set search_vector = to_tsvector('simple', 'renamed') where ci_name = 'pod-5'`;
      await sql`delete from change_records where ci_name = 'pod-6'`;

      const during: Promise<void>[] = [];
      let batches = 0;
      const outcomes = await migrateIntoPartitions(sql, {
        batchSize: 500,
        progress: {
          phase: () => undefined,
          copied: (table) => {
            if (table === 'change_records')
              during.push(writeRecord(sql, `during-${++batches}`, '2031-02-15T00:00:00Z'));
          },
        },
      });
      await Promise.all(during);
      expect(batches).to.be.greaterThan(5);
      expect(outcomes.map((o) => [o.table, o.rows])).to.deep.equal([
        ['audit_events', 300],
        ['change_records', 3000 + 1 - 1 + batches],
      ]);
      expect(await relkind(sql, 'change_records')).to.equal('p');
      expect(await relkind(sql, 'change_records_legacy')).to.equal(null);
      expect(await relkind(sql, 'audit_events')).to.equal('p');
      expect(await pendingPartitionMigrations(sql)).to.deep.equal([]);

      const [after] = await sql<{ rows: number; ids: number; renamed: number; gone: number; homes: string[] }[]>`
        select count(*)::int as rows, count(distinct id)::int as ids,
               count(*) filter (where ci_name = 'pod-5' and search_vector @@ 'renamed'::tsquery)::int as renamed,
               count(*) filter (where ci_name = 'pod-6')::int as gone,
               array_agg(distinct tableoid::regclass::text order by tableoid::regclass::text) as homes
        from change_records`;
      expect(after).to.deep.equal({
        rows: 3000 + batches,
        ids: 3000 + batches,
        renamed: 1,
        gone: 0,
        homes: ['change_records_y2031m01', 'change_records_y2031m02', 'change_records_y2031m03'],
      });
      // ids go on from the old table's
      const [top] = await sql<{ top: string }[]>`select max(id)::text as top from change_records`;
      await writeRecord(sql, 'after-swap', '2031-03-31T00:00:00Z');
      const [fresh] = await sql<{ id: string }[]>`select id::text from change_records where ci_name = 'after-swap'`;
      expect(BigInt(fresh!.id) > BigInt(top!.top)).to.equal(true);
      // and a second run finds nothing to do
      expect(await migrateIntoPartitions(sql, { batchSize: 500 })).to.deep.equal([]);
    });
  });

  (onRealPostgres ? it : it.skip)(
    'resumes after the mover is killed with SIGKILL mid-copy, and ends with every row once (skipped on the embedded database: one process holds it)',
    async () => {
      await withUpgradedInstallation(60_000, async (own) => {
        const { sql } = own.db;
        const env = {
          DATABASE_URL: own.url,
          CINV_SECRET: 'partition-test-secret-partition-test-0123',
          LOG_LEVEL: 'warn',
          PORT: '0',
        };
        const child = spawn(
          process.execPath,
          ['--import', 'tsx', path.join(ROOT, 'src/cli.ts'), 'migrate', '--batch-size', '200'],
          {
            cwd: ROOT,
            env: { ...process.env, CINV_TEST_DATABASE_URL: undefined, ...env },
            stdio: 'ignore',
          },
        );
        const exited = new Promise((resolve) => child.on('exit', resolve));
        for (let copied = 0; copied < 5000;) {
          await new Promise((resolve) => setTimeout(resolve, 50));
          const [row] = await sql<
            { copied: string }[]
          >`select copied::text from partition_migrations where table_name = 'change_records'`;
          copied = Number(row?.copied ?? 0);
        }
        child.kill('SIGKILL');
        await exited;
        const [state] = await sql<
          { status: string; copied: string }[]
        >`select status, copied::text from partition_migrations where table_name = 'change_records'`;
        expect(state!.status).to.equal('copying');
        expect(Number(state!.copied)).to.be.within(5000, 59_999);

        const resumed = await runCli(['migrate'], env);
        expect(resumed.code, resumed.stderr).to.equal(0);
        expect(resumed.stdout).to.include('change_records: partitioned, 60000 rows moved');
        const [after] = await sql<
          { rows: number; ids: number }[]
        >`select count(*)::int as rows, count(distinct id)::int as ids from change_records`;
        expect(after).to.deep.equal({ rows: 60_000, ids: 60_000 });
      });
    },
  );

  (onRealPostgres ? it : it.skip)(
    'plans without JIT on a server pool: a lookup per queued record across the months is not compiled (skipped on the embedded database: built without JIT)',
    async () => {
      await withUpgradedInstallation(8000, async ({ db: { sql } }) => {
        await migrateIntoPartitions(sql, { batchSize: 1000 });
        await sql`insert into change_stats_queue (change_id, changed_at) select id, changed_at from change_records on conflict do nothing`;
        await sql`analyze change_stats_queue`;
        const plan = await sql.unsafe<{ 'QUERY PLAN': string }[]>(
          `explain (analyze) select count(*) from change_stats_queue q
         cross join lateral (select * from change_records r where r.id = q.change_id and r.changed_at = q.changed_at offset 0) cr`,
        );
        const text = plan.map((row) => row['QUERY PLAN']).join('\n');
        expect(text).to.match(/Append/);
        expect(text).not.to.match(/JIT:/);
      });
    },
  );
});
