import { expect } from 'chai';
import { ListWriter } from '../../../src/collection/collectors/runs/list-writer.js';
import type { UniversalRecord } from '../../../src/inventory/write-path/records.js';

const page = (from: number, count: number): UniversalRecord[] =>
  Array.from({ length: count }, (_, i) => ({
    external_id: `o/${from + i}`,
    ci_type: 'k8s.pod',
    name: `o${from + i}`,
    raw_data: {},
  }));

/** A write that ends when the test says so. */
function controlledWrites() {
  const calls: { scopeId: string | null; ids: string[]; end: (error?: Error) => void }[] = [];
  const write = (scopeId: string | null, records: UniversalRecord[]) =>
    new Promise<void>((resolve, reject) => {
      calls.push({
        scopeId,
        ids: records.map((r) => r.external_id),
        end: (error) => (error ? reject(error) : resolve()),
      });
    });
  return { calls, write };
}

const settledNow = async (promise: Promise<unknown>) => {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

describe('a list written in parts', () => {
  it('gathers pages into parts of one scope and at most the part size, written in order, one at a time', async () => {
    const { calls, write } = controlledWrites();
    const writer = new ListWriter(write, 5);
    await writer.add('a', page(0, 3));
    await writer.add('a', page(3, 2));
    expect(calls, 'a part is written once the next page would not fit').to.have.length(0);
    // the part is full: it goes out, and the page waits in the next part while the write runs
    expect(await settledNow(writer.add('a', page(5, 2)))).to.equal(true);
    expect(calls.map((c) => c.ids)).to.deep.equal([['o/0', 'o/1', 'o/2', 'o/3', 'o/4']]);
    // another scope closes the part, which waits for the write before it
    const waiting = writer.add('b', page(7, 1));
    expect(await settledNow(waiting)).to.equal(false);
    calls[0]!.end();
    await waiting;
    expect(calls.map((c) => [c.scopeId, c.ids])).to.deep.equal([
      ['a', ['o/0', 'o/1', 'o/2', 'o/3', 'o/4']],
      ['a', ['o/5', 'o/6']],
    ]);
    const flushed = writer.flush();
    calls[1]!.end();
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls.map((c) => [c.scopeId, c.ids]).at(-1)).to.deep.equal(['b', ['o/7']]);
    expect(await settledNow(flushed), 'flush waits for the last write').to.equal(false);
    calls[2]!.end();
    await flushed;
  });

  it('reports a failed write at the next page and lets the list wait for it', async () => {
    const { calls, write } = controlledWrites();
    const writer = new ListWriter(write, 2);
    await writer.add(null, page(0, 2));
    await writer.add(null, page(2, 2));
    calls[0]!.end(new Error('the database went away'));
    let failure: unknown;
    await writer.add(null, page(4, 2)).catch((error: unknown) => (failure = error));
    expect((failure as Error).message).to.equal('the database went away');
    expect(calls, 'nothing is written after the failure').to.have.length(1);
    await writer.settled();
  });
});
