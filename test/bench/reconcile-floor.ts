/**
 * The reconcile beside its floor. The same collections of the generated cluster are reconciled by
 * cinv in one database and, in a second database with the same schema, by the least work that
 * leaves the same rows behind, phase by phase and interleaved, so that every figure is a ratio
 * taken in one run on one machine state.
 *
 * The floor knows in advance what every record is (new, unchanged or changed, with its stored
 * content), so it skips what a reconcile needs to find that out in the database: the lookup by
 * external id, the stored rows of changed CIs, the source lock, pending references and the
 * removal of relationships no longer named. It still validates the document and computes the
 * digests (no collection can skip them), writes the same rows (CIs, last-seen rows, change records
 * with their search documents, outbox and statistics queue rows, relationships; the schema's
 * triggers write versions, undo entries and counters for both), one transaction per batch with
 * its statements pipelined, through the multi-row statement forms that measured cheapest here.
 * cinv runs as on a PostgreSQL server, its batches in two lanes; the floor writes on one
 * connection, so a ratio below 1 on the first load is the lanes' overlap.
 *
 *   npm run bench -- reconcile-floor [pods]
 */
import { asJson, type Queryable, type Sql } from '../../src/db/database.js';
import { onTheWire, queued } from '../../src/db/pipeline.js';
import { createdRecord, changeRecord, recordChanges, type NewChangeRecord } from '../../src/history/writer.js';
import { fieldChanges } from '../../src/inventory/classify.js';
import { contentHash, metricsOf } from '../../src/inventory/content.js';
import { assertSnapshot, reconcile } from '../../src/inventory/reconcile.js';
import type { UniversalRecord } from '../../src/inventory/records.js';
import { insertCis, touchLastSeen, updateCis, type CiWrite, type InventoryKey, type StoredContent } from '../../src/inventory/store.js';
import { collectNow } from '../../src/observability/heap-growth.js';
import { ensureSource } from '../../src/sources/store.js';
import { DEFAULT_TENANT_ID } from '../../src/tenants.js';
import { uuidv7 } from 'uuidv7';
import { cluster, LARGE_CLUSTER, type Collection } from './cluster.js';
import { benchDatabase, seconds, type Figure } from './common.js';

const BATCH = 1000;
export const SCOPE = 'prod';
const TABLES =
  'truncate outbox, relationships, relationship_history, pending_relationships, change_records, change_stats_queue, change_feed, ci_last_seen, configuration_items, ci_versions, ci_undo, ci_counts, ci_type_counts, ci_count_deltas restart identity cascade';

interface Known {
  ciId: string;
  hash: string;
  stored: StoredContent;
}

/** The floor's side: what it knows about every stored CI, by external id. */
export class Floor {
  private readonly known = new Map<string, Known>();
  constructor(
    private readonly sql: Sql,
    private readonly key: InventoryKey,
  ) {}

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
          touchRelationships(tx, this.key.tenantId, work.updates.map((u) => u.ci_id), now),
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

  private plan(records: UniversalRecord[], hashes: string[], now: Date, deferred: { from_ci_id: string; to_external_id: string; type: string }[]) {
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
      const stored: StoredContent = { ci_id: ciId, external_id: record.external_id, ci_type: record.ci_type, name: record.name, namespace: write.namespace, status: 'active', raw_data: record.raw_data, type_data: typeData };
      if (before) {
        updates.push(write);
        const fields = fieldChanges(before.stored, record);
        if (fields.length > 0) updated.push(changeRecord(ci, 'UPDATED', fields, now));
      } else {
        inserts.push(write);
        changes.push(createdRecord(ci, now));
        for (const rel of record.relationships ?? []) {
          const target = this.known.get(rel.target_external_id);
          if (target) relationships.set(`${rel.type}\u0000${target.ciId}\u0000${ciId}`, { from_ci_id: ciId, to_ci_id: target.ciId, type: rel.type });
          else deferred.push({ from_ci_id: ciId, to_external_id: rel.target_external_id, type: rel.type });
        }
      }
      this.known.set(record.external_id, { ciId, hash, stored });
    });
    changes.push(...updated);
    return { inserts, updates, seen, firstSeen, changes, relationships: [...relationships.values()] };
  }
}

function insertRelationships(sql: Queryable, key: InventoryKey, rows: { from_ci_id: string; to_ci_id: string; type: string }[], now: Date): Promise<unknown> {
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

export async function benchReconcileFloor(pods = LARGE_CLUSTER.pods): Promise<Figure[]> {
  const shape = { ...LARGE_CLUSTER, pods, deployments: Math.max(1, Math.round((LARGE_CLUSTER.deployments * pods) / LARGE_CLUSTER.pods)) };
  const ours = await benchDatabase('cinv_bench_reconcile');
  const floorSql = await benchDatabase('cinv_bench_reconcile_floor');
  const figures: Figure[] = [];
  try {
    const prepare = async (sql: Sql) => {
      await sql.unsafe(TABLES);
      return ensureSource(sql, DEFAULT_TENANT_ID, 'bench-cluster', 'kubernetes');
    };
    const source = await prepare(ours);
    const floorSource = await prepare(floorSql);
    const floor = new Floor(floorSql, { tenantId: DEFAULT_TENANT_ID, sourceId: floorSource.id, scopeId: SCOPE });
    let minute = 0;
    const collect = async (side: 'cinv' | 'floor', at: Collection, now: Date) => {
      // each side gets a fresh document: validation and digests are part of both figures
      const document: unknown = { items: [...cluster(shape, at)] };
      // both sides run in this process and the floor keeps every stored object, so the heap holds
      // over a gigabyte live; left to V8, a full collection's marking took a core for seconds from
      // the same rounds of every run (the floor's fifth metrics round, cinv's second 1 % round)
      collectNow();
      const started = performance.now();
      if (side === 'floor') {
        await floor.collect(document as { items: UniversalRecord[] }, now);
      } else {
        assertSnapshot(document);
        const records = (document as { items: UniversalRecord[] }).items;
        await reconcile(ours, { tenantId: DEFAULT_TENANT_ID, sourceId: source.id, scopeId: SCOPE, mode: 'snapshot', records }, { now, batchSize: BATCH, lanes: true });
      }
      return seconds(started);
    };
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    /**
     * Runs a phase on both sides `rounds` times (round i collects `at(i)`), the side that goes first
     * alternating, and reports the medians of the times and of the rounds' ratios. The machine's
     * speed drifts by tens of percent over a run, and the two sides of one round run seconds apart:
     * a ratio taken within each round leaves the drift out, where a ratio of two medians may take
     * them from different rounds.
     */
    const phase = async (path: string, rounds: number, at: (round: number) => Collection, target: { seconds?: number; ratio?: number }) => {
      const times = { cinv: [] as number[], floor: [] as number[] };
      const ratios: number[] = [];
      for (let round = 0; round < rounds; round++) {
        const now = new Date(Date.UTC(2026, 10, 1, 0, ++minute));
        const order = round % 2 === 0 ? (['cinv', 'floor'] as const) : (['floor', 'cinv'] as const);
        for (const side of order) times[side].push(await collect(side, at(round), now));
        ratios.push(times.cinv.at(-1)! / times.floor.at(-1)!);
        console.log(`${path}, round ${round + 1}: cinv ${times.cinv.at(-1)} s, floor ${times.floor.at(-1)} s`);
      }
      const cinv = median(times.cinv);
      const floorSeconds = median(times.floor);
      const label = rounds > 1 ? `${path} (median of ${rounds})` : path;
      figures.push({ bench: 'reconcile-floor', path: `${label}: cinv`, value: cinv, unit: 's', target: target.seconds });
      figures.push({ bench: 'reconcile-floor', path: `${label}: floor`, value: floorSeconds, unit: 's' });
      figures.push({ bench: 'reconcile-floor', path: `${label}: cinv ÷ floor`, value: Math.round(median(ratios) * 100) / 100, unit: 'ratio', target: target.ratio });
      return cinv;
    };
    const large = shape.pods >= LARGE_CLUSTER.pods;
    await phase('first load', 1, () => ({ collection: 0, generation: 0 }), { seconds: large ? 20 : undefined });
    // re-collections come minutes after a first load, when autovacuum has visited the new rows
    await ours`vacuum analyze configuration_items`;
    await floorSql`vacuum analyze configuration_items`;
    const ROUNDS = 5;
    const unchanged = await phase('unchanged', ROUNDS, () => ({ collection: 0, generation: 0 }), { seconds: large ? 2.0 : undefined, ratio: 1.2 });
    const metrics = await phase('metrics only', ROUNDS, (round) => ({ collection: round + 1, generation: 0 }), {});
    figures.push({ bench: 'reconcile-floor', path: 'metrics only ÷ unchanged', value: Math.round((metrics / unchanged) * 100) / 100, unit: 'ratio', target: 1.3 });
    // every round moves the same 1 % of the objects to a new generation
    await phase('1 % changed', ROUNDS, (round) => ({ collection: ROUNDS, generation: round + 1, changeEvery: 100 }), { seconds: large ? 3.0 : undefined, ratio: 1.2 });
    return figures;
  } finally {
    await ours.end();
    await floorSql.end();
  }
}
