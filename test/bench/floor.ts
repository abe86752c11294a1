/**
 * The least work that leaves the same rows as a reconcile (see reconcile-floor.ts): it knows in
 * advance what every record is (new, unchanged or changed, with its stored content), so it skips
 * what a reconcile needs to find that out in the database: the lookup by external id, the stored
 * rows of changed CIs, the source lock, pending references and the removal of relationships no
 * longer named. It still validates the document and computes the digests (no collection can skip
 * them), writes the same rows (CIs, last-seen rows, change records with their search documents,
 * outbox and statistics queue rows, relationships; the schema's triggers write versions, undo
 * entries and counters for both), one transaction per batch with its statements pipelined, through
 * the multi-row statement forms that measured cheapest here. It writes on one connection.
 * test/inventory/write-path/floor-equivalence.test.ts checks that both leave the same rows.
 */
import { asJson, type Queryable, type Sql } from '../../src/platform/db/database.js';
import { onTheWire, queued } from '../../src/platform/db/pipeline.js';
import { createdRecord, changeRecord, recordChanges, type NewChangeRecord } from '../../src/history/records/writer.js';
import { fieldChanges } from '../../src/inventory/write-path/classify.js';
import { contentHash, metricsOf } from '../../src/inventory/write-path/content.js';
import { assertSnapshot } from '../../src/inventory/write-path/reconcile.js';
import type { UniversalRecord } from '../../src/inventory/write-path/records.js';
import {
  insertCis,
  touchLastSeen,
  updateCis,
  type CiWrite,
  type InventoryKey,
  type StoredContent,
} from '../../src/inventory/write-path/store.js';
import { uuidv7 } from 'uuidv7';

export const BATCH = 1000;
export const SCOPE = 'prod';

interface Known {
  ciId: string;
  hash: string;
  /** The stored content, as JSON text once compact() has run (see there). */
  stored: StoredContent | string;
}

/** The floor's side: what it knows about every stored CI, by external id. */
export class Floor {
  private readonly known = new Map<string, Known>();
  constructor(
    private readonly sql: Sql,
    private readonly key: InventoryKey,
  ) {}

  /**
   * Turns what the floor knows into JSON text, to be called outside its timed collections. The
   * floor is told what every record is, so keeping that knowledge is not part of its work; held as
   * objects (a gigabyte for the large cluster), it made every full garbage collection of the
   * floor's timed collections mark it, where a string is marked at once.
   */
  compact(): void {
    for (const known of this.known.values()) {
      if (typeof known.stored !== 'string') known.stored = JSON.stringify(known.stored);
    }
  }

  async collect(document: { items: UniversalRecord[] }, now: Date): Promise<void> {
    assertSnapshot(document);
    const batches: UniversalRecord[][] = [];
    for (let i = 0; i < document.items.length; i += BATCH) batches.push(document.items.slice(i, i + BATCH));
    let hashes = batches[0]?.map(contentHash) ?? [];
    const deferred: { from_ci_id: string; to_external_id: string; type: string }[] = [];
    for (const [index, records] of batches.entries()) {
      const work = this.plan(records, hashes, now, deferred);
      await this.sql.begin(async (tx) => {
        const sent: Promise<unknown>[] = [
          insertCis(tx, this.key.tenantId, this.key.sourceId, work.inserts, now),
          updateCis(tx, work.updates, now),
          touchLastSeen(tx, this.key.tenantId, work.firstSeen, now),
          seenAgain(tx, work.seen, now),
          recordChanges(tx, work.changes),
          insertRelationships(tx, this.key, work.relationships, now),
          touchRelationships(
            tx,
            this.key.tenantId,
            work.updates.map((u) => u.ci_id),
            now,
          ),
        ];
        sent.forEach(queued);
        await onTheWire();
        hashes = batches[index + 1]?.map(contentHash) ?? [];
        await Promise.all(sent);
      });
    }
    // references to objects of later batches, once all of them exist
    const resolvable = deferred.flatMap((r) => {
      const target = this.known.get(r.to_external_id);
      return target ? [{ from_ci_id: r.from_ci_id, to_ci_id: target.ciId, type: r.type }] : [];
    });
    if (resolvable.length > 0) await insertRelationships(this.sql, this.key, resolvable, now);
  }

  private plan(
    records: UniversalRecord[],
    hashes: string[],
    now: Date,
    deferred: { from_ci_id: string; to_external_id: string; type: string }[],
  ) {
    const { tenantId, sourceId } = this.key;
    const inserts: CiWrite[] = [];
    const updates: CiWrite[] = [];
    const seen: { ci_id: string; metrics: string | null }[] = [];
    const firstSeen: { ci_id: string; metrics: string | null }[] = [];
    const changes: NewChangeRecord[] = [];
    const updated: NewChangeRecord[] = [];
    const relationships = new Map<string, { from_ci_id: string; to_ci_id: string; type: string }>();
    records.forEach((record, index) => {
      const hash = hashes[index]!;
      const before = this.known.get(record.external_id);
      const ciId = before?.ciId ?? uuidv7();
      (before ? seen : firstSeen).push({ ci_id: ciId, metrics: metricsOf(record) });
      if (before && before.hash === hash) return;
      const { metrics: _metrics, ...typeData } = record.type_data ?? {};
      const write: CiWrite = {
        ci_id: ciId,
        scope_id: SCOPE,
        external_id: record.external_id,
        ci_type: record.ci_type,
        name: record.name,
        namespace: record.namespace ?? null,
        raw_data: record.raw_data,
        type_data: typeData,
        content_hash: hash,
      };
      const ci = { ...write, tenant_id: tenantId, source_id: sourceId };
      const stored: StoredContent = {
        ci_id: ciId,
        external_id: record.external_id,
        scope_id: SCOPE,
        ci_type: record.ci_type,
        name: record.name,
        namespace: write.namespace,
        status: 'active',
        raw_data: record.raw_data,
        type_data: typeData,
      };
      if (before) {
        updates.push(write);
        const prior = typeof before.stored === 'string' ? (JSON.parse(before.stored) as StoredContent) : before.stored;
        const fields = fieldChanges(prior, record);
        if (fields.length > 0) updated.push(changeRecord(ci, 'UPDATED', fields, now));
      } else {
        inserts.push(write);
        changes.push(createdRecord(ci, now));
        for (const rel of record.relationships ?? []) {
          const target = this.known.get(rel.target_external_id);
          if (target)
            relationships.set(`${rel.type}\u0000${target.ciId}\u0000${ciId}`, {
              from_ci_id: ciId,
              to_ci_id: target.ciId,
              type: rel.type,
            });
          else deferred.push({ from_ci_id: ciId, to_external_id: rel.target_external_id, type: rel.type });
        }
      }
      this.known.set(record.external_id, { ciId, hash, stored });
    });
    changes.push(...updated);
    return { inserts, updates, seen, firstSeen, changes, relationships: [...relationships.values()] };
  }
}

function insertRelationships(
  sql: Queryable,
  key: InventoryKey,
  rows: { from_ci_id: string; to_ci_id: string; type: string }[],
  now: Date,
): Promise<unknown> {
  if (rows.length === 0) return Promise.resolve();
  return sql`
    insert into relationships (tenant_id, source_id, from_ci_id, to_ci_id, relationship_type, created_at, last_seen, from_scope_id, to_scope_id)
    select ${key.tenantId}, ${key.sourceId}, r.from_ci_id, r.to_ci_id, r.type, ${now}, ${now}, ${SCOPE}::text, ${SCOPE}::text
    from jsonb_to_recordset(${sql.json(asJson(rows))}::jsonb) as r(from_ci_id uuid, to_ci_id uuid, type text)`.execute();
}

/** Moves last_seen and the metrics of stored CIs (their rows exist: a plain update, HOT). */
function seenAgain(sql: Queryable, seen: { ci_id: string; metrics: string | null }[], now: Date): Promise<unknown> {
  if (seen.length === 0) return Promise.resolve();
  return sql`
    update ci_last_seen l set last_seen = ${now}, metrics = s.metrics::jsonb
    from unnest(${seen.map((s) => s.ci_id)}::uuid[], ${seen.map((s) => s.metrics)}::text[]) as s(id, metrics)
    where l.ci_id = s.id`.execute();
}

/** A rewritten owner's relationships are seen again (the reconcile names them anew). */
function touchRelationships(sql: Queryable, tenantId: string, owners: string[], now: Date): Promise<unknown> {
  if (owners.length === 0) return Promise.resolve();
  return sql`update relationships set last_seen = ${now} from unnest(${owners}::uuid[]) as o(id) where tenant_id = ${tenantId} and from_ci_id = o.id`.execute();
}
