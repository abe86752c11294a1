import type { Queryable, Sql } from '../../platform/db/database.js';

export interface DemoSource {
  id: string;
  name: string;
}

/** The demo's sources: live sources marked `config.demo`. */
export function demoSources(sql: Queryable, tenantId: string): Promise<DemoSource[]> {
  return sql<DemoSource[]>`
    select id::text, name from sources
    where tenant_id = ${tenantId} and deleted_at is null and config ->> 'demo' = 'true'
    -- the column, not the text it is selected as: source 10 comes after source 9
    order by sources.id`;
}

/**
 * Records a demo source's last collection as a collection records it (its time, a healthy
 * status with what it wrote): the demo's sources are disabled, and nothing else would.
 */
export async function markCollected(
  sql: Queryable,
  tenantId: string,
  sourceId: string,
  last: { at: Date; created: number; updated: number; changes: number },
): Promise<void> {
  const health = {
    status: 'healthy',
    last_check: last.at.toISOString(),
    details: { message: `demo collection: ${last.created} created, ${last.updated} updated, ${last.changes} changes` },
  };
  await sql`
    update sources set last_collection = ${last.at}, last_error = null, health_status = ${sql.json(health)}
    where tenant_id = ${tenantId} and id = ${sourceId}`;
}

/**
 * Removes every trace of the given sources: their CIs, relationships, change records with their
 * queue, outbox and statistics rows, collection runs and scopes granted on them, the sources, and
 * their collectors once those have no source left. One transaction: the demo is there or gone.
 */
export async function removeSources(
  sql: Sql,
  tenantId: string,
  sourceIds: string[],
): Promise<{ cis: number; changes: number }> {
  return sql.begin(async (tx) => {
    const changes = tx`select id from change_records where tenant_id = ${tenantId} and source_id = any(${sourceIds}::bigint[])`;
    await tx`delete from outbox where tenant_id = ${tenantId} and aggregate_id in (select id::text from (${changes}) c)`;
    await tx`delete from change_stats_queue where change_id in (${changes})`;
    const removed =
      await tx`delete from change_records where tenant_id = ${tenantId} and source_id = any(${sourceIds}::bigint[])`;
    for (const table of [
      'change_stats_buckets',
      'change_stats_days',
      'change_stats_ci_last',
      'change_stats_affected',
      'pending_relationships',
      'relationships',
    ]) {
      await tx`delete from ${tx(table)} where tenant_id = ${tenantId} and source_id = any(${sourceIds}::bigint[])`;
    }
    // the tenant's stored default window is computed again by the next refresh
    await tx`delete from change_stats_snapshots where tenant_id = ${tenantId}`;
    const cis =
      await tx`delete from configuration_items where tenant_id = ${tenantId} and source_id = any(${sourceIds}::bigint[])`;
    await tx`delete from collection_runs where source_id = any(${sourceIds}::bigint[])`;
    await tx`delete from source_credentials where source_id = any(${sourceIds}::bigint[])`;
    await tx`delete from api_key_scopes where source_id = any(${sourceIds}::bigint[])`;
    await tx`delete from data_scopes where source_id = any(${sourceIds}::bigint[])`;
    const collectors = await tx<{ collector_id: string }[]>`
      delete from sources where tenant_id = ${tenantId} and id = any(${sourceIds}::bigint[]) returning collector_id::text`;
    await tx`
      delete from collectors c where c.id = any(${collectors.map((c) => c.collector_id)}::bigint[])
        and not exists (select 1 from sources s where s.collector_id = c.id)`;
    return { cis: cis.count, changes: removed.count };
  });
}
