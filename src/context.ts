import type { AuditLog } from './audit/log.js';
import type { Config } from './config/config.js';
import type { DatabaseKind, Sql } from './db/database.js';
import type { DatabaseGate } from './db/gate.js';
import type { DatabaseHealth } from './db/health.js';
import type { RateLimits } from './http/rate-limit.js';
import { routeDefiner, type AnyRouteOf } from './http/route.js';
import type { Logger } from './observability/logger.js';
import type { SearchBackend } from './search/backend.js';
import type { SingleSignOn } from './auth/sso.js';

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
  /** The security audit log (buffered; requests never wait on it). */
  audit: AuditLog;
  /** Request limits per credential (spec section 8). */
  limits: RateLimits;
  /** OpenID Connect sign-in; undefined when CINV_OIDC_ISSUER is unset. */
  sso: SingleSignOn | undefined;
  config: Config;
  logger: Logger;
  /** The current time; tests replace it to move lifecycle thresholds without waiting. */
  now: () => Date;
}

/** Declares a route whose handler is given the AppContext. */
export const defineRoute = routeDefiner<AppContext>();
export type AnyRoute = AnyRouteOf<AppContext>;
