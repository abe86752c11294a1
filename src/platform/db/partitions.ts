import type { Queryable, Sql } from './database.js';

/** A table partitioned by month of a time column (sql/0016_partitioned_history.sql, 0018_partitioned_statistics.sql, 0019_time_machine.sql). */
export interface TimePartitioned {
  name:
    | 'change_records'
    | 'audit_events'
    | 'change_stats_buckets'
    | 'change_stats_affected'
    | 'ci_undo'
    | 'relationship_history';
  column: 'changed_at' | 'occurred_at' | 'bucket' | 'at' | 'valid_to';
}

export const CHANGE_RECORDS: TimePartitioned = { name: 'change_records', column: 'changed_at' };
export const AUDIT_EVENTS: TimePartitioned = { name: 'audit_events', column: 'occurred_at' };
export const STATS_BUCKETS: TimePartitioned = { name: 'change_stats_buckets', column: 'bucket' };
export const STATS_AFFECTED: TimePartitioned = { name: 'change_stats_affected', column: 'bucket' };
/** Each write's way back to the CI row before it. */
export const CI_UNDO: TimePartitioned = { name: 'ci_undo', column: 'at' };
/** Relationships that are no more, by the moment they ended. */
export const RELATIONSHIP_HISTORY: TimePartitioned = { name: 'relationship_history', column: 'valid_to' };
export const TIME_PARTITIONED: readonly TimePartitioned[] = [
  CHANGE_RECORDS,
  AUDIT_EVENTS,
  STATS_BUCKETS,
  STATS_AFFECTED,
  CI_UNDO,
  RELATIONSHIP_HISTORY,
];

/** Months made ahead of the current one, so that the month turning never waits for a sweep. */
export const MONTHS_AHEAD = 3;
/** Months of the default partition moved into their own partitions by one sweep, at most. */
const MONTHS_MOVED_PER_SWEEP = 24;

/** The first moment (UTC) of the month holding `moment`. */
export const monthOf = (moment: Date): Date => new Date(Date.UTC(moment.getUTCFullYear(), moment.getUTCMonth(), 1));

export const addMonths = (month: Date, months: number): Date =>
  new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + months, 1));

/** `change_records_y2026m11`: the partition of one month; the name is where its bounds are read from. */
export const partitionName = (table: TimePartitioned, month: Date): string =>
  `${table.name}_y${month.getUTCFullYear()}m${String(month.getUTCMonth() + 1).padStart(2, '0')}`;

const defaultPartition = (table: TimePartitioned): string => `${table.name}_default`;

export interface MonthPartition {
  name: string;
  from: Date;
  to: Date;
}

/**
 * The partitioned table itself: `<table>` once migrated, `<table>_next` while `cinv migrate` still
 * moves the rows of the unpartitioned one. Null when neither is partitioned.
 */
export async function partitionedTable(sql: Queryable, table: TimePartitioned): Promise<string | null> {
  const [row] = await sql<{ relname: string }[]>`
    select relname from pg_class
    where relkind = 'p' and relname in (${table.name}, ${table.name + '_next'}) and relnamespace = current_schema()::regnamespace
    order by relname = ${table.name} desc limit 1`;
  return row?.relname ?? null;
}

/** The monthly partitions attached to the table, oldest first (those named by `partitionName`). */
export async function monthPartitions(
  sql: Queryable,
  parent: string,
  table: TimePartitioned,
): Promise<MonthPartition[]> {
  const rows = await sql<{ name: string }[]>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = ${parent}::regclass`;
  const pattern = new RegExp(`^${table.name}_y(\\d{4})m(\\d{2})$`);
  return rows
    .flatMap(({ name }) => {
      const match = pattern.exec(name);
      if (!match) return [];
      const from = new Date(Date.UTC(Number(match[1]), Number(match[2]) - 1, 1));
      return [{ name, from, to: addMonths(from, 1) }];
    })
    .sort((a, b) => a.from.getTime() - b.from.getTime());
}

/**
 * Makes the partition of `month` unless it exists, taking over whatever rows of that month the
 * default partition holds. Reads go on meanwhile; writes wait the few milliseconds it takes when
 * the month is empty, and for the move when it is not. `moveTimeoutMs` bounds each statement
 * (0: no bound); without it the connection's statement timeout applies. Returns the rows moved out
 * of the default.
 */
export async function createMonthPartition(
  sql: Sql,
  table: TimePartitioned,
  parent: string,
  month: Date,
  moveTimeoutMs?: number,
): Promise<number> {
  const name = partitionName(table, month);
  const from = monthOf(month);
  const to = addMonths(from, 1);
  return sql.begin(async (tx) => {
    await tx`set local lock_timeout = '10s'`;
    if (moveTimeoutMs !== undefined)
      await tx.unsafe(`set local statement_timeout = ${Math.max(0, Math.round(moveTimeoutMs))}`);
    const exists = async () =>
      (await tx`select 1 from pg_class where relname = ${name} and relnamespace = current_schema()::regnamespace`)
        .length > 0;
    if (await exists()) return 0;
    // writers wait for this short transaction (readers do not): a write routed to the default
    // partition before the attach would otherwise fail its changed partition constraint after it
    await tx.unsafe(`lock table ${parent} in share row exclusive mode`);
    // another process may have made it while this one waited for the lock
    if (await exists()) return 0;
    await tx.unsafe(`create table ${name} (like ${parent} including defaults including constraints)`);
    const moved = await tx.unsafe(
      `with moved as (delete from ${defaultPartition(table)} where ${table.column} >= $1 and ${table.column} < $2 returning *)
       insert into ${name} select * from moved`,
      [from.toISOString(), to.toISOString()],
    );
    await tx.unsafe(
      `alter table ${parent} attach partition ${name} for values from ('${from.toISOString()}') to ('${to.toISOString()}')`,
    );
    return moved.count;
  });
}

export interface PartitionUpkeep {
  created: string[];
  movedFromDefault: number;
  /**
   * Months left for later: moving their rows out of the default partition ran past the statement
   * timeout, or the table's lock was not had in time. Their rows stay where they are, readable and
   * whole; `cinv migrate` moves them without a time bound.
   */
  deferred: string[];
  /** Rows the default partition still holds after the upkeep (the sweep reports them). */
  defaultRows: number;
}

export interface UpkeepOptions {
  /** Each statement's bound while a month's rows move out of the default partition (0: none); the connection's by default. */
  moveTimeoutMs?: number;
  /** Only the current month and those ahead: older months found in the default partition are left to the sweep. */
  aheadOnly?: boolean;
  /** When months deferred before are tried again; without it every upkeep tries them (`cinv migrate`). */
  retries?: PartitionRetries;
}

/** The first wait before a deferred month is tried again, and the longest. */
export const RETRY_FIRST_WAIT_MS = 3_600_000;
export const RETRY_MAX_WAIT_MS = 24 * 3_600_000;

/**
 * When each deferred month is tried again: an hour after the try that ran out of time, then twice
 * as long after each further one, up to a day. Every try holds back the table's writers for as long
 * as the statement timeout, so a month that is too large to move in time must not cost them that
 * at every sweep until someone runs `cinv migrate`. The schedule is kept in the database
 * (`partition_retries`): every process on it follows the same one, across restarts.
 */
export class PartitionRetries {
  constructor(private readonly sql: Queryable) {}

  async due(name: string, now: Date): Promise<boolean> {
    const [row] = await this.sql<{ due: boolean }[]>`
      select next_try_at <= ${now}::timestamptz as due from partition_retries where partition_name = ${name}`;
    return row?.due ?? true;
  }

  /**
   * After a try that ran out of time: the wait doubles. A try that was not due (another process's,
   * made at the same moment) leaves the schedule as it is.
   */
  async deferred(name: string, now: Date): Promise<void> {
    await this.sql`
      insert into partition_retries as r (partition_name, wait_ms, next_try_at)
      values (${name}, ${RETRY_FIRST_WAIT_MS}, ${now}::timestamptz + ${RETRY_FIRST_WAIT_MS}::float8 * interval '1 millisecond')
      on conflict (partition_name) do update
      set wait_ms = least(${RETRY_MAX_WAIT_MS}, r.wait_ms * 2),
          next_try_at = ${now}::timestamptz + least(${RETRY_MAX_WAIT_MS}, r.wait_ms * 2)::float8 * interval '1 millisecond'
      where r.next_try_at <= ${now}::timestamptz`;
  }
}

/** A month is made, by whichever upkeep (`cinv migrate` makes months without a schedule): its waiting is over. */
export async function retryOver(sql: Queryable, name: string): Promise<void> {
  await sql`delete from partition_retries where partition_name = ${name}`;
}

/**
 * The work's result, or undefined when it ran into a statement or lock timeout, which rolls its
 * transaction back whole; any other failure is thrown.
 */
async function inTime<T>(work: Promise<T>): Promise<T | undefined> {
  try {
    return await work;
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === '57014' || code === '55P03') return undefined;
    throw error;
  }
}

/**
 * The sweep's partition upkeep for one table: the current month and MONTHS_AHEAD after it exist,
 * and months found in the default partition get their own (oldest first, a bounded number a time).
 * A month that cannot be made in time is deferred with every month after it, untried: attaching
 * any month scans the default partition, which is what took too long, and writers wait for each
 * try; with `retries`, a deferred month is tried again only when its retry is due. Writes to a
 * month without a partition land in the default one, so nothing waits for it.
 */
export async function keepPartitions(
  sql: Sql,
  table: TimePartitioned,
  now: Date,
  options: UpkeepOptions = {},
): Promise<PartitionUpkeep> {
  const upkeep: PartitionUpkeep = { created: [], movedFromDefault: 0, deferred: [], defaultRows: 0 };
  const parent = await partitionedTable(sql, table);
  if (!parent) return upkeep;
  const existing = new Set((await monthPartitions(sql, parent, table)).map((p) => p.from.getTime()));
  const wanted = Array.from({ length: MONTHS_AHEAD + 1 }, (_, i) => addMonths(monthOf(now), i));
  const stray = options.aheadOnly
    ? []
    : await sql.unsafe<{ month: Date }[]>(
        `select distinct date_trunc('month', ${table.column}, 'UTC') as month from ${defaultPartition(table)} order by 1 limit ${MONTHS_MOVED_PER_SWEEP}`,
      );
  for (const month of [...wanted, ...stray.map((row) => new Date(row.month))]) {
    if (existing.has(month.getTime())) continue;
    existing.add(month.getTime());
    const name = partitionName(table, month);
    // after one month ran out of time the others wait untried (see above), as do all while its retry is not due
    const due = upkeep.deferred.length === 0 && ((await options.retries?.due(name, now)) ?? true);
    const moved = due
      ? await inTime(createMonthPartition(sql, table, parent, month, options.moveTimeoutMs))
      : undefined;
    if (moved === undefined) {
      if (due) await options.retries?.deferred(name, now);
      upkeep.deferred.push(name);
    } else {
      await retryOver(sql, name);
      upkeep.movedFromDefault += moved;
      upkeep.created.push(name);
    }
  }
  upkeep.defaultRows = await defaultRows(sql, table);
  return upkeep;
}

/** Rows in the default partition, counted up to `cap` (it is meant to be empty). */
export async function defaultRows(sql: Queryable, table: TimePartitioned, cap = 100_000): Promise<number> {
  const [row] = await sql.unsafe<{ n: number }[]>(
    `select count(*)::int as n from (select 1 from ${defaultPartition(table)} limit ${cap}) d`,
  );
  return row?.n ?? 0;
}

/**
 * Drops every monthly partition that ends by `before`: all its rows are expired, and dropping a
 * table frees its space at once where deleting rows would leave work for vacuum. The drop holds the
 * table's strongest lock for a moment; waiting longer than `lockTimeoutMs` for it (behind a long
 * export, say) gives up until the next sweep rather than queue every reader behind it.
 * `beforeDrop` runs in the transaction of each drop. Returns the partitions dropped and the rows
 * they held (as estimated by the statistics).
 */
export async function dropPartitionsBefore(
  sql: Sql,
  table: TimePartitioned,
  before: Date,
  options: { lockTimeoutMs?: number; beforeDrop?: (tx: Queryable, partition: MonthPartition) => Promise<unknown> } = {},
): Promise<{ dropped: string[]; rows: number }> {
  const result = { dropped: [] as string[], rows: 0 };
  const parent = await partitionedTable(sql, table);
  // while rows are being moved into the partitioned table, expired rows are deleted from the current one instead
  if (parent !== table.name) return result;
  for (const partition of await monthPartitions(sql, parent, table)) {
    if (partition.to.getTime() > before.getTime()) break;
    const rows = await sql.begin(async (tx) => {
      await tx.unsafe(`set local lock_timeout = ${Math.max(1, Math.round(options.lockTimeoutMs ?? 2000))}`);
      const [estimate] = await tx<
        { rows: number }[]
      >`select greatest(reltuples, 0)::bigint as rows from pg_class where relname = ${partition.name}`;
      await options.beforeDrop?.(tx, partition);
      await tx.unsafe(`drop table ${partition.name}`);
      return Number(estimate?.rows ?? 0);
    });
    result.dropped.push(partition.name);
    result.rows += rows;
  }
  return result;
}

/** keepPartitions for every time-partitioned table. */
export async function keepAllPartitions(
  sql: Sql,
  now: Date,
  options: UpkeepOptions = {},
): Promise<Record<TimePartitioned['name'], PartitionUpkeep>> {
  const upkeep = {} as Record<TimePartitioned['name'], PartitionUpkeep>;
  for (const table of TIME_PARTITIONED) upkeep[table.name] = await keepPartitions(sql, table, now, options);
  return upkeep;
}
