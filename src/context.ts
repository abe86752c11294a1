import type { Config } from './config/config.js';
import type { Sql } from './db/database.js';
import type { Logger } from './observability/logger.js';

/** What routes, services and jobs are handed: the database, the settings, a logger and a clock. */
export interface AppContext {
  sql: Sql;
  /** Which database `sql` talks to: the embedded PGlite or a PostgreSQL server. */
  database: 'embedded' | 'postgres';
  config: Config;
  logger: Logger;
  /** The current time; tests replace it to move lifecycle thresholds without waiting. */
  now: () => Date;
}
