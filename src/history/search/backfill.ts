import type { Sql } from 'postgres';
import type { FieldChange } from '../records/diff.js';
import { documentTokens, toTsvectorText } from '../records/document.js';

interface Pending {
  id: string;
  ci_name: string;
  ci_namespace: string | null;
  ci_type: string;
  changes: FieldChange[];
}

/**
 * Gives change records without a search document (written before documents were stored, or
 * inserted by hand) theirs, in batches by id; each batch is one short read and one update.
 * Returns how many records it filled. Safe to run from several processes: a record is filled
 * with the same document whoever does it.
 */
export async function backfillSearchDocuments(
  sql: Sql,
  batchSize = 1000,
  onBatch?: (done: number) => void,
): Promise<number> {
  let done = 0;
  let after = '0';
  for (;;) {
    const batch = await sql<Pending[]>`
      select cr.id::text as id, cr.ci_name, cr.ci_namespace, cr.ci_type, cr.changes from change_records cr
      where cr.search_vector is null and cr.id > ${after}::bigint order by cr.id limit ${batchSize}`;
    if (batch.length === 0) return done;
    const documents = batch.map((record) => toTsvectorText(documentTokens(record)));
    await sql`
      update change_records cr set search_vector = filled.document::tsvector
      from unnest(${batch.map((r) => r.id)}::bigint[], ${documents}::text[]) as filled(id, document)
      where cr.id = filled.id and cr.search_vector is null`;
    done += batch.length;
    after = batch.at(-1)!.id;
    onBatch?.(done);
  }
}
