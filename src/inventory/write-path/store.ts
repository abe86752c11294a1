import type { PendingQuery } from 'postgres';
import type { Queryable } from '../../platform/db/database.js';
import { jsonText } from '../../platform/db/pipeline.js';
import { SOURCE_PARTS } from './parts.js';

/** The source, and the instance inside it, that a reconcile writes to. */
export interface InventoryKey {
  tenantId: string;
  sourceId: string;
  scopeId: string | null;
  /**
   * The instances of the source the writer may write into (writableInstances in auth/principal.ts),
   * or undefined for all of them. A stored CI of another instance is neither moved, archived nor
   * made the target of a reference by this writer.
   */
  writable?: readonly string[];
}

/** The instances a write may touch as an SQL text array, or null for every instance of the source. */
export const writableArray = (key: InventoryKey): string[] | null =>
  key.writable === undefined ? null : [...key.writable];

/** A CI seen by a collection, with the metrics it came with (JSON text, or null). */
export interface SeenCi {
  ci_id: string;
  metrics: string | null;
}

/**
 * A record of the batch that is not merely seen again: new (no `ci_id`, no `stored`) or to be
 * rewritten, with the stored row it replaces.
 */
export interface StoredState {
  external_id: string;
  ci_id: string | null;
  stored: StoredContent | null;
}

export interface StoredContent {
  ci_id: string;
  external_id: string;
  /** The instance the CI is stored in, which this write may move it out of. */
  scope_id: string | null;
  ci_type: string;
  name: string;
  namespace: string | null;
  status: 'active' | 'inactive' | 'archived';
  raw_data: Record<string, unknown>;
  type_data: Record<string, unknown>;
}

export interface CiWrite {
  ci_id: string;
  scope_id: string | null;
  external_id: string;
  ci_type: string;
  name: string;
  namespace: string | null;
  raw_data: Record<string, unknown>;
  type_data: Record<string, unknown>;
  content_hash: string;
}

const RECONCILE_LOCK = 0x63696e77;

/**
 * Serialises writers of one source across processes for the rest of the transaction, and gives the
 * transaction's statements the bulk statement timeout instead of the request one.
 *
 * It also has the transaction's statements planned at every execution (`plan_cache_mode`). A
 * prepared statement otherwise settles on a generic plan after five runs and keeps it for the
 * connection's life, and the plans a load settles on are made while its tables are nearly empty:
 * they read a whole source's rows per batch once it is large (measured on a collection of 185 200
 * objects without autovacuum: 0.28 s per page of 500, 125 s for an unchanged re-collection). A plan
 * made at each run sees the tables' present size, whatever their statistics say. The per-row
 * triggers of the write path set their own mode (sql/0038_trigger_plans.sql): they would otherwise
 * plan their statements again for every row they fire on. A writer of any
 * part (`lane` undefined) holds the source's lock alone; a lane (parts.ts) shares the source's lock
 * with the other lanes and holds its part's, so lanes of different parts run side by side and
 * nothing else runs beside them. Each waits for at most one lock of the other kind, so none can
 * wait in a circle.
 */
export async function lockSource(
  sql: Queryable,
  tenantId: string,
  sourceId: string,
  statementTimeoutMs?: number,
  lane?: number,
): Promise<void> {
  const source = `${tenantId}:${sourceId}`;
  const locks =
    lane === undefined
      ? sql`pg_advisory_xact_lock(${RECONCILE_LOCK}, hashtext(${source}))`
      : sql`pg_advisory_xact_lock_shared(${RECONCILE_LOCK}, hashtext(${source})), pg_advisory_xact_lock(${RECONCILE_LOCK}, hashtext(${`${source}:${lane}`}))`;
  await sql`
    select ${locks}, set_config('plan_cache_mode', 'force_custom_plan', true),
           ${statementTimeoutMs === undefined ? sql`null` : sql`set_config('statement_timeout', ${String(statementTimeoutMs)}, true)`}`.execute();
}

/** The part of the external id in `column`, as SQL text: partOf in parts.ts, computed by the database. */
export const partExpression = (column: string): string =>
  `get_byte(decode(md5(${column}), 'hex'), 0) % ${SOURCE_PARTS}`;

/**
 * The lookup's keys as one JSON text: each record's metrics are JSON already and go in as they are,
 * where three text arrays cost the process an escaping pass over every element (postgres.js
 * serialises arrays in JavaScript, JSON.stringify natively).
 */
function wantedText(wanted: { externalIds: string[]; hashes: string[]; metrics: (string | null)[] }): string {
  const rows: string[] = new Array<string>(wanted.externalIds.length);
  for (let i = 0; i < rows.length; i++) {
    rows[i] =
      `{"external_id":${JSON.stringify(wanted.externalIds[i])},"hash":"${wanted.hashes[i]}","metrics":${wanted.metrics[i] ?? 'null'}}`;
  }
  return `[${rows.join(',')}]`;
}

/*
 * Batch lookups are one index probe per key (a LATERAL subquery on the unique key) rather than
 * `= any(array)` or a plain join: right after a bulk load the table has no statistics yet, and the
 * planner would scan all of it for every batch (measured: 0.3 s per 1000 keys at 100k rows).
 * `offset 0` keeps each probe a subquery: without it the planner may pull it up into a join and
 * hash the source's whole identity index instead, which it did when the statistics said the source
 * held a row or two.
 */
export function loadStates(
  sql: Queryable,
  key: InventoryKey,
  wanted: { externalIds: string[]; hashes: string[]; metrics: (string | null)[] },
  now: Date,
): PendingQuery<StoredState[]> {
  // one statement finds the stored rows, compares digests in the database (no bytea travels back),
  // moves last_seen and the metrics of the unchanged ones, which is all an unchanged
  // re-collection needs, and returns only the records that need more: new, or changed with the
  // stored content their changes are found against
  return sql<StoredState[]>`
    with found as (
      select w.external_id, c.ci_id, c.status, w.metrics,
             coalesce(c.content_hash = decode(w.hash, 'hex') and c.status = 'active'
                      and c.scope_id is not distinct from ${key.scopeId}::text, false) as unchanged
      -- jsonb, not json: the metrics are stored as jsonb and would be parsed twice; the whole
      -- statement for 1000 keys took 12.1 ms this way against 12.9 ms through json_to_recordset
      from jsonb_to_recordset(${wantedText(wanted)}::text::jsonb) as w(external_id text, hash text, metrics jsonb)
      left join lateral (
        select ci_id, content_hash, status, scope_id from configuration_items
        where tenant_id = ${key.tenantId} and source_id = ${key.sourceId} and external_id = w.external_id
        offset 0
      ) as c on true
    ), touched as (
      -- every stored CI has its row (written with the CI): a plain update, in place (HOT)
      update ci_last_seen l set last_seen = ${now}, metrics = found.metrics
      from found where found.unchanged and l.ci_id = found.ci_id
    )
    select found.external_id, found.ci_id, to_jsonb(stored) as stored
    from found
    left join lateral (
      select ci_id, external_id, scope_id, ci_type, name, namespace, status, raw_data, type_data
      from configuration_items where ci_id = found.ci_id
      offset 0
    ) as stored on true
    where not found.unchanged`;
}

const CI_RECORDSET = `r(ci_id uuid, scope_id text, external_id text, ci_type text, name text, namespace text,
  raw_data jsonb, type_data jsonb, content_hash text)`;

export async function insertCis(
  sql: Queryable,
  tenantId: string,
  sourceId: string,
  rows: CiWrite[],
  now: Date,
): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    insert into configuration_items
      (ci_id, tenant_id, source_id, scope_id, external_id, ci_type, name, namespace, status, raw_data, type_data,
       content_hash, created_at, updated_at)
    select r.ci_id, ${tenantId}, ${sourceId}, r.scope_id, r.external_id, r.ci_type, r.name, r.namespace, 'active',
           r.raw_data, r.type_data, decode(r.content_hash, 'hex'), ${now}, ${now}
    from jsonb_to_recordset(${jsonText(rows)}::text::jsonb) as ${sql.unsafe(CI_RECORDSET)}`.execute();
}

/** Rewrites changed CIs; a CI seen again while inactive or archived becomes active. */
export async function updateCis(sql: Queryable, rows: CiWrite[], now: Date): Promise<void> {
  if (rows.length === 0) return;
  await sql`
    update configuration_items c
    set scope_id = r.scope_id, ci_type = r.ci_type, name = r.name, namespace = r.namespace,
        raw_data = r.raw_data, type_data = r.type_data, content_hash = decode(r.content_hash, 'hex'),
        status = 'active',
        status_updated_at = case when c.status <> 'active' then ${now} else c.status_updated_at end,
        updated_at = ${now}
    from jsonb_to_recordset(${jsonText(rows)}::text::jsonb) as ${sql.unsafe(CI_RECORDSET)}
    where c.ci_id = r.ci_id`.execute();
}

/** Records that CIs were seen now, with the metrics they came with (JSON text, or null). */
export async function touchLastSeen(sql: Queryable, tenantId: string, seen: SeenCi[], now: Date): Promise<void> {
  if (seen.length === 0) return;
  await sql`
    insert into ci_last_seen (ci_id, tenant_id, last_seen, metrics)
    select s.id, ${tenantId}, ${now}, s.metrics::jsonb
    from unnest(${seen.map((s) => s.ci_id)}::uuid[], ${seen.map((s) => s.metrics)}::text[]) as s(id, metrics)
    on conflict (ci_id) do update set last_seen = excluded.last_seen, metrics = excluded.metrics`.execute();
}

export interface ArchivedCi {
  ci_id: string;
  source_id: string;
  scope_id: string | null;
  name: string;
  namespace: string | null;
  ci_type: string;
  previous_status: string;
  status_updated_at: Date;
}

/** Archives the given CIs that are not archived yet; returns what moved, with the former status. */
export function archiveCis(sql: Queryable, tenantId: string, ciIds: string[], now: Date): Promise<ArchivedCi[]> {
  if (ciIds.length === 0) return Promise.resolve([]);
  return sql<ArchivedCi[]>`
    update configuration_items c
    set status = 'archived', status_updated_at = ${now}, updated_at = ${now}
    from (select c.ci_id, c.status
          from unnest(${ciIds}::uuid[]) as wanted(ci_id)
          join configuration_items c on c.ci_id = wanted.ci_id
          where c.tenant_id = ${tenantId} and c.status <> 'archived'
          for update of c) as before
    where c.ci_id = before.ci_id
    returning c.ci_id, c.source_id::text, c.scope_id, c.name, c.namespace, c.ci_type,
              before.status as previous_status, c.status_updated_at`;
}

/** The CIs of the source with these external ids, in the instances the key's writer may write. */
export function findIdsByExternalId(
  sql: Queryable,
  key: InventoryKey,
  externalIds: string[],
): Promise<{ ci_id: string }[]> {
  const writable = writableArray(key);
  return sql<{ ci_id: string }[]>`
    select c.ci_id
    from unnest(${externalIds}::text[]) as wanted(external_id)
    cross join lateral (
      select ci_id from configuration_items
      where tenant_id = ${key.tenantId} and source_id = ${key.sourceId} and external_id = wanted.external_id
        and (${writable}::text[] is null or scope_id = any(${writable}::text[]))
      offset 0
    ) as c`;
}

/** A stored CI of the source that a write names but may not touch: it lives in another instance. */
export interface OutsideCi {
  external_id: string;
}

/**
 * Which of the external ids name CIs of the source stored outside the instances the writer may
 * write (none when it may write them all): one index probe per id, at most `limit` answers.
 */
export async function findOutsideWritable(
  sql: Queryable,
  key: InventoryKey,
  externalIds: readonly string[],
  limit: number,
): Promise<OutsideCi[]> {
  const writable = writableArray(key);
  if (writable === null || externalIds.length === 0) return [];
  return sql<OutsideCi[]>`
    select wanted.external_id
    from unnest(${externalIds as string[]}::text[]) as wanted(external_id)
    cross join lateral (
      select 1 from configuration_items
      where tenant_id = ${key.tenantId} and source_id = ${key.sourceId} and external_id = wanted.external_id
        and (scope_id is null or scope_id <> all(${writable}::text[]))
      offset 0
    ) as c
    limit ${limit}`;
}

/** Refreshes planner statistics after a bulk load, so that later queries are planned for its size. */
export async function analyzeInventory(sql: Queryable): Promise<void> {
  await sql`analyze configuration_items, ci_last_seen, relationships`;
}
