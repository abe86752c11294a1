import type { Queryable } from '../../platform/db/database.js';
import { jsonText } from '../../platform/db/pipeline.js';
import type { FieldChange } from './diff.js';
import { documentTokens, toTsvectorText } from './document.js';
import { changeShapingSeconds, changesWritten } from '../../platform/observability/metrics.js';
import { fingerprintOf, shapeOf } from './kinds.js';
import { DEFAULT_FOLD_WINDOW_SECONDS } from './folds.js';
import { shapeWritten } from './shaping.js';

export type ChangeType = 'CREATED' | 'UPDATED' | 'DELETED';

export interface NewChangeRecord {
  tenant_id: string;
  ci_id: string;
  source_id: string | null;
  scope_id: string | null;
  ci_name: string;
  ci_namespace: string | null;
  ci_type: string;
  change_type: ChangeType;
  changed_at: Date;
  changes: FieldChange[];
  /**
   * The instance a CI moved out of, on the record of the move: the record carries that instance's
   * values and is shown only to principals that may see it too (null or absent: no move).
   */
  moved_from_scope_id?: string | null;
}

/** What a change record keeps of its CI: enough to read the history after the CI itself is removed. */
export interface ChangedCi {
  tenant_id: string;
  ci_id: string;
  source_id: string | null;
  scope_id: string | null;
  name: string;
  namespace: string | null;
  ci_type: string;
}

/** The change record of one change to a CI, for recordChanges. */
export function changeRecord(
  ci: ChangedCi,
  changeType: ChangeType,
  changes: FieldChange[],
  changedAt: Date,
): NewChangeRecord {
  return {
    tenant_id: ci.tenant_id,
    ci_id: ci.ci_id,
    source_id: ci.source_id,
    scope_id: ci.scope_id,
    ci_name: ci.name,
    ci_namespace: ci.namespace,
    ci_type: ci.ci_type,
    change_type: changeType,
    changed_at: changedAt,
    changes,
  };
}

/** A new CI's `CREATED` change: the fields that say what it is (the payload itself is in the CI). */
export function createdRecord(ci: ChangedCi, changedAt: Date): NewChangeRecord {
  const fields = [
    { field: 'name', old_value: null, new_value: ci.name },
    { field: 'namespace', old_value: null, new_value: ci.namespace },
    { field: 'ci_type', old_value: null, new_value: ci.ci_type },
    { field: 'status', old_value: null, new_value: 'active' },
  ];
  return changeRecord(ci, 'CREATED', fields, changedAt);
}

/** A status move (lifecycle sweep, archiving): one change on `status`. */
export function statusRecord(
  ci: ChangedCi,
  changeType: ChangeType,
  from: string,
  to: string,
  changedAt: Date,
): NewChangeRecord {
  return changeRecord(ci, changeType, [{ field: 'status', old_value: from, new_value: to }], changedAt);
}

export const OUTBOX_TOPIC_CHANGE = 'change_record';
/** NOTIFY channel on which outbox consumers wait for new rows. */
export const OUTBOX_CHANNEL = 'cinv_outbox';

/**
 * Field paths are indexed (GIN) for `changed_field` filters, and an index entry holds at most
 * 2712 bytes; longer paths (JSON keys can be any length) are indexed by their first 512
 * characters, while `changes` keeps them whole.
 */
const MAX_INDEXED_FIELD_LENGTH = 512;

interface ShapedRecord extends NewChangeRecord {
  kind: string;
  severity: string;
  rolls_up: boolean;
  fingerprint: string;
  /** An update with field changes that leaves the status be: it may join a fold. */
  foldable: boolean;
  /** A creation, a removal or a status move: the CI's open folds end. */
  ends: boolean;
}

const shaped = (record: NewChangeRecord): ShapedRecord => {
  const moves = record.changes.some((c) => c.field === 'status');
  return {
    ...record,
    ...shapeOf(record),
    fingerprint: fingerprintOf(record),
    foldable: record.change_type === 'UPDATED' && record.changes.length > 0 && !moves,
    ends: record.change_type !== 'UPDATED' || moves,
  };
};

const withDocument = (record: ShapedRecord) => ({
  ...record,
  search_document: toTsvectorText(documentTokens(record)),
});

/**
 * The folds of a batch with one record per CI, in the writing statement itself: an update joins
 * its CI's open fold of the same fingerprint opened less than the tenant's window before it, a
 * creation, removal or status move ends the CI's open folds, any other record opens one. The
 * statement sees the folds as they were before it: a batch holding a CI twice is written in rounds
 * (roundsOf).
 */
const foldsInStatement = (sql: Queryable) => sql`
    judged as (
      select i.*, case when i.foldable and h.fold_at is not null and i.changed_at >= h.fold_at
                            and i.changed_at - h.fold_at <= make_interval(secs => coalesce(s.fold_window_seconds, ${DEFAULT_FOLD_WINDOW_SECONDS}))
                       then h.fold_at end as joined,
             h.fold_at as head_at
      from input i
      left join change_settings s on s.tenant_id = i.tenant_id
      left join change_fold_heads h on i.foldable and h.tenant_id = i.tenant_id and h.ci_id = i.ci_id and h.fingerprint = i.fingerprint
    ), ended as (
      delete from change_fold_heads h using judged j where j.ends and h.tenant_id = j.tenant_id and h.ci_id = j.ci_id
    ), opened as (
      insert into change_fold_heads (tenant_id, ci_id, fingerprint, fold_at)
      select tenant_id, ci_id, fingerprint, changed_at from judged
      where foldable and joined is null and (head_at is null or changed_at > head_at)
      order by 1, 2, 3
      on conflict (tenant_id, ci_id, fingerprint) do update set fold_at = excluded.fold_at
    ), repeated as (
      insert into change_folds (tenant_id, ci_id, fingerprint, fold_at, repeats, last_at)
      select tenant_id, ci_id, fingerprint, joined, count(*), max(changed_at) from judged where joined is not null
      group by 1, 2, 3, 4 order by 1, 2, 3, 4
      on conflict (tenant_id, ci_id, fingerprint, fold_at)
        do update set repeats = change_folds.repeats + excluded.repeats, last_at = greatest(change_folds.last_at, excluded.last_at)
    ),`;

/**
 * Writes change records with their kinds, severities, fingerprints and folds, their search
 * documents, their outbox rows and their place in the statistics queue in one statement, and
 * wakes outbox consumers listening on OUTBOX_CHANNEL (delivered at commit); then the tenant's
 * change rules, when it has any. Call it with the transaction that writes the CI change itself:
 * all of it lands together or not at all. One statement, so a writer that queues its statements
 * (the reconcile's batches) does not wait for this one to be answered before sending the next.
 */
export async function recordChanges(sql: Queryable, records: readonly NewChangeRecord[]): Promise<number> {
  if (records.length === 0) return 0;
  let written = 0;
  for (const round of roundsOf(records.map(shaped))) written += await writeRound(sql, round);
  return written;
}

/**
 * The batch as rounds in which each CI appears once, a CI's records in time order across them, so
 * each round's folds follow from the one before. A batch of distinct CIs (every reconcile batch) is
 * one round, in its own order.
 */
function roundsOf(all: ShapedRecord[]): ShapedRecord[][] {
  const key = (r: ShapedRecord) => `${r.tenant_id} ${r.ci_id}`;
  if (new Set(all.map(key)).size === all.length) return [all];
  const rounds: ShapedRecord[][] = [];
  const seen = new Map<string, number>();
  for (const record of [...all].sort((a, b) => a.changed_at.getTime() - b.changed_at.getTime())) {
    const n = seen.get(key(record)) ?? 0;
    seen.set(key(record), n + 1);
    (rounds[n] ??= []).push(record);
  }
  return rounds;
}

async function writeRound(sql: Queryable, all: readonly ShapedRecord[]): Promise<number> {
  const tenants = [...new Set(all.map((r) => r.tenant_id))];
  const [row] = await sql<{ written: number; ids: string[]; ruled: string[] }[]>`
    with input as (
      -- the position of each record in the batch: ids follow it, as a batch's readers expect
      select r.*, row_number() over () as n
      from jsonb_to_recordset(${jsonText(all.map(withDocument))}::text::jsonb) as r(
        tenant_id uuid, ci_id uuid, source_id bigint, scope_id text, ci_name text, ci_namespace text,
        ci_type text, change_type text, changed_at timestamptz, changes jsonb, search_document text, moved_from_scope_id text,
        kind text, severity text, rolls_up boolean, fingerprint text, foldable boolean, ends boolean)
    ), ${foldsInStatement(sql)}
    written as (
      insert into change_records
        (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields,
         search_vector, moved_from_scope_id, kind, severity, rolls_up, fingerprint, fold_at)
      select r.tenant_id, r.ci_id, r.source_id, r.scope_id, r.ci_name, r.ci_namespace, r.ci_type, r.change_type,
             r.changed_at, r.changes,
             array(select distinct left(c ->> 'field', ${MAX_INDEXED_FIELD_LENGTH}) from jsonb_array_elements(r.changes) as c order by 1),
             r.search_document::tsvector, r.moved_from_scope_id, r.kind, r.severity, r.rolls_up, r.fingerprint, r.joined
      from judged r
      order by r.n
      returning id, tenant_id, ci_id, change_type, changed_at
    ), queued as (
      insert into outbox (tenant_id, topic, aggregate_id, payload)
      select tenant_id, ${OUTBOX_TOPIC_CHANGE}, id::text,
             jsonb_build_object('change_id', id::text, 'ci_id', ci_id, 'change_type', change_type)
      from written
      returning 1
    ), counted as (
      insert into change_stats_queue (change_id, changed_at) select id, changed_at from written
    )
    select (select count(*)::int from queued) as written, array(select id::text from written) as ids,
           -- the tenants with change rules: only theirs take a second statement
           array(select distinct tenant_id::text from change_rules where tenant_id = any(${tenants}::uuid[])) as ruled,
           pg_notify(${OUTBOX_CHANNEL}, '')`.execute();
  const written = row?.written ?? 0;
  // the tenant's change rules, in the same transaction: a record is never seen unshaped
  const started = performance.now();
  for (const tenantId of row?.ruled ?? []) await shapeWritten(sql, tenantId, row?.ids ?? []);
  if (row?.ruled.length) changeShapingSeconds.inc((performance.now() - started) / 1000);
  changesWritten.inc(written);
  return written;
}
