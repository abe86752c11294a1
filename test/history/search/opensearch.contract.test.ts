import { randomBytes } from 'node:crypto';
import { OutboxIndexer } from '../../../indexer/indexer.js';
import { createSearchBackend } from '../../../src/history/search/backends.js';
import { aliasIndices, createOpenSearchClient } from '../../../src/history/search/opensearch-index.js';
import { startTestApp } from '../../support/app.js';
import { searchContract } from './contract.js';

const url = process.env.OPENSEARCH_URL;

if (url) {
  // a real cluster at OPENSEARCH_URL (docker compose up opensearch): an alias of this run's own
  const alias = `cinv-test-${randomBytes(4).toString('hex')}`;
  searchContract(
    `change search and statistics on the OpenSearch backend, against the OpenSearch at OPENSEARCH_URL (${alias})`,
    async (overrides) => {
      const app = await startTestApp({ ...overrides, opensearchUrl: url, opensearchIndex: alias });
      const client = createOpenSearchClient(url);
      app.context.search = createSearchBackend(app.context.sql, app.context.config, app.context.now, client);
      const indexer = new OutboxIndexer(
        app.context.sql,
        client,
        { alias, batchSize: 200, maxAttempts: 3, pollMs: 1000, listen: false },
        app.context.logger,
      );
      return {
        app,
        opensearch: { client, alias },
        async sync() {
          await indexer.drain();
          await client.indices.refresh({ index: alias });
        },
        async close() {
          await app.close();
          for (const index of await aliasIndices(client, alias)) await client.indices.delete({ index });
          await client.indices.deleteIndexTemplate({ name: alias }).catch(() => undefined);
        },
      };
    },
    'opensearch',
  );
} else {
  describe.skip('change search and statistics against a real OpenSearch (skipped: OPENSEARCH_URL is not set; `docker compose up opensearch` starts one)', () => {
    it('runs the search and statistics contract suite against OPENSEARCH_URL (skipped while OPENSEARCH_URL is unset)', () =>
      undefined);
  });
}
