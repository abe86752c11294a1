import type { ChangeRetention } from '../../platform/config/config.js';
import type { Sql } from '../../platform/db/database.js';
import {
  CHANGE_RECORDS,
  CI_UNDO,
  dropPartitionsBefore,
  RELATIONSHIP_HISTORY,
  STATS_AFFECTED,
  STATS_BUCKETS,
} from '../../platform/db/partitions.js';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/** One horizon: records of `ciType` (or, without it, of every type but `except`) changed before `before` expire. */
export interface Horizon {
  before: Date;
  ciType?: string;
  except: string[];
}

/** The horizons at `now`: the default one for the types without an override, one per overridden type. Forever has none. */
export function horizonsAt(retention: ChangeRetention, now: Date): Horizon[] {
  const overridden = [...retention.byType.keys()];
  const horizons: Horizon[] = [];
  if (retention.defaultMs !== null)
    horizons.push({ before: new Date(now.getTime() - retention.defaultMs), except: overridden });
  for (const [ciType, ms] of retention.byType) {
    if (ms !== null) horizons.push({ before: new Date(now.getTime() - ms), ciType, except: [] });
  }
  return horizons;
}

/**
 * The earliest moment whose changes are all still kept: the default horizon, or an overridden
 * type's when it is later. Null when every type is kept forever.
 */
export function historyCoversSince(retention: ChangeRetention, now: Date): Date | null {
  const horizons = horizonsAt(retention, now);
  if (horizons.length === 0) return null;
  return new Date(Math.max(...horizons.map((h) => h.before.getTime())));
}

/** The moment before which no type keeps anything: the hours before it hold no change at all. Null when some type keeps forever. */
function emptyBefore(retention: ChangeRetention, now: Date): Date | null {
  const all = [retention.defaultMs, ...retention.byType.values()];
  if (all.some((ms) => ms === null)) return null;
  return new Date(now.getTime() - Math.max(...(all as number[])));
}

/** The last hour that ends by a moment: a statistics bucket starting at or before it holds only records before the moment. */
const lastHourEndingBy = (moment: Date) => new Date(moment.getTime() - HOUR_MS);

export interface TrimmedHistory {
  records: number;
  buckets: number;
  /** Monthly partitions dropped whole. */
  partitions: string[];
}

/**
 * Removes the change records past their retention, with their statistics: the hourly buckets of
 * the expired types, and the distinct-CI figures of hours in which no type keeps anything. Months
 * past every type's horizon are dropped as whole partitions; the rest (the month holding a horizon,
 * and types kept shorter than others) is deleted in batches of `batchSize`, each its own statement,
 * so ingest and reads go on beside it.
 */
export async function trimChangeHistory(
  sql: Sql,
  retention: ChangeRetention,
  now: Date,
  batchSize: number,
): Promise<TrimmedHistory> {
  const horizons = horizonsAt(retention, now);
  const trimmed: TrimmedHistory = { records: 0, buckets: 0, partitions: [] };
  if (horizons.length === 0) return trimmed;
  const empty = emptyBefore(retention, now);
  if (empty) {
    // a month that ends before every type's horizon is dropped whole, with the queue entries of its records
    const dropped = await dropPartitionsBefore(sql, CHANGE_RECORDS, empty, {
      beforeDrop: (tx, month) =>
        tx`delete from change_stats_queue where changed_at >= ${month.from} and changed_at < ${month.to}`,
    });
    trimmed.records += dropped.rows;
    trimmed.partitions = dropped.dropped;
    // the statistics of those months with them: the hourly buckets (each day's sum goes below), and
    // the distinct-CI figures, whose CIs' latest hours are forgotten below
    const buckets = await dropPartitionsBefore(sql, STATS_BUCKETS, empty);
    const affected = await dropPartitionsBefore(sql, STATS_AFFECTED, empty);
    trimmed.buckets += buckets.rows;
    trimmed.partitions.push(...buckets.dropped, ...affected.dropped);
    if (affected.dropped.length > 0)
      await sql`delete from change_stats_ci_last where last_bucket <= ${lastHourEndingBy(empty)}`;
  }
  // the change feed's places of transactions whose records are all gone (a record is written before its transaction commits)
  if (empty) await sql`delete from change_feed where committed_at < ${empty}`;
  // the folds of those records, and the kinds counted of their days
  if (empty) {
    await sql`delete from change_folds where fold_at < ${empty}`;
    await sql`delete from change_stats_kinds where day < date_trunc('day', ${empty}::timestamptz, 'UTC')`;
  }
  trimmed.partitions.push(...(await trimWayBack(sql, retention, now, batchSize)));
  const tenants = await sql<{ id: string }[]>`select id from tenants`;
  for (const { id: tenantId } of tenants) {
    for (const horizon of horizons) {
      trimmed.records += await trimRecords(sql, tenantId, horizon, batchSize);
      const types =
        horizon.ciType === undefined
          ? sql`ci_type <> all(${horizon.except}::text[])`
          : sql`ci_type = ${horizon.ciType}`;
      const lastHour = lastHourEndingBy(horizon.before);
      const dayOfHorizon = new Date(Math.floor(horizon.before.getTime() / DAY_MS) * DAY_MS);
      // a day keeps the sum of its hourly buckets: whole expired days go, the day holding the
      // horizon gives back the hours that go now
      await sql`delete from change_stats_days where tenant_id = ${tenantId} and day < ${dayOfHorizon} and ${types}`;
      const gone = await sql`
        with gone as (
          delete from change_stats_buckets where tenant_id = ${tenantId} and bucket <= ${lastHour} and ${types}
          returning source_id, scope_id, bucket, change_type, ci_type, moved_from_scope_id, changes
        ), partial as (
          select source_id, scope_id, change_type, ci_type, moved_from_scope_id, sum(changes) as changes from gone
          where bucket >= ${dayOfHorizon} group by 1, 2, 3, 4, 5
        ), given_back as (
          update change_stats_days d set changes = d.changes - p.changes from partial p
          where d.tenant_id = ${tenantId} and d.day = ${dayOfHorizon} and d.ci_type = p.ci_type and d.change_type = p.change_type
            and d.source_id is not distinct from p.source_id and d.scope_id is not distinct from p.scope_id
            and d.moved_from_scope_id is not distinct from p.moved_from_scope_id
        )
        select 1 from gone`;
      trimmed.buckets += gone.count;
      await sql`delete from change_stats_days where tenant_id = ${tenantId} and day = ${dayOfHorizon} and changes <= 0 and ${types}`;
    }
    // every CI's latest hour is counted in its hour's distinct-CI row: without such a row past the
    // horizon there is no CI to forget, and the latest hours (which have no index) are not read
    if (empty) {
      const expired =
        await sql`delete from change_stats_affected where tenant_id = ${tenantId} and bucket <= ${lastHourEndingBy(empty)}`;
      if (expired.count > 0)
        await sql`delete from change_stats_ci_last where tenant_id = ${tenantId} and last_bucket <= ${lastHourEndingBy(empty)}`;
    }
  }
  return trimmed;
}

/**
 * What reading the inventory at a moment needs, kept as far back as such a read may go (the
 * latest horizon, historyCoversSince): the months of writes' ways back and of ended relationships
 * that end before it are dropped, and CIs removed before it lose their tombstones. Returns the
 * partitions dropped.
 */
async function trimWayBack(sql: Sql, retention: ChangeRetention, now: Date, batchSize: number): Promise<string[]> {
  const since = historyCoversSince(retention, now);
  if (!since) return [];
  const undo = await dropPartitionsBefore(sql, CI_UNDO, since);
  const ended = await dropPartitionsBefore(sql, RELATIONSHIP_HISTORY, since);
  for (;;) {
    const buried = await sql`
      delete from ci_tombstones where ci_id = any(array(select ci_id from ci_tombstones where removed_at < ${since} limit ${batchSize}))`;
    if (buried.count < batchSize) break;
  }
  for (;;) {
    const ended = await sql`
      delete from ci_versions where (ci_id, valid_from) in (select ci_id, valid_from from ci_versions where valid_to < ${since} limit ${batchSize})`;
    if (ended.count < batchSize) break;
  }
  return [...undo.dropped, ...ended.dropped];
}

/** One horizon's expired records of one tenant, oldest first, a batch per statement, with their statistics queue entries. */
async function trimRecords(sql: Sql, tenantId: string, horizon: Horizon, batchSize: number): Promise<number> {
  const types =
    horizon.ciType === undefined ? sql`ci_type <> all(${horizon.except}::text[])` : sql`ci_type = ${horizon.ciType}`;
  let removed = 0;
  for (;;) {
    const [row] = await sql<{ removed: number }[]>`
      with doomed as (
        select id, changed_at from change_records
        where tenant_id = ${tenantId} and changed_at < ${horizon.before} and ${types}
        order by changed_at, id limit ${batchSize}
      ), gone as (
        delete from change_records cr using doomed where cr.id = doomed.id and cr.changed_at = doomed.changed_at returning cr.id
      ), unqueued as (
        delete from change_stats_queue q using gone where q.change_id = gone.id
      )
      select count(*)::int as removed from gone`;
    removed += row?.removed ?? 0;
    if ((row?.removed ?? 0) < batchSize) return removed;
  }
}
