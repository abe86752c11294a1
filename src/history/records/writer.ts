import type { Queryable } from '../../platform/db/database.js';
import { jsonText } from '../../platform/db/pipeline.js';
import type { FieldChange } from './diff.js';
import { documentTokens, toTsvectorText } from './document.js';
import { changesWritten } from '../../platform/observability/metrics.js';
import { fingerprintOf, shapeOf } from './kinds.js';
import { assignFolds } from './folds.js';
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
  fold_at: Date | null;
}

const shaped = (record: NewChangeRecord): ShapedRecord => ({
  ...record,
  ...shapeOf(record),
  fingerprint: fingerprintOf(record),
  fold_at: null,
});

const withDocument = (record: ShapedRecord) => ({
  ...record,
  search_document: toTsvectorText(documentTokens(record)),
});

/**
 * Writes change records with their search documents, their outbox rows and their place in the statistics queue in one
 * statement, and wakes outbox consumers listening on OUTBOX_CHANNEL (delivered at commit). Call it
 * with the transaction that writes the CI change itself: all of it lands together or not at all.
 */
export async function recordChanges(sql: Queryable, records: readonly NewChangeRecord[]): Promise<number> {
  if (records.length === 0) return 0;
  const all = records.map(shaped);
  const tenants = [...new Set(all.map((r) => r.tenant_id))];
  for (const tenantId of tenants)
    await assignFolds(
      sql,
      tenantId,
      all.filter((r) => r.tenant_id === tenantId),
    );
  const [row] = await sql<{ written: number; ids: string[] }[]>`
    with written as (
      insert into change_records
        (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields,
         search_vector, moved_from_scope_id, kind, severity, rolls_up, fingerprint, fold_at)
      select r.tenant_id, r.ci_id, r.source_id, r.scope_id, r.ci_name, r.ci_namespace, r.ci_type, r.change_type,
             r.changed_at, r.changes,
             array(select distinct left(c ->> 'field', ${MAX_INDEXED_FIELD_LENGTH}) from jsonb_array_elements(r.changes) as c order by 1),
             r.search_document::tsvector, r.moved_from_scope_id, r.kind, r.severity, r.rolls_up, r.fingerprint, r.fold_at
      from jsonb_to_recordset(${jsonText(all.map(withDocument))}::text::jsonb) as r(
        tenant_id uuid, ci_id uuid, source_id bigint, scope_id text, ci_name text, ci_namespace text,
        ci_type text, change_type text, changed_at timestamptz, changes jsonb, search_document text, moved_from_scope_id text,
        kind text, severity text, rolls_up boolean, fingerprint text, fold_at timestamptz)
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
           pg_notify(${OUTBOX_CHANNEL}, '')`.execute();
  const written = row?.written ?? 0;
  // the tenant's change rules, in the same transaction: a record is never seen unshaped
  for (const tenantId of tenants) await shapeWritten(sql, tenantId, row?.ids ?? []);
  changesWritten.inc(written);
  return written;
}
