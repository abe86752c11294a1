import type { Sql } from './database.js';
import {
  addMonths,
  createMonthPartition,
  monthOf,
  monthPartitions,
  TIME_PARTITIONED,
  type TimePartitioned,
} from './partitions.js';

/** The state of one table's move into partitions (table partition_migrations). */
export interface PartitionMigration {
  table_name: string;
  status: 'copying' | 'swapped' | 'completed' | 'failed';
  last_id: string;
  copied: string;
  upto_id: string | null;
  legacy_rows: string | null;
  checksum: string | null;
  error: string | null;
}

export interface MigrationProgress {
  /** A phase begins: `total` rows to copy (0 for the swap, the comparison and the drop of the old table). */
  phase(table: string, phase: 'copy' | 'swap' | 'compare' | 'drop', total: number): void;
  copied(table: string, done: number): void;
}

export interface MigrationOutcome {
  table: string;
  rows: number;
  checksum: string;
  repaired: number;
}

export class PartitionMigrationError extends Error {}

/** The moves not yet completed, in the order they are run. */
export async function pendingPartitionMigrations(sql: Sql): Promise<PartitionMigration[]> {
  const exists =
    await sql`select 1 from pg_class where relname = 'partition_migrations' and relnamespace = current_schema()::regnamespace`;
  if (exists.length === 0) return [];
  return sql<PartitionMigration[]>`
    select table_name, status, last_id::text, copied::text, upto_id::text, legacy_rows::text, checksum, error
    from partition_migrations where status <> 'completed' order by table_name`;
}

/**
 * Moves the rows of each table still waiting into its partitioned successor (`<table>_next`,
 * sql/0016_partitioned_history.sql), while the service goes on reading and writing the current
 * table: rows are copied by id in batches, each batch committed with the position it reached, so an
 * interrupted run resumes where it stopped; writes made meanwhile reach the new table by the mirror
 * trigger. Then the tables swap names in one short transaction, and the rows of the old table are
 * compared with the new one by count and checksum; any difference is repaired from the old table
 * and compared again before the old table is dropped.
 */
export async function migrateIntoPartitions(
  sql: Sql,
  options: { batchSize: number; progress?: MigrationProgress; signal?: AbortSignal },
): Promise<MigrationOutcome[]> {
  const outcomes: MigrationOutcome[] = [];
  for (const pending of await pendingPartitionMigrations(sql)) {
    const table = TIME_PARTITIONED.find((t) => t.name === pending.table_name);
    if (!table) throw new PartitionMigrationError(`partition_migrations names an unknown table ${pending.table_name}`);
    // one mover per table at a time: a second `cinv migrate` waits here, then finds the work done.
    // The lock is held by a connection of its own, which a killed mover loses at once. A pool of
    // one connection (the embedded database, a single session) has no other session to exclude.
    const lockKey = `cinv partition migration ${table.name}`;
    const holder = (sql.options.max ?? 1) > 1 ? await sql.reserve() : undefined;
    try {
      if (holder) await holder`select pg_advisory_lock(hashtext(${lockKey}))`;
      const [state] = await sql<PartitionMigration[]>`
        select table_name, status, last_id::text, copied::text, upto_id::text, legacy_rows::text, checksum, error
        from partition_migrations where table_name = ${table.name}`;
      if (!state || state.status === 'completed') continue;
      if (state.status === 'copying') {
        await copyRows(sql, table, state, options);
        if (options.signal?.aborted) return outcomes;
        // the months' statistics before the first query is planned on them: autovacuum analyses a
        // month only once enough of it changed, and a query planned blind may read a month whole
        await sql.unsafe(`analyze ${table.name}_next`);
        options.progress?.phase(table.name, 'swap', 0);
        await swap(sql, table);
      }
      options.progress?.phase(table.name, 'compare', 0);
      outcomes.push(await compareAndFinish(sql, table, options.progress));
    } finally {
      if (holder) {
        await holder`select pg_advisory_unlock(hashtext(${lockKey}))`.catch(() => undefined);
        holder.release();
      }
    }
  }
  return outcomes;
}

/** The months the current table's rows span: from the per-tenant earliest to the latest. */
async function monthsSpanned(sql: Sql, table: TimePartitioned): Promise<Date[]> {
  const tenants = await sql<{ id: string }[]>`select id from tenants`;
  let first: Date | undefined;
  let last: Date | undefined;
  for (const { id } of tenants) {
    // each bound read from the (tenant, time) index, one tenant at a time
    const [row] = await sql.unsafe<{ first: Date | null; last: Date | null }[]>(
      `select (select min(${table.column}) from ${table.name} where tenant_id = $1) as first,
              (select max(${table.column}) from ${table.name} where tenant_id = $1) as last`,
      [id],
    );
    if (row?.first && (!first || row.first < first)) first = row.first;
    if (row?.last && (!last || row.last > last)) last = row.last;
  }
  if (!first || !last) return [];
  const months: Date[] = [];
  for (let month = monthOf(first); month <= last; month = addMonths(month, 1)) months.push(month);
  return months;
}

async function copyRows(
  sql: Sql,
  table: TimePartitioned,
  state: PartitionMigration,
  options: { batchSize: number; progress?: MigrationProgress; signal?: AbortSignal },
): Promise<void> {
  const parent = `${table.name}_next`;
  const existing = new Set((await monthPartitions(sql, parent, table)).map((p) => p.from.getTime()));
  for (const month of await monthsSpanned(sql, table)) {
    if (!existing.has(month.getTime())) await createMonthPartition(sql, table, parent, month);
  }
  let upto = state.upto_id;
  if (upto === null) {
    // rows above this id are written after the trigger began mirroring, and reach the new table by it
    const [row] = await sql.unsafe<{ upto: string }[]>(`select coalesce(max(id), 0)::text as upto from ${table.name}`);
    upto = row!.upto;
    await sql`update partition_migrations set upto_id = ${upto}::bigint where table_name = ${table.name}`;
  }
  let last = state.last_id;
  let copied = Number(state.copied);
  const [left] = await sql.unsafe<{ n: number }[]>(
    `select count(*)::int as n from ${table.name} where id > $1 and id <= $2`,
    [last, upto],
  );
  options.progress?.phase(table.name, 'copy', copied + (left?.n ?? 0));
  options.progress?.copied(table.name, copied);
  while (!options.signal?.aborted) {
    // one statement: the batch and the position it reached commit together
    const [batch] = await sql.unsafe<{ last: string | null; rows: number }[]>(
      `with batch as (
           select * from ${table.name} where id > $1 and id <= $2 order by id limit ${options.batchSize}
         ), copied as (
           insert into ${parent} overriding system value select * from batch on conflict do nothing
         ), moved as (
           update partition_migrations set last_id = coalesce((select max(id) from batch), last_id),
                  copied = copied + (select count(*) from batch)
           where table_name = $3
         )
         select (select max(id) from batch)::text as last, (select count(*) from batch)::int as rows`,
      [last, upto, table.name],
    );
    if (!batch || batch.rows === 0) return;
    last = batch.last!;
    copied += batch.rows;
    options.progress?.copied(table.name, copied);
  }
}

/** The new table takes the name; a swap that cannot get its lock soon tries again rather than stall the service. */
async function swap(sql: Sql, table: TimePartitioned): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await sql.begin(async (tx) => {
        await tx`set local lock_timeout = '3s'`;
        await tx`select cinv_swap_partitioned(${table.name})`;
        await tx`update partition_migrations set status = 'swapped', swapped_at = now() where table_name = ${table.name}`;
      });
      return;
    } catch (error) {
      if ((error as { code?: string }).code !== '55P03' || attempt >= 20) throw error;
    }
  }
}

/** Count and an order-independent checksum of the rows up to `upto`, the row text hashed. */
async function fingerprint(sql: Sql, relation: string, upto: string): Promise<{ rows: number; checksum: string }> {
  const [row] = await sql.unsafe<{ rows: number; checksum: string }[]>(
    `select count(*)::int as rows, coalesce(sum(('x' || left(md5(t::text), 15))::bit(60)::bigint), 0)::text as checksum
     from ${relation} t where id <= $1`,
    [upto],
  );
  return row!;
}

async function compareAndFinish(
  sql: Sql,
  table: TimePartitioned,
  progress: MigrationProgress | undefined,
): Promise<MigrationOutcome> {
  const legacy = `${table.name}_legacy`;
  // the old table takes no writes since the swap: everything up to its last id must be in the new one
  const [top] = await sql.unsafe<{ upto: string }[]>(`select coalesce(max(id), 0)::text as upto from ${legacy}`);
  const upto = top!.upto;
  let before = await fingerprint(sql, legacy, upto);
  let after = await fingerprint(sql, table.name, upto);
  let repaired = 0;
  if (before.rows !== after.rows || before.checksum !== after.checksum) {
    repaired = await repair(sql, table, upto);
    before = await fingerprint(sql, legacy, upto);
    after = await fingerprint(sql, table.name, upto);
  }
  if (before.rows !== after.rows || before.checksum !== after.checksum) {
    const error = `${table.name}: ${after.rows} rows (checksum ${after.checksum}) against ${before.rows} (${before.checksum}) in ${legacy}, which is kept`;
    await sql`update partition_migrations set status = 'failed', error = ${error} where table_name = ${table.name}`;
    throw new PartitionMigrationError(error);
  }
  progress?.phase(table.name, 'drop', 0);
  // Dropping the old table removes its foreign key's triggers on tenants, which takes the strongest
  // lock on tenants: every request that reads tenants would queue behind the drop while it waits for
  // a long transaction there. So it waits briefly, and tries again a moment later.
  for (let attempt = 1; ; attempt++) {
    try {
      await sql.begin(async (tx) => {
        await tx`set local lock_timeout = '200ms'`;
        await tx.unsafe(`drop table ${legacy}`);
        await tx`update partition_migrations set status = 'completed', finished_at = now(), legacy_rows = ${before.rows},
                 checksum = ${before.checksum}, error = null where table_name = ${table.name}`;
      });
      break;
    } catch (error) {
      if ((error as { code?: string }).code !== '55P03' || attempt >= 300) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  return { table: table.name, rows: before.rows, checksum: before.checksum, repaired };
}

/** Makes the new table's rows up to `upto` equal the old table's: extra or differing rows removed, missing ones copied. */
async function repair(sql: Sql, table: TimePartitioned, upto: string): Promise<number> {
  const legacy = `${table.name}_legacy`;
  const removed = await sql.unsafe(
    `delete from ${table.name} n where n.id <= $1 and not exists (select 1 from ${legacy} l where l.id = n.id and l.* is not distinct from n.*)`,
    [upto],
  );
  const added = await sql.unsafe(
    `insert into ${table.name} overriding system value
     select * from ${legacy} l where l.id <= $1 and not exists (select 1 from ${table.name} n where n.id = l.id and n.${table.column} = l.${table.column})`,
    [upto],
  );
  return removed.count + added.count;
}
