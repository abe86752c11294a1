import type { Sql } from 'postgres';
import type { Config } from '../config/config.js';
import type { SearchBackend } from './backend.js';
import { PostgresSearchBackend } from './postgres-backend.js';

/** The configured search backend: PostgreSQL unless OPENSEARCH_URL names an OpenSearch cluster. */
export function createSearchBackend(sql: Sql, config: Config, now: () => Date): SearchBackend {
  return new PostgresSearchBackend(sql, { countTimeoutMs: config.countTimeoutMs, statsTimeoutMs: config.statsTimeoutMs, now });
}
