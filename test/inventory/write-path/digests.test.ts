import { expect } from 'chai';
import { setTimeout as sleep } from 'node:timers/promises';
import { contentHash } from '../../../src/inventory/write-path/content.js';
import { Digests } from '../../../src/inventory/write-path/digests.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';

const records: UniversalRecord[] = Array.from({ length: 240 }, (_, i) => ({
  external_id: `pod/default/p-${i}`,
  ci_type: 'k8s.pod',
  name: `p-${i}`,
  namespace: 'default',
  raw_data: { metadata: { name: `p-${i}`, resourceVersion: String(i) }, spec: { replicas: i % 3 } },
}));
const expected = records.map(contentHash);

describe('Digests (the next batch hashed while the database answers)', () => {
  it('hashes every record while the answer keeps it waiting, and gives the digests by position', async () => {
    const digests = new Digests(records);
    await digests.whileWaiting(new Promise(() => {}));
    expect(digests.all()).to.deep.equal(expected);
  });

  it('stops once the answer is in, and hashes the rest when asked for all of them', async () => {
    const digests = new Digests(records);
    // answered before the first slice: nothing is hashed while waiting
    await digests.whileWaiting(Promise.resolve());
    expect(digests.hashed).to.equal(0);
    // a failed answer ends the wait the same way
    await digests.whileWaiting(Promise.reject(new Error('statement failed')));
    expect(digests.hashed).to.equal(0);
    expect(digests.all()).to.deep.equal(expected);
  });

  it('leaves the event loop free between slices, so that an answer arriving meanwhile ends the wait', async () => {
    const many = Array.from({ length: 20 }, () => records).flat();
    const digests = new Digests(many);
    // 4 800 records take some 40 ms to hash; the answer comes after 1 ms
    await digests.whileWaiting(sleep(1));
    expect(digests.hashed).to.be.below(many.length);
    expect(digests.all()).to.deep.equal(many.map(contentHash));
  });
});
