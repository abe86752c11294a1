import { expect } from 'chai';
import { heapHeldTight, holdHeapTight } from '../../src/observability/heap-growth.js';

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
});
