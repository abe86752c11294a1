import type { Sql } from 'postgres';
import type { Config } from '../config/config.js';
import type { SearchBackend } from './backend.js';
import { OpenSearchBackend } from './opensearch-backend.js';
import { createOpenSearchClient } from './opensearch-index.js';
import { PostgresSearchBackend } from './postgres-backend.js';

/** The configured search backend: PostgreSQL unless OPENSEARCH_URL names an OpenSearch cluster. */
export function createSearchBackend(sql: Sql, config: Config, now: () => Date): SearchBackend {
  const options = { countTimeoutMs: config.countTimeoutMs, statsTimeoutMs: config.statsTimeoutMs, embedded: !config.databaseUrl, now };
  if (!config.opensearchUrl) return new PostgresSearchBackend(sql, options);
  const client = createOpenSearchClient(config.opensearchUrl, Math.max(config.statsTimeoutMs + 5000, 10_000));
  return new OpenSearchBackend(client, sql, { ...options, alias: config.opensearchIndex });
}
