/**
 * The reconcile beside its floor. The same collections of the generated cluster are reconciled by
 * cinv in one database and, in a second database with the same schema, by the least work that
 * leaves the same rows behind (floor.ts), phase by phase and interleaved, so that every figure is
 * a ratio taken in one run on one machine state. cinv runs as on a PostgreSQL server, its batches
 * in two lanes; the floor writes on one connection, so a ratio below 1 on the first load is the
 * lanes' overlap. The floor runs in a thread of its own (floor-thread.ts), so that each side's
 * garbage collections mark its own heap only.
 *
 *   npm run bench -- reconcile-floor [pods]
 */
import type { Sql } from '../../src/platform/db/database.js';
import { assertSnapshot, reconcile } from '../../src/inventory/write-path/reconcile.js';
import type { UniversalRecord } from '../../src/inventory/write-path/records.js';
import { Worker } from 'node:worker_threads';
import { collectNow } from '../../src/platform/observability/heap-growth.js';
import { ensureSource } from '../../src/collection/sources/store.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { cluster, LARGE_CLUSTER, type Collection } from './cluster.js';
import { benchDatabase, seconds, type Figure } from './common.js';
import { BATCH, SCOPE } from './floor.js';
import type { FloorAnswer, FloorRequest, FloorThreadData } from './floor-thread.js';

const TABLES =
  'truncate outbox, relationships, relationship_history, pending_relationships, change_records, change_stats_queue, change_feed, ci_last_seen, configuration_items, ci_versions, ci_undo, ci_counts, ci_type_counts, ci_count_deltas restart identity cascade';

/** The floor's thread: one collection at a time, answered with its time in seconds. */
class FloorThread {
  private readonly worker: Worker;
  constructor(data: FloorThreadData) {
    // a thread does not inherit the process's TypeScript loader (tsx): it registers it itself first
    const loader = import.meta.resolve('tsx/esm/api');
    const thread = new URL('./floor-thread.ts', import.meta.url).href;
    const start = `import(${JSON.stringify(loader)}).then(({ register }) => { register(); return import(${JSON.stringify(thread)}); })`;
    this.worker = new Worker(start, { eval: true, workerData: data });
  }

  collect(at: Collection, now: Date): Promise<number> {
    return new Promise((resolve, reject) => {
      const answered = (answer: FloorAnswer) => {
        this.worker.off('error', reject);
        if ('error' in answer) reject(new Error(`the floor's thread failed: ${answer.error}`));
        else resolve(answer.seconds);
      };
      this.worker.once('message', answered);
      this.worker.once('error', reject);
      this.worker.postMessage({ at, now: now.getTime() } satisfies FloorRequest);
    });
  }

  async end(): Promise<void> {
    const exited = new Promise((resolve) => this.worker.once('exit', resolve));
    this.worker.postMessage({ end: true } satisfies FloorRequest);
    await exited;
  }
}

export async function benchReconcileFloor(pods = LARGE_CLUSTER.pods): Promise<Figure[]> {
  const shape = {
    ...LARGE_CLUSTER,
    pods,
    deployments: Math.max(1, Math.round((LARGE_CLUSTER.deployments * pods) / LARGE_CLUSTER.pods)),
  };
  const ours = await benchDatabase('cinv_bench_reconcile');
  const floorSql = await benchDatabase('cinv_bench_reconcile_floor');
  const figures: Figure[] = [];
  const ends: (() => Promise<void>)[] = [];
  try {
    const prepare = async (sql: Sql) => {
      await sql.unsafe(TABLES);
      return ensureSource(sql, DEFAULT_TENANT_ID, 'bench-cluster', 'kubernetes');
    };
    const source = await prepare(ours);
    const floorSource = await prepare(floorSql);
    const floor = new FloorThread({
      database: 'cinv_bench_reconcile_floor',
      tenantId: DEFAULT_TENANT_ID,
      sourceId: floorSource.id,
      scopeId: SCOPE,
      shape,
    });
    ends.push(() => floor.end());
    let minute = 0;
    const collect = async (side: 'cinv' | 'floor', at: Collection, now: Date) => {
      if (side === 'floor') return floor.collect(at, now);
      // each side gets a fresh document: validation and digests are part of both figures; the
      // collection before the timer starts each side from a heap without the last one's garbage
      const document: unknown = { items: [...cluster(shape, at)] };
      collectNow();
      const started = performance.now();
      assertSnapshot(document);
      const records = (document as { items: UniversalRecord[] }).items;
      await reconcile(
        ours,
        { tenantId: DEFAULT_TENANT_ID, sourceId: source.id, scopeId: SCOPE, mode: 'snapshot', records },
        { now, batchSize: BATCH, lanes: true },
      );
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
    const phase = async (
      path: string,
      rounds: number,
      at: (round: number) => Collection,
      target: { seconds?: number; ratio?: number },
    ) => {
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
      figures.push({
        bench: 'reconcile-floor',
        path: `${label}: cinv`,
        value: cinv,
        unit: 's',
        target: target.seconds,
      });
      figures.push({ bench: 'reconcile-floor', path: `${label}: floor`, value: floorSeconds, unit: 's' });
      figures.push({
        bench: 'reconcile-floor',
        path: `${label}: cinv ÷ floor`,
        value: Math.round(median(ratios) * 100) / 100,
        unit: 'ratio',
        target: target.ratio,
      });
      return cinv;
    };
    const large = shape.pods >= LARGE_CLUSTER.pods;
    await phase('first load', 1, () => ({ collection: 0, generation: 0 }), { seconds: large ? 20 : undefined });
    // re-collections come minutes after a first load, when autovacuum has visited the new rows
    await ours`vacuum analyze configuration_items`;
    await floorSql`vacuum analyze configuration_items`;
    const ROUNDS = 5;
    const unchanged = await phase('unchanged', ROUNDS, () => ({ collection: 0, generation: 0 }), {
      seconds: large ? 2.0 : undefined,
      ratio: 1.2,
    });
    const metrics = await phase('metrics only', ROUNDS, (round) => ({ collection: round + 1, generation: 0 }), {});
    figures.push({
      bench: 'reconcile-floor',
      path: 'metrics only ÷ unchanged',
      value: Math.round((metrics / unchanged) * 100) / 100,
      unit: 'ratio',
      target: 1.3,
    });
    // every round moves the same 1 % of the objects to a new generation
    await phase('1 % changed', ROUNDS, (round) => ({ collection: ROUNDS, generation: round + 1, changeEvery: 100 }), {
      seconds: large ? 3.0 : undefined,
      ratio: 1.2,
    });
    return figures;
  } finally {
    for (const end of ends) await end();
    await ours.end();
    await floorSql.end();
  }
}
