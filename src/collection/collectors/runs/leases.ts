import { asJson, type Queryable } from '../../../platform/db/database.js';

/**
 * A worker's hold on its runs: a run is claimed with a lease in PostgreSQL and kept by renewing
 * it; a run whose lease expired (its worker died or stalled) is claimed by another worker.
 */

export interface ClaimedRun {
  id: string;
  tenant_id: string;
  source_id: string;
  attempts: number;
}

/**
 * Claims up to `limit` runs for a worker: queued ones, and running ones whose lease expired (their
 * worker died). Rows another worker is claiming are skipped, not waited for. The claimed sources'
 * next scheduled run moves one interval on from now.
 */
export async function claimRuns(
  sql: Queryable,
  worker: string,
  limit: number,
  now: Date,
  leaseMs: number,
): Promise<ClaimedRun[]> {
  if (limit <= 0) return [];
  const leaseUntil = new Date(now.getTime() + leaseMs);
  const claimed = await sql<ClaimedRun[]>`
    update collection_runs r set status = 'running', lease_owner = ${worker}, lease_expires_at = ${leaseUntil},
           started_at = coalesce(r.started_at, ${now}), attempts = r.attempts + 1
    where r.id in (
      select id from collection_runs
      where status = 'queued' or (status = 'running' and lease_expires_at < ${now})
      order by queued_at
      limit ${limit}
      for update skip locked)
    returning r.id, r.tenant_id, r.source_id::text, r.attempts`;
  if (claimed.length > 0) {
    await sql`
      update sources s set next_run_at = ${now}::timestamptz + make_interval(mins => coalesce((s.schedule_config->>'interval_minutes')::int, 60))
      where s.id = any(${claimed.map((c) => c.source_id)}::bigint[])`;
  }
  return claimed;
}

export interface Lease {
  /** Still this worker's; false once the run was taken over or cancelled. */
  held: boolean;
  /** A trigger asked the watching run to list everything again. */
  resync: boolean;
}

/**
 * Extends a run's lease and records its counts so far (a watching run's are visible while it
 * watches).
 */
export async function renewLease(
  sql: Queryable,
  runId: string,
  worker: string,
  now: Date,
  leaseMs: number,
  counts?: object,
): Promise<Lease> {
  const [row] = await sql<{ resync: boolean }[]>`
    update collection_runs set lease_expires_at = ${new Date(now.getTime() + leaseMs)},
           counts = ${counts ? sql`${sql.json(asJson(counts))}` : sql`counts`}
    where id = ${runId} and lease_owner = ${worker} and status = 'running'
    returning resync_requested as resync`;
  return { held: row !== undefined, resync: row?.resync ?? false };
}

/** Marks a run as watching (hybrid): its list is done and complete. */
export async function markWatching(sql: Queryable, runId: string, worker: string, now: Date): Promise<void> {
  await sql`update collection_runs set watching_since = ${now} where id = ${runId} and lease_owner = ${worker}`;
}

/** A watching run lists again (a trigger, or a watch start point that expired): it is not watching until that list ends. */
export async function markListing(sql: Queryable, runId: string, worker: string): Promise<void> {
  await sql`update collection_runs set watching_since = null, resync_requested = false where id = ${runId} and lease_owner = ${worker}`;
}
