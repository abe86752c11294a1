import { expect } from 'chai';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { heapHeldTight, heldGrowingPercent, holdHeapTight } from '../../../src/platform/observability/heap-growth.js';

describe('the heap policy of bulk writes', () => {
  it('holds while any write holds it, and a release counts once', () => {
    expect(heapHeldTight()).to.equal(false);
    const first = holdHeapTight();
    const second = holdHeapTight();
    first();
    first();
    expect(heapHeldTight(), 'the second write still runs').to.equal(true);
    second();
    expect(heapHeldTight()).to.equal(false);
  });

  it('holds a stream at a tenth and records in memory at 30 %, the tightest while both run, the default after', () => {
    expect(heldGrowingPercent()).to.equal(0);
    const inMemory = holdHeapTight();
    expect(heldGrowingPercent()).to.equal(30);
    const stream = holdHeapTight({ large: true });
    expect(heldGrowingPercent()).to.equal(10);
    inMemory();
    expect(heldGrowingPercent(), 'the stream still runs').to.equal(10);
    const another = holdHeapTight();
    stream();
    expect(heldGrowingPercent()).to.equal(30);
    another();
    expect(heldGrowingPercent()).to.equal(0);
  });
});

describe('a large bulk write', () => {
  /** Full (mark-compact) collections that started while `work` ran. */
  async function majorCollections(work: () => void): Promise<number> {
    let seen = 0;
    let started = Infinity;
    let ended = -Infinity;
    const observer = new PerformanceObserver((list) => {
      seen += list
        .getEntries()
        .filter(
          (entry) =>
            (entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR &&
            entry.startTime >= started &&
            entry.startTime <= ended,
        ).length;
    });
    observer.observe({ entryTypes: ['gc'] });
    started = performance.now();
    work();
    ended = performance.now();
    // gc entries are delivered after the collection, on a later turn
    await new Promise((resolve) => setTimeout(resolve, 50));
    observer.disconnect();
    return seen;
  }

  it('starts with a full collection when it is the first to hold, so the tight limit applies from its first batch', async () => {
    let release = () => {};
    expect(await majorCollections(() => (release = holdHeapTight({ large: true })))).to.be.at.least(1);
    // nested inside a running hold: the limit is tight already
    let nested = () => {};
    expect(await majorCollections(() => (nested = holdHeapTight({ large: true })))).to.equal(0);
    nested();
    release();
    expect(await majorCollections(() => holdHeapTight()())).to.equal(0);
  });
});
