import { closeTestDatabase, onRealPostgres, testDatabase } from './db.js';

/** Root hooks: the database is opened once per run, and closed at the end. */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(120_000);
    const db = await testDatabase();
    console.log(`database under test: ${onRealPostgres ? 'PostgreSQL server' : 'embedded PGlite'} (${db.kind})`);
  },
  async afterAll() {
    await closeTestDatabase();
  },
};
