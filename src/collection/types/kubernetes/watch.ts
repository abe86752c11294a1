import { WatchExpired, type WatchBatch, type WatchContext } from '../plugin.js';
import { KubeApi } from './api.js';
import { ClusterIndex, clusterIndexes } from './cluster-index.js';
import { scopeOf } from './collect.js';
import { enabledSpecs, externalId, get, str, type KindSpec, type Obj } from './kinds.js';
import { recordOf } from './records.js';
import type { Usage } from './type-data.js';

interface Queued {
  batch?: WatchBatch;
  error?: unknown;
  end?: boolean;
}

/** Where each kind's watch callbacks leave what they saw, for the generator to hand on in order. */
class EventQueue {
  private readonly items: Queued[] = [];
  private wake: (() => void) | undefined;

  push(item: Queued): void {
    this.items.push(item);
    this.wake?.();
  }

  /** Lets a waiting `next` look at the signal again. */
  nudge(): void {
    this.wake?.();
  }

  async next(signal: AbortSignal): Promise<Queued> {
    while (this.items.length === 0) {
      signal.throwIfAborted();
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
    return this.items.shift()!;
  }
}

/** What one kind's watch events become: single-event batches, bookmarks, deletions, or an error. */
function eventHandler(spec: KindSpec, scopeId: string, index: ClusterIndex, queue: EventQueue) {
  // usage is collected with the list only; watched objects are written without it
  const usage: Usage = { nodes: new Map(), pods: new Map() };
  return (phase: string, object: Obj) => {
    const version = object?.metadata?.resourceVersion;
    const resume = version ? { key: spec.name, version } : undefined;
    if (phase === 'ERROR') {
      const code = get(object, 'code');
      queue.push({
        error:
          code === 410
            ? new WatchExpired(`${spec.path}: ${str(get(object, 'message')) ?? 'resource version too old'}`)
            : new Error(`${spec.path}: ${str(get(object, 'message')) ?? 'watch error'}`),
      });
    } else if (phase === 'BOOKMARK') {
      queue.push({ batch: { scopeId, upserts: [], deletions: [], resume } });
    } else if (phase === 'DELETED') {
      const id = externalId(spec, object);
      index.forget(id);
      queue.push({ batch: { scopeId, upserts: [], deletions: [id], resume } });
    } else {
      const id = externalId(spec, object);
      index.register(spec, id, object);
      queue.push({ batch: { scopeId, upserts: [recordOf(spec, object, index, usage)], deletions: [], resume } });
    }
  };
}

/** How one kind's watch ended: a 410 is `WatchExpired`, another failure an error, a server-side close the end. */
function doneHandler(spec: KindSpec, signal: AbortSignal, queue: EventQueue) {
  return (error: unknown) => {
    if (signal.aborted) return;
    const status = (error as { statusCode?: number } | null)?.statusCode;
    if (status === 410) queue.push({ error: new WatchExpired(`${spec.path}: watch answered 410 Gone`) });
    else if (error) queue.push({ error });
    else queue.push({ end: true });
  };
}

/** One watch per enabled kind from the list's versions, as a stream of single-event batches. */
export async function* watchKubernetes(context: WatchContext): AsyncGenerator<WatchBatch> {
  const api = await KubeApi.connect(context);
  const scopeId = scopeOf(context);
  const index = clusterIndexes.get(context.source.id) ?? new ClusterIndex();
  const queue = new EventQueue();
  // loaded with the client by KubeApi.connect
  const { Watch } = await import('@kubernetes/client-node');
  const watcher = new Watch(api.kc);
  const controllers: AbortController[] = [];
  const stopAll = () => {
    controllers.forEach((c) => c.abort());
    queue.nudge();
  };
  context.signal.addEventListener('abort', stopAll, { once: true });
  try {
    const watched = enabledSpecs(context.source.config).filter((spec) => context.from[spec.name] !== undefined);
    // opened together: each waits for its response headers
    await Promise.all(
      watched.map(async (spec) => {
        const from = { resourceVersion: context.from[spec.name]!, allowWatchBookmarks: true };
        controllers.push(
          await watcher.watch(
            spec.path,
            from,
            eventHandler(spec, scopeId, index, queue),
            doneHandler(spec, context.signal, queue),
          ),
        );
      }),
    );
    for (;;) {
      const item = await queue.next(context.signal);
      if (item.error) throw item.error instanceof Error ? item.error : new Error(String(item.error));
      // one watch ended (a server-side timeout): end all, so the worker reconnects every kind from its newest version
      if (item.end) return;
      yield item.batch!;
    }
  } finally {
    context.signal.removeEventListener('abort', stopAll);
    stopAll();
  }
}
