/**
 * The reconcile-floor benchmark's floor in a thread of its own, with a V8 heap of its own. The floor
 * keeps every stored object in memory, over a gigabyte for the large cluster; in the thread that
 * times cinv, V8's full collections marked that gigabyte during cinv's collections (the same rounds
 * of every run took 1.4–2.1 times as long), where in production no such heap is beside a reconcile.
 * The thread generates each of its documents itself, as the other side does, and answers each
 * collection with its time.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { UniversalRecord } from '../../src/inventory/write-path/records.js';
import { collectNow } from '../../src/platform/observability/heap-growth.js';
import { cluster, type ClusterShape, type Collection } from './cluster.js';
import { benchConnection, seconds } from './common.js';
import { Floor } from './floor.js';

export interface FloorThreadData {
  database: string;
  tenantId: string;
  sourceId: string;
  scopeId: string;
  shape: ClusterShape;
}

export type FloorRequest = { at: Collection; now: number } | { end: true };
export type FloorAnswer = { seconds: number } | { error: string };

const data = workerData as FloorThreadData;
const sql = benchConnection(data.database, 1);
const floor = new Floor(sql, { tenantId: data.tenantId, sourceId: data.sourceId, scopeId: data.scopeId });

parentPort!.on('message', (request: FloorRequest) => {
  void (async () => {
    if ('end' in request) {
      await sql.end();
      parentPort!.close();
      return;
    }
    try {
      const document = { items: [...cluster(data.shape, request.at)] as UniversalRecord[] };
      collectNow();
      const started = performance.now();
      await floor.collect(document, new Date(request.now));
      const taken = seconds(started);
      floor.compact();
      parentPort!.postMessage({ seconds: taken } satisfies FloorAnswer);
    } catch (error) {
      parentPort!.postMessage({
        error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      } satisfies FloorAnswer);
    }
  })();
});
