import type { PendingQuery, Row } from 'postgres';
import { recordChanges, statusRecord, type ChangedCi } from '../../history/records/writer.js';
import type { Config } from '../../platform/config/config.js';
import type { Sql } from '../../platform/db/database.js';

export interface LifecycleSettings {
  inactiveAfterMs: number;
  archiveInactiveAfterMs: number;
  archiveRetentionMs: number;
  batchSize: number;
}

/** The thresholds as configured (CINV_INACTIVE_AFTER, CINV_ARCHIVE_INACTIVE_AFTER, ...). */
export function lifecycleSettings(config: Config): LifecycleSettings {
  return {
    inactiveAfterMs: config.inactiveAfterMs,
    archiveInactiveAfterMs: config.archiveInactiveAfterMs,
    archiveRetentionMs: config.archiveRetentionMs,
    batchSize: config.sweepBatchSize,
  };
}

export interface SweepResult {
  inactivated: number;
  archived: number;
  removed: number;
}

type Status = 'active' | 'inactive' | 'archived';

/**
 * Moves one batch of due CIs from one status to another and records an `UPDATED` change on
 * `status` for each, in one transaction. `due` selects the ci_ids, locked with SKIP LOCKED so that
 * replicas sweeping at the same time split the work instead of waiting on each other.
 */
async function moveBatch(sql: Sql, due: PendingQuery<Row[]>, from: Status, to: Status, now: Date): Promise<number> {
  return sql.begin(async (tx) => {
    const moved = await tx<ChangedCi[]>`
      update configuration_items c
      set status = ${to}, status_updated_at = ${now}, updated_at = ${now}
      from (${due}) as due
      where c.ci_id = due.ci_id
      returning c.ci_id, c.tenant_id, c.source_id::text, c.scope_id, c.name, c.namespace, c.ci_type`;
    await recordChanges(
      tx,
      moved.map((ci) => statusRecord(ci, 'UPDATED', from, to, now)),
    );
    return moved.length;
  });
}

async function untilDrained(step: () => Promise<number>, batchSize: number): Promise<number> {
  let total = 0;
  for (;;) {
    const done = await step();
    total += done;
    if (done < batchSize) return total;
  }
}

/**
 * Applies the lifecycle thresholds (spec section 3) in batches: active CIs not seen for
 * `inactiveAfter` become inactive, inactive ones older than `archiveInactiveAfter` archived, and
 * archived ones older than `archiveRetention` are removed for good. Change history and
 * relationship rows outlive the removed CIs.
 */
export async function sweepLifecycle(sql: Sql, settings: LifecycleSettings, now: Date): Promise<SweepResult> {
  const limit = settings.batchSize;
  const notSeenSince = new Date(now.getTime() - settings.inactiveAfterMs);
  const inactiveSince = new Date(now.getTime() - settings.archiveInactiveAfterMs);
  const archivedSince = new Date(now.getTime() - settings.archiveRetentionMs);

  // last_seen moves on every collection and is left unindexed so that moving it is a HOT update
  // (see 0008): one scan of the narrow table finds the candidates, then they move in batches
  const stale = await sql<{ ci_id: string }[]>`
    select l.ci_id from ci_last_seen l join configuration_items c on c.ci_id = l.ci_id
    where l.last_seen < ${notSeenSince} and c.status = 'active'
    order by l.ci_id`;
  let inactivated = 0;
  for (let i = 0; i < stale.length; i += limit) {
    const ids = stale.slice(i, i + limit).map((row) => row.ci_id);
    inactivated += await moveBatch(
      sql,
      sql`select c.ci_id from unnest(${ids}::uuid[]) as due(ci_id)
          join ci_last_seen l on l.ci_id = due.ci_id join configuration_items c on c.ci_id = due.ci_id
          where l.last_seen < ${notSeenSince} and c.status = 'active'
          for update of c skip locked`,
      'active',
      'inactive',
      now,
    );
  }
  const archived = await untilDrained(
    () =>
      moveBatch(
        sql,
        sql`select ci_id from configuration_items
            where status = 'inactive' and status_updated_at < ${inactiveSince}
            order by status_updated_at limit ${limit} for update skip locked`,
        'inactive',
        'archived',
        now,
      ),
    limit,
  );
  const removed = await untilDrained(async () => {
    // references a removed CI still waited to resolve go with it; its relationship rows stay, and
    // its last row stays as a tombstone, so that the inventory of a moment it existed still holds it
    const [row] = await sql<{ removed: number }[]>`
      with removed as (
        delete from configuration_items where ci_id = any(array(
          select ci_id from configuration_items
          where status = 'archived' and status_updated_at < ${archivedSince}
          order by status_updated_at limit ${limit} for update skip locked))
        returning *
      ), unwaited as (
        delete from pending_relationships p using removed where p.from_ci_id = removed.ci_id
      ), buried as (
        insert into ci_tombstones (ci_id, tenant_id, source_id, scope_id, external_id, ci_type, name, namespace, status,
                                   status_updated_at, raw_data, type_data, created_at, updated_at, removed_at)
        select ci_id, tenant_id, source_id, scope_id, external_id, ci_type, name, namespace, status,
               status_updated_at, raw_data, type_data, created_at, updated_at, ${now} from removed
      )
      select count(*)::int as removed from removed`;
    return row?.removed ?? 0;
  }, limit);
  return { inactivated, archived, removed };
}

/**
 * With no outbox consumer configured, outbox rows would pile up forever; rows older than `maxAgeMs`
 * are dropped in batches (a later `cinv reindex` covers what they described).
 */
export async function trimOutbox(sql: Sql, maxAgeMs: number, batchSize: number, now: Date): Promise<number> {
  const before = new Date(now.getTime() - maxAgeMs);
  return untilDrained(async () => {
    const result = await sql`
      delete from outbox where id = any(array(
        select id from outbox where created_at < ${before} order by created_at limit ${batchSize} for update skip locked))`;
    return result.count;
  }, batchSize);
}
