import type { Config } from './config/config.js';
import type { DatabaseKind, Sql } from './db/database.js';
import type { DatabaseGate } from './db/gate.js';
import type { DatabaseHealth } from './db/health.js';
import type { Logger } from './observability/logger.js';
import type { SearchBackend } from './search/backend.js';

/** What routes, services and jobs are handed: the database, the settings, a logger and a clock. */
export interface AppContext {
  sql: Sql;
  /** Which database `sql` talks to: the embedded PGlite or a PostgreSQL server. */
  database: DatabaseKind;
  /** Admission to the pool: how busy it is (readiness). */
  gate: DatabaseGate;
  /** Whether the database answers, from a connection of its own (liveness). */
  health: DatabaseHealth;
  /** Change search and statistics: PostgreSQL, or OpenSearch when OPENSEARCH_URL is set. */
  search: SearchBackend;
  config: Config;
  logger: Logger;
  /** The current time; tests replace it to move lifecycle thresholds without waiting. */
  now: () => Date;
}
