import { expect } from 'chai';
import { inTurn } from '../../../src/inventory/write-path/turns.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('per-source turns', () => {
  it('runs work with the same key one after the other, and other keys alongside', async () => {
    const events: string[] = [];
    const job = (name: string, ms: number) => async () => {
      events.push(`${name} start`);
      await sleep(ms);
      events.push(`${name} end`);
      return name;
    };
    const results = await Promise.all([
      inTurn('a', job('a1', 40)),
      inTurn('a', job('a2', 10)),
      inTurn('b', job('b1', 10)),
    ]);
    expect(results).to.deep.equal(['a1', 'a2', 'b1']);
    expect(events.indexOf('a2 start')).to.be.greaterThan(events.indexOf('a1 end'));
    expect(events.indexOf('b1 start')).to.be.lessThan(events.indexOf('a1 end'));
  });

  it('lets the queue go on after a failed turn', async () => {
    const failed = inTurn('c', async () => {
      throw new Error('broken');
    });
    const next = inTurn('c', async () => 'next');
    expect(await failed.catch((error: Error) => error.message)).to.equal('broken');
    expect(await next).to.equal('next');
  });

  it('answers 503 source_busy to a caller that would wait longer than it may', async () => {
    const long = inTurn('d', () => sleep(300));
    const impatient = await inTurn('d', async () => 'ran', 50).catch(
      (error: { status: number; details: unknown; headers: unknown }) => error,
    );
    expect(impatient).to.deep.include({
      status: 503,
      details: { reason: 'source_busy' },
      headers: { 'Retry-After': '5' },
    });
    await long;
    // whoever comes after the impatient caller still gets a turn
    expect(await inTurn('d', async () => 'later')).to.equal('later');
  });
});
