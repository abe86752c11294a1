import { OutboxIndexer } from '../../../indexer/indexer.js';
import { createSearchBackend } from '../../../src/history/search/backends.js';
import { createOpenSearchClient } from '../../../src/history/search/opensearch-index.js';
import { startTestApp } from '../../support/app.js';
import { startFakeOpenSearch } from '../../support/fake-opensearch/index.js';
import { searchContract } from './contract.js';

const ALIAS = 'cinv-changes';

searchContract(
  'change search and statistics on the OpenSearch backend, against the fake OpenSearch server (a test double)',
  async (overrides) => {
    const fake = await startFakeOpenSearch();
    const app = await startTestApp({ ...overrides, opensearchUrl: fake.url, opensearchIndex: ALIAS });
    const client = createOpenSearchClient(fake.url);
    app.context.search = createSearchBackend(app.context.sql, app.context.config, app.context.now, client);
    const indexer = new OutboxIndexer(
      app.context.sql,
      client,
      { alias: ALIAS, batchSize: 100, maxAttempts: 3, pollMs: 1000, listen: false, retryDelayMs: () => 0 },
      app.context.logger,
    );
    return {
      app,
      opensearch: { client, alias: ALIAS },
      async sync() {
        await indexer.drain();
      },
      async close() {
        await app.close();
        await fake.close();
      },
    };
  },
  'opensearch',
);
