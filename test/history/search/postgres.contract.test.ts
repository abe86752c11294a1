import { startTestApp } from '../../support/app.js';
import { searchContract } from './contract.js';

searchContract(
  'change search and statistics on the PostgreSQL backend',
  async (overrides) => {
    const app = await startTestApp(overrides);
    return { app, sync: async () => undefined, close: () => app.close() };
  },
  'postgres',
);
