import { expect } from 'chai';
import { createLogger } from '../../src/platform/observability/logger.js';
import { startedBy, startWorkers, type BackgroundWorker } from '../../src/platform/workers.js';

const logger = createLogger('silent');

/** A worker that writes what happens to it into a shared journal. */
function recording(name: string, journal: string[], fail: { start?: boolean; stop?: boolean } = {}): BackgroundWorker {
  return {
    name,
    start() {
      if (fail.start) throw new Error(`${name} cannot start`);
      journal.push(`start ${name}`);
    },
    async stop() {
      journal.push(`stop ${name}`);
      if (fail.stop) throw new Error(`${name} cannot stop`);
    },
  };
}

describe('background workers', () => {
  it('start in order and all stop', async () => {
    const journal: string[] = [];
    const running = await startWorkers([recording('a', journal), recording('b', journal)], logger);
    expect(running.names).to.deep.equal(['a', 'b']);
    await running.stop();
    expect(journal).to.deep.equal(['start a', 'start b', 'stop a', 'stop b']);
  });

  it('a failed start stops the workers already started and leaves the rest unstarted', async () => {
    const journal: string[] = [];
    const workers = [recording('a', journal), recording('b', journal, { start: true }), recording('c', journal)];
    let error: unknown;
    await startWorkers(workers, logger).catch((e: unknown) => (error = e));
    expect((error as Error).message).to.equal('b cannot start');
    expect(journal).to.deep.equal(['start a', 'stop a']);
  });

  it('one worker that fails to stop does not keep the others from stopping', async () => {
    const journal: string[] = [];
    const running = await startWorkers([recording('a', journal, { stop: true }), recording('b', journal)], logger);
    await running.stop();
    expect(journal).to.deep.equal(['start a', 'start b', 'stop a', 'stop b']);
  });

  it('a job whose start returns its handle is stopped through that handle', async () => {
    let stopped = 0;
    const worker = startedBy('schedule', async () => ({ stop: async () => void (stopped += 1) }));
    const running = await startWorkers([worker], logger);
    expect(stopped).to.equal(0);
    await running.stop();
    expect(stopped).to.equal(1);
  });
});
