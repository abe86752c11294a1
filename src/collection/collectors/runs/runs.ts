import { uuidv7 } from 'uuidv7';
import type { Principal } from '../../../platform/auth/principal.js';
import { sourcesVisibleTo } from '../../../platform/auth/scope.js';
import { asJson, type Queryable, type Sql } from '../../../platform/db/database.js';

export type RunStatus = 'queued' | 'running' | 'succeeded' | 'partial' | 'failed' | 'cancelled';

/** How each part of a collection went (a kind of object, a database), as the source's health shows it. */
export type Components = Record<string, { status: 'healthy' | 'unhealthy'; message?: string }>;

export interface RunRow {
  id: string;
  collector_id: string;
  source_id: string;
  source_name: string;
  status: RunStatus;
  trigger: 'schedule' | 'manual';
  queued_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  attempts: number;
  counts: Record<string, unknown> | null;
  error: string | null;
  watching_since: Date | null;
}

const RUN_COLUMNS = `r.id, r.collector_id::text, r.source_id::text, s.name as source_name, r.status, r.trigger, r.queued_at,
  r.started_at, r.finished_at, r.attempts, r.counts, r.error, r.watching_since`;

/**
 * Queues a run for every source whose schedule is due: enabled, its type collects, no run queued
 * or running (the partial unique index keeps it at one), and `next_run_at` reached. Returns how
 * many were queued.
 */
export async function enqueueDue(sql: Queryable, types: readonly string[], now: Date): Promise<number> {
  if (types.length === 0) return 0;
  const rows = await sql`
    insert into collection_runs (id, tenant_id, collector_id, source_id, status, trigger, queued_at)
    select gen_random_uuid(), s.tenant_id, s.collector_id, s.id, 'queued', 'schedule', ${now}
    from sources s join collectors c on c.id = s.collector_id
    where s.deleted_at is null and s.status = 'enabled'
      and coalesce((s.schedule_config->>'enabled')::boolean, false)
      and c.collector_type = any(${types as string[]}::text[])
      and (s.next_run_at is null or s.next_run_at <= ${now})
      and not exists (select 1 from collection_runs a where a.source_id = s.id and a.status in ('queued', 'running'))
    on conflict (source_id) where status in ('queued', 'running') do nothing
    returning 1`;
  return rows.length;
}

/**
 * Queues a manual run of a source, or returns the one already queued or running. A run that is
 * watching (hybrid) is asked to list everything again, which it does before it watches on.
 */
export async function enqueueManual(
  sql: Queryable,
  tenantId: string,
  source: { id: string; collector_id: string },
  now: Date,
): Promise<string> {
  const [queued] = await sql<{ id: string }[]>`
    insert into collection_runs (id, tenant_id, collector_id, source_id, status, trigger, queued_at)
    values (${uuidv7()}, ${tenantId}, ${source.collector_id}, ${source.id}, 'queued', 'manual', ${now})
    on conflict (source_id) where status in ('queued', 'running') do nothing
    returning id`;
  if (queued) return queued.id;
  const [active] = await sql<{ id: string }[]>`
    update collection_runs set resync_requested = (watching_since is not null)
    where source_id = ${source.id} and status in ('queued', 'running')
    returning id`;
  return active!.id;
}

/** Runs waiting for a worker. */
export async function countQueued(sql: Queryable): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from collection_runs where status = 'queued'`;
  return row?.n ?? 0;
}

export interface RunOutcome {
  status: 'succeeded' | 'partial' | 'failed' | 'cancelled';
  components?: Components;
  counts: object;
  error: string | null;
  durationMs: number;
  /** A cancelled run to be taken up again soon (its worker is stopping): the source is due now. */
  requeue?: boolean;
}

/** Ends a run and records it on its source (see `recordOnSource`). False when the run was no longer this worker's. */
export async function finishRun(
  sql: Queryable,
  run: { id: string; worker: string; sourceId: string },
  outcome: RunOutcome,
  now: Date,
): Promise<boolean> {
  const [ended] = await sql<{ id: string }[]>`
    update collection_runs set status = ${outcome.status}, finished_at = ${now}, counts = ${sql.json(asJson(outcome.counts))},
           error = ${outcome.error}, lease_owner = null, lease_expires_at = null
    where id = ${run.id} and lease_owner = ${run.worker} and status = 'running'
    returning id`;
  if (!ended) return false;
  if (outcome.status !== 'cancelled') await recordOnSource(sql, run.sourceId, outcome, now);
  else if (outcome.requeue) await sql`update sources set next_run_at = ${now} where id = ${run.sourceId}`;
  return true;
}

/**
 * Records a collection's outcome on its source: last collection and error, consecutive errors,
 * health, and (after failures) a schedule that backs off: the next run waits the interval times 2,
 * 4 and up to 8 after consecutive failures. A hybrid run records its list this way when it starts
 * watching, and its whole run again when it ends.
 */
export async function recordOnSource(
  sql: Queryable,
  sourceId: string,
  outcome:
    | { status: 'succeeded' | 'partial' | 'failed'; error: string | null; durationMs: number; components?: Components }
    | RunOutcome,
  now: Date,
): Promise<void> {
  const failed = outcome.status === 'failed';
  const partial = outcome.status === 'partial';
  const [source] = await sql<{ consecutive_errors: number; interval: number }[]>`
    select consecutive_errors, coalesce((schedule_config->>'interval_minutes')::int, 60) as interval from sources where id = ${sourceId} for update`;
  if (!source) return;
  const errors = failed ? source.consecutive_errors + 1 : 0;
  const health = {
    status: failed ? 'unhealthy' : partial ? 'degraded' : 'healthy',
    last_check: now.toISOString(),
    details: {
      message: failed
        ? (outcome.error ?? 'collection failed')
        : partial
          ? `collected in part: ${outcome.error ?? ''}`
          : 'collection succeeded',
      duration: String(outcome.durationMs / 1000),
      consecutive_errors: String(errors),
    },
    ...(outcome.components && Object.keys(outcome.components).length > 0 ? { components: outcome.components } : {}),
  };
  const backoffMinutes = source.interval * Math.min(8, 2 ** (errors - 1));
  await sql`
    update sources set
      last_collection = ${failed ? sql`last_collection` : sql`${now}`},
      last_error = ${failed || partial ? outcome.error : null},
      consecutive_errors = ${errors},
      health_status = ${sql.json(asJson(health))},
      next_run_at = ${failed ? sql`${new Date(now.getTime() + backoffMinutes * 60_000)}` : sql`next_run_at`}
    where id = ${sourceId}`;
}

const runsVisibleTo = (sql: Sql, principal: Principal) =>
  sourcesVisibleTo(sql, principal, { tenant: 'r.tenant_id', source: 'r.source_id' });

/** One run of a source the principal may see. */
export async function getRun(sql: Sql, principal: Principal, runId: string): Promise<RunRow | undefined> {
  const [row] = await sql<RunRow[]>`
    select ${sql.unsafe(RUN_COLUMNS)} from collection_runs r join sources s on s.id = r.source_id
    where ${runsVisibleTo(sql, principal)} and r.id = ${runId}`;
  return row;
}

/** A collector's runs, newest first, of the sources the principal may see. */
export async function listRuns(sql: Sql, principal: Principal, collectorId: string, limit: number): Promise<RunRow[]> {
  return sql<RunRow[]>`
    select ${sql.unsafe(RUN_COLUMNS)} from collection_runs r join sources s on s.id = r.source_id
    where ${runsVisibleTo(sql, principal)} and r.collector_id = ${collectorId}
    order by r.queued_at desc, r.id desc
    limit ${limit}`;
}
