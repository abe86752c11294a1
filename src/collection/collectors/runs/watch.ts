import type { UniversalRecord } from '../../../inventory/write-path/records.js';
import type { WatchBatch } from '../../types/plugin.js';

/** Changes gathered from a watch, merged per instance: the last word on each object wins. */
export interface Deltas {
  scopes: { scopeId: string | null; upserts: UniversalRecord[]; deletions: string[] }[];
  /** The newest start point per key among the merged batches; valid once these deltas are written. */
  resume: Map<string, string>;
  /** Events received (before merging), for metrics and the run's counts. */
  events: number;
}

class DeltaBuffer {
  private readonly scopes = new Map<string | null, Map<string, UniversalRecord | null>>();
  private resume = new Map<string, string>();
  events = 0;
  size = 0;

  /** Objects, or only a moved start point (a bookmark), waiting to be handed on. */
  get pending(): boolean {
    return this.size > 0 || this.resume.size > 0;
  }

  add(batch: WatchBatch): void {
    let objects = this.scopes.get(batch.scopeId);
    if (!objects) this.scopes.set(batch.scopeId, (objects = new Map()));
    const put = (id: string, value: UniversalRecord | null) => {
      if (!objects.has(id)) this.size++;
      // delete first so the object takes its place in arrival order
      objects.delete(id);
      objects.set(id, value);
    };
    for (const record of batch.upserts) put(record.external_id, record);
    for (const id of batch.deletions) put(id, null);
    this.events += batch.upserts.length + batch.deletions.length;
    if (batch.resume) this.resume.set(batch.resume.key, batch.resume.version);
  }

  take(): Deltas {
    const scopes = [...this.scopes].map(([scopeId, objects]) => {
      const upserts: UniversalRecord[] = [];
      const deletions: string[] = [];
      for (const [id, record] of objects) {
        if (record) upserts.push(record);
        else deletions.push(id);
      }
      return { scopeId, upserts, deletions };
    });
    const taken = { scopes, resume: this.resume, events: this.events };
    this.scopes.clear();
    this.resume = new Map();
    this.events = 0;
    this.size = 0;
    return taken;
  }
}

/**
 * Gathers a watch's batches into larger ones, so a busy source does not write one transaction per
 * event: a merged batch is handed on when it holds `maxObjects` objects or when `maxWaitMs` has
 * passed since its first event, whichever comes first (a batch that only moves a start point, a
 * bookmark, is handed on too, so the resume point moves on a quiet source). The watch is read ahead while a merged
 * batch is written, but at most one read is outstanding.
 */
export async function* coalesce(
  watch: AsyncIterable<WatchBatch>,
  maxObjects: number,
  maxWaitMs: number,
): AsyncGenerator<Deltas> {
  const iterator = watch[Symbol.asyncIterator]();
  const buffer = new DeltaBuffer();
  let pending: Promise<IteratorResult<WatchBatch>> | undefined;
  let due = 0;
  try {
    for (;;) {
      pending ??= iterator.next();
      let next: IteratorResult<WatchBatch> | 'due';
      if (!buffer.pending) {
        next = await pending;
      } else {
        let timer: NodeJS.Timeout | undefined;
        const elapsed = new Promise<'due'>((resolve) => {
          timer = setTimeout(() => resolve('due'), Math.max(0, due - Date.now()));
        });
        next = await Promise.race([pending, elapsed]).finally(() => clearTimeout(timer));
      }
      if (next === 'due') {
        yield buffer.take();
        continue;
      }
      pending = undefined;
      if (next.done) {
        if (buffer.pending) yield buffer.take();
        return;
      }
      if (!buffer.pending) due = Date.now() + maxWaitMs;
      buffer.add(next.value);
      if (buffer.size >= maxObjects) yield buffer.take();
    }
  } finally {
    // a read may still be waiting on the source: the caller aborts the watch's signal, which ends
    // it; waiting for it here could hang on a quiet source
    if (pending === undefined) await iterator.return?.();
    else void pending.then(() => iterator.return?.()).catch(() => undefined);
  }
}
