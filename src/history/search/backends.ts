import type { Client } from '@opensearch-project/opensearch';
import type { Sql } from 'postgres';
import { ChangeStatistics } from '../records/statistics.js';
import type { Config } from '../../platform/config/config.js';
import type { SearchBackend } from './backend.js';
import { OpenSearchBackend } from './opensearch-backend.js';
import { createOpenSearchClient } from './opensearch-index.js';
import { PostgresSearchBackend } from './postgres-backend.js';

/**
 * The configured search backend: PostgreSQL unless OPENSEARCH_URL names an OpenSearch cluster (or
 * a client for one is given). Either way statistics share one ChangeStatistics over PostgreSQL
 * (`sql`: on a read replica, `replica` keeps its reads from writing).
 */
export function createSearchBackend(
  sql: Sql,
  config: Config,
  now: () => Date,
  client?: Client,
  options: { replica?: boolean } = {},
): SearchBackend {
  const statistics = new ChangeStatistics(sql, {
    statsTimeoutMs: config.statsTimeoutMs,
    now,
    foldOnRead: options.replica !== true,
  });
  const opensearch =
    client ??
    (config.opensearchUrl
      ? createOpenSearchClient(config.opensearchUrl, Math.max(config.statsTimeoutMs + 5000, 10_000))
      : undefined);
  if (!opensearch)
    return new PostgresSearchBackend(sql, statistics, {
      countTimeoutMs: config.countTimeoutMs,
      embedded: !config.databaseUrl,
    });
  return new OpenSearchBackend(opensearch, statistics, {
    alias: config.opensearchIndex,
    statsTimeoutMs: config.statsTimeoutMs,
  });
}
