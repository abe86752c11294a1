import type { Principal } from '../../platform/auth/principal.js';
import { sourcesVisibleTo } from '../../platform/auth/scope.js';
import { asJson, type Queryable, type Sql } from '../../platform/db/database.js';

export interface SourceRef {
  id: string;
  name: string;
  collector_id: string;
  status: string;
}

export interface SourceRow extends SourceRef {
  endpoint: string | null;
  config: Record<string, unknown>;
  schedule_config: { enabled: boolean; interval_minutes: number } & Record<string, unknown>;
  health_status: Record<string, unknown> | null;
  last_collection: Date | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
  collector_name: string;
  collector_type: string;
  /** Which credentials are set, never what they are. */
  credentials: { type: string; updated_at: string } | null;
}

const SOURCE_COLUMNS = `s.id::text, s.name, s.collector_id::text, s.status, s.endpoint, s.config, s.schedule_config, s.health_status,
  s.last_collection, s.last_error, s.created_at, s.updated_at, c.name as collector_name, c.collector_type,
  (select json_build_object('type', sc.credential_type, 'updated_at', sc.updated_at) from source_credentials sc where sc.source_id = s.id) as credentials`;

export function findSourceByName(sql: Queryable, tenantId: string, name: string): Promise<SourceRef | undefined> {
  return sql<SourceRef[]>`
    select id::text, name, collector_id::text, status from sources
    where tenant_id = ${tenantId} and name = ${name} and deleted_at is null`.then((rows) => rows[0]);
}

/**
 * The collector of a type and name, created with the first source that needs it. Collectors have
 * no write routes of their own (they are managed through their sources), so their insert is here.
 */
export async function provisionCollector(
  sql: Queryable,
  tenantId: string,
  collectorType: string,
  name = collectorType,
): Promise<string> {
  const [collector] = await sql<{ id: string }[]>`
    insert into collectors (tenant_id, name, collector_type) values (${tenantId}, ${name}, ${collectorType})
    on conflict (tenant_id, name, collector_type) do update set updated_at = collectors.updated_at
    returning id::text`;
  return collector!.id;
}

/**
 * Returns the live source with this name, creating it (and the collector of its type, which is
 * provisioned with its first source) when it does not exist yet.
 */
export async function ensureSource(
  sql: Queryable,
  tenantId: string,
  name: string,
  collectorType: string,
  endpoint: string | null = null,
): Promise<SourceRef> {
  const existing = await findSourceByName(sql, tenantId, name);
  if (existing) return existing;
  const collectorId = await provisionCollector(sql, tenantId, collectorType);
  await sql`
    insert into sources (tenant_id, collector_id, name, endpoint)
    values (${tenantId}, ${collectorId}, ${name}, ${endpoint})
    on conflict (tenant_id, name) where deleted_at is null do nothing`;
  return (await findSourceByName(sql, tenantId, name))!;
}

export function findSourceById(sql: Queryable, tenantId: string, sourceId: string): Promise<SourceRef | undefined> {
  return sql<SourceRef[]>`
    select id::text, name, collector_id::text, status from sources
    where tenant_id = ${tenantId} and id = ${sourceId} and deleted_at is null`.then((rows) => rows[0]);
}

export function getSource(sql: Queryable, tenantId: string, sourceId: string): Promise<SourceRow | undefined> {
  return sql<SourceRow[]>`
    select ${sql.unsafe(SOURCE_COLUMNS)} from sources s join collectors c on c.id = s.collector_id
    where s.tenant_id = ${tenantId} and s.id = ${sourceId} and s.deleted_at is null`.then((rows) => rows[0]);
}

export interface SourceCriteria {
  collectorId?: string;
  status?: string;
  limit: number;
  offset: number;
}

/**
 * A page of the live sources the principal may see, by id, and how many match (a tenant has few
 * sources: counting is cheap).
 */
export async function listSources(
  sql: Sql,
  principal: Principal,
  criteria: SourceCriteria,
): Promise<{ rows: SourceRow[]; total: number }> {
  const where = sql`${sourcesVisibleTo(sql, principal, { tenant: 's.tenant_id', source: 's.id' })} and s.deleted_at is null
    ${criteria.collectorId === undefined ? sql`` : sql`and s.collector_id = ${criteria.collectorId}`}
    ${criteria.status === undefined ? sql`` : sql`and s.status = ${criteria.status}`}`;
  const [rows, [count]] = await Promise.all([
    sql<SourceRow[]>`
      select ${sql.unsafe(SOURCE_COLUMNS)} from sources s join collectors c on c.id = s.collector_id
      where ${where} order by s.id limit ${criteria.limit} offset ${criteria.offset}`,
    sql<{ total: number }[]>`select count(*)::int as total from sources s where ${where}`,
  ]);
  return { rows, total: count?.total ?? 0 };
}

export interface NewSource {
  collectorId: string;
  name: string;
  endpoint: string | null;
  config: Record<string, unknown>;
  scheduleConfig: Record<string, unknown>;
}

/** Creates a source; undefined when a live source of the tenant has the name already. */
export async function insertSource(sql: Queryable, tenantId: string, source: NewSource): Promise<string | undefined> {
  const [row] = await sql<{ id: string }[]>`
    insert into sources (tenant_id, collector_id, name, endpoint, config, schedule_config)
    values (${tenantId}, ${source.collectorId}, ${source.name}, ${source.endpoint}, ${sql.json(asJson(source.config))},
            ${sql.json(asJson({ enabled: false, interval_minutes: 60, ...source.scheduleConfig }))})
    on conflict (tenant_id, name) where deleted_at is null do nothing
    returning id::text`;
  return row?.id;
}

export interface SourceChanges {
  name?: string;
  endpoint?: string | null;
  status?: 'enabled' | 'disabled';
  /** Merged key by key into the stored object (a null value removes the key). */
  config?: Record<string, unknown>;
  scheduleConfig?: Record<string, unknown>;
}

/** Applies a partial update; false when the new name belongs to another live source. */
export async function updateSource(
  sql: Queryable,
  tenantId: string,
  sourceId: string,
  changes: SourceChanges,
  now: Date,
): Promise<boolean> {
  const merge = (column: string, patch: Record<string, unknown> | undefined) =>
    patch === undefined
      ? sql.unsafe(column)
      : sql`jsonb_strip_nulls(${sql.unsafe(column)} || ${sql.json(asJson(patch))}::jsonb)`;
  try {
    await sql`
      update sources s set
        name = coalesce(${changes.name ?? null}, s.name),
        endpoint = ${changes.endpoint === undefined ? sql`s.endpoint` : sql`${changes.endpoint}`},
        status = coalesce(${changes.status ?? null}, s.status),
        config = ${merge('s.config', changes.config)},
        schedule_config = ${merge('s.schedule_config', changes.scheduleConfig)},
        updated_at = ${now}
      where s.tenant_id = ${tenantId} and s.id = ${sourceId} and s.deleted_at is null`;
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === '23505') return false;
    throw error;
  }
}

/** Marks a source deleted (its name becomes free again); its CIs and history stay. */
export async function deleteSource(sql: Queryable, tenantId: string, sourceId: string, now: Date): Promise<boolean> {
  const result = await sql`
    update sources set deleted_at = ${now}, status = 'disabled', updated_at = ${now}
    where tenant_id = ${tenantId} and id = ${sourceId} and deleted_at is null`;
  return result.count > 0;
}

/**
 * What a push tells of its source, as a collection run tells of a pulled one: an accepted push is a
 * collection (`last_collection`, healthy); a refused one leaves `last_collection` and shows the error.
 */
export async function recordPush(
  sql: Queryable,
  tenantId: string,
  sourceId: string,
  now: Date,
  outcome: {
    result?: { received: number; created: number; updated: number; changes: number };
    error?: string;
    durationMs: number;
  },
): Promise<void> {
  const { result, error } = outcome;
  const message = result
    ? `push accepted: ${result.received} received, ${result.created} created, ${result.updated} updated, ${result.changes} changes`
    : `push refused: ${error ?? 'unknown error'}`;
  const health = {
    status: result ? 'healthy' : 'degraded',
    last_check: now.toISOString(),
    details: { message, duration: String(outcome.durationMs / 1000) },
  };
  await sql`
    update sources set
      last_collection = ${result ? sql`${now}` : sql`last_collection`},
      last_error = ${result ? null : (error ?? null)},
      health_status = ${sql.json(asJson(health))}
    where tenant_id = ${tenantId} and id = ${sourceId} and deleted_at is null`;
}

export async function setSourceHealth(
  sql: Queryable,
  tenantId: string,
  sourceId: string,
  health: Record<string, unknown>,
  now: Date,
): Promise<void> {
  await sql`
    update sources set health_status = ${sql.json(asJson(health))}, updated_at = ${now}
    where tenant_id = ${tenantId} and id = ${sourceId} and deleted_at is null`;
}

/**
 * Cancels the queued or running collection run of a source that is deleted or disabled; its worker
 * stops at its next lease renewal. The run queue belongs to the collectors, which sit above the
 * sources: the statement lives here so that it runs in the transaction that stops the source.
 */
export async function cancelRunsOf(sql: Queryable, sourceId: string, now: Date): Promise<number> {
  const rows = await sql`
    update collection_runs set status = 'cancelled', finished_at = ${now}, error = 'cancelled: the source was deleted or disabled',
           lease_owner = null, lease_expires_at = null
    where source_id = ${sourceId} and status in ('queued', 'running')
    returning 1`;
  return rows.length;
}
