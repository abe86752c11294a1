import type { Config } from '../../src/platform/config/config.js';
import { startTestApp, type TestApp } from './app.js';
import { resetDatabase, testDatabase } from './db.js';

export interface SeededApp {
  current: TestApp;
  /** A test that writes: the tables are reset and seeded again after it, whether it passes or not. */
  writes(title: string, body: () => Promise<void>): Mocha.Test;
}

/**
 * One app and one seeding for a suite whose tests read what the seeding wrote: the tables are reset
 * and seeded before the first test instead of before each. A test that changes the data is declared
 * with `writes`, after which the seeding is made again, so that every test starts from the state
 * `useTestApp` and a seeding `beforeEach` would have given it.
 */
export function useSeededApp(seed: (app: TestApp) => Promise<void>, overrides: Partial<Config> = {}): SeededApp {
  const holder = {} as SeededApp;
  const reseed = async () => {
    await resetDatabase(holder.current.sql);
    await seed(holder.current);
  };
  before(async () => {
    await resetDatabase((await testDatabase()).sql);
    holder.current = await startTestApp(overrides);
    await seed(holder.current);
  });
  after(async () => {
    await holder.current?.close();
  });
  holder.writes = (title, body) =>
    it(title, async () => {
      try {
        await body();
      } finally {
        await reseed();
      }
    });
  return holder;
}
