import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { connectServer, embeddedClientOptions, type RawDatabase, type Sql } from '../../src/platform/db/database.js';
import { hostEmbedded } from '../../src/platform/db/embedded.js';
import { migrate } from '../../src/platform/db/migrate.js';
import { keepAllPartitions } from '../../src/platform/db/partitions.js';

/** Set by .ci/run for the second pass: a throwaway database on the real PostgreSQL server. */
export const REAL_DATABASE_URL = process.env.CINV_TEST_DATABASE_URL || undefined;
export const onRealPostgres = REAL_DATABASE_URL !== undefined;
export const TEST_SECRET = 'test-secret-test-secret-test-secret-0123';

let database: RawDatabase | undefined;
let probe: Sql | undefined;
let socketDir: string | undefined;

/**
 * The run's database, migrated once: PGlite in memory by default, the real server when asked.
 * This is the pool without admission control; test apps put their own gate in front of it.
 */
export async function testDatabase(): Promise<RawDatabase> {
  if (database) return database;
  let opened: RawDatabase;
  if (REAL_DATABASE_URL) {
    opened = connectServer(REAL_DATABASE_URL, { poolSize: 8, acquireTimeoutMs: 5000, statementTimeoutMs: 60_000 });
  } else {
    socketDir = mkdtempSync(path.join(tmpdir(), 'cinv-test-'));
    opened = await hostEmbedded({ pgDataDir: undefined, socketPath: path.join(socketDir, '.s.PGSQL.5432') });
  }
  await migrate(opened.sql);
  await keepAllPartitions(opened.sql, new Date());
  database = opened;
  return opened;
}

/**
 * A connection to the run's database as another process has one: its own session on the server,
 * or on the embedded database a connection through the socket that is not the hosting process's.
 */
export async function otherProcessConnection(): Promise<Sql> {
  await testDatabase();
  return REAL_DATABASE_URL
    ? postgres(REAL_DATABASE_URL, { max: 1, onnotice: () => {} })
    : postgres({ ...embeddedClientOptions(path.join(socketDir!, '.s.PGSQL.5432')), max: 1 });
}

/** One health-probe connection for the whole run, shared by every test app. */
export async function testProbe(): Promise<Sql> {
  probe ??= (await testDatabase()).connectOne();
  return probe;
}

export async function closeTestDatabase(): Promise<void> {
  await probe?.end({ timeout: 1 });
  probe = undefined;
  await database?.close();
  database = undefined;
  if (socketDir) rmSync(socketDir, { recursive: true, force: true });
}

const TABLES = [
  'outbox',
  'ci_undo',
  'ci_tombstones',
  'relationship_history',
  'pending_relationships',
  'relationships',
  'change_records',
  'ci_last_seen',
  'configuration_items',
  'api_key_scopes',
  'api_keys',
  'sessions',
  'audit_events',
  'data_scopes',
  'grants',
  'team_members',
  'teams',
  'users',
  'collection_runs',
  'source_credentials',
  'tenant_data_keys',
  'sources',
  'collectors',
  'change_stats_queue',
  'partition_retries',
  'change_stats_buckets',
  'change_stats_days',
  'change_stats_ci_last',
  'change_stats_affected',
  'search_reindex',
  'change_stats_snapshots',
  'ci_counts',
  'ci_type_counts',
  'ci_count_deltas',
  'baselines',
  'ci_versions',
  'change_feed',
  'subscription_deliveries',
  'subscriptions',
  'change_feed_pending',
  'identities',
  'identity_observations',
  'identity_keys',
  'identity_links',
  'identity_conflicts',
  'identity_decisions',
  'identity_settings',
  'identity_progress',
  'quality_queue',
  'ci_quality',
  'quality_count_deltas',
  'quality_counts',
  'quality_settings',
  'quality_rules',
  'ci_rule_results',
  'quality_rule_deltas',
  'quality_rule_counts',
  'quality_walks',
  'quality_source_lists',
  'quality_daily',
  'change_folds',
  'change_fold_heads',
  'change_settings',
  'change_rules',
  'change_rule_runs',
  'change_stats_kinds',
];

/**
 * Empties every tenant-owned table; the default tenant stays, as after migration. The end state is
 * that of one `truncate <every table> restart identity cascade`, but only the tables written since
 * their last truncate are truncated, partition by partition: each truncated relation (every
 * partition and index) costs new files, which on the server made a reset of untouched tables cost
 * more than most tests. A heap still zero bytes long has had no row since, not even a deleted or
 * rolled-back one; the sequences of the tables left alone are restarted when something drew from
 * them.
 */
export async function resetDatabase(sql: Sql): Promise<void> {
  await sql.unsafe(await resetStatement(sql));
  await sql`delete from tenants where slug <> 'default'`;
  await sql`update change_stats_state set refreshed_at = '-infinity'`;
}

const resetStatements = new WeakMap<Sql, Promise<string>>();

function resetStatement(sql: Sql): Promise<string> {
  let statement = resetStatements.get(sql);
  if (!statement) {
    statement = truncatedTogether(sql).then(resetBlock);
    resetStatements.set(sql, statement);
  }
  return statement;
}

/** TABLES and whatever a cascade from them reaches: the tables referencing them, transitively. */
async function truncatedTogether(sql: Sql): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`
    with recursive reached(oid) as (
      select oid from pg_class where oid = any(${TABLES}::regclass[])
      union
      select c.conrelid from pg_constraint c join reached r on c.confrelid = r.oid where c.contype = 'f'
    )
    select distinct coalesce(parent.inhparent, reached.oid)::regclass::text as name
    from reached left join pg_inherits parent on parent.inhrelid = reached.oid
    order by 1`;
  return rows.map((row) => row.name);
}

function resetBlock(tables: string[]): string {
  const list = tables.map((table) => `'${table}'`).join(', ');
  return `do $reset$
declare
  written text[];
  drawn record;
begin
  select coalesce(array_agg(leaf::regclass::text), '{}') into written
  from (
    select c.oid as leaf from pg_class c where c.oid = any(array[${list}]::regclass[]) and c.relkind = 'r'
    union all
    select p.relid from unnest(array[${list}]::regclass[]) as t, pg_partition_tree(t) as p where p.isleaf
  ) as leaves
  where pg_relation_size(leaf) > 0;
  if cardinality(written) > 0 then
    execute 'truncate ' || array_to_string(written, ', ') || ' restart identity cascade';
  end if;
  for drawn in
    select s.schemaname, s.sequencename
    from pg_sequences s
    join pg_depend d on d.objid = format('%I.%I', s.schemaname, s.sequencename)::regclass and d.deptype in ('a', 'i')
    where s.last_value is not null and d.refobjid = any(array[${list}]::regclass[])
  loop
    execute format('alter sequence %I.%I restart', drawn.schemaname, drawn.sequencename);
  end loop;
end $reset$`;
}
