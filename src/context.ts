import type { AuditLog } from './platform/audit/log.js';
import type { Config } from './platform/config/config.js';
import type { DatabaseKind, Sql } from './platform/db/database.js';
import type { DatabaseGate } from './platform/db/gate.js';
import type { DatabaseHealth } from './platform/db/health.js';
import type { ReplicaState } from './platform/db/replica.js';
import type { RateLimits } from './platform/http/rate-limit.js';
import { routeDefiner, type AnyRouteOf } from './platform/http/route.js';
import type { Logger } from './platform/observability/logger.js';
import type { SearchBackend } from './history/search/backend.js';
import type { SingleSignOn } from './platform/auth/sso.js';
import type { Principal } from './platform/auth/principal.js';
import type { PrincipalCache } from './platform/auth/principal-cache.js';
import type { Context } from 'koa';

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
  /** The principals of recently used keys (a PostgreSQL server, CINV_KEY_CACHE); undefined: every request reads its key. */
  principals?: PrincipalCache;
  /** Where analyst reads go when DATABASE_REPLICA_URL names a read replica; undefined: the primary serves them. */
  analystReads?: ReadRouting;
  config: Config;
  logger: Logger;
  /** The current time; tests replace it to move lifecycle thresholds without waiting. */
  now: () => Date;
}

/** Sends analyst reads to a read replica or the primary (see AnalystReads). */
export interface ReadRouting {
  choose(ctx: Context, primary: AppContext, principal: Principal | undefined): AppContext;
  wrote(principal: Principal | undefined): void;
  state(): ReplicaState;
}

/** Declares a route whose handler is given the AppContext. */
export const defineRoute = routeDefiner<AppContext>();
export type AnyRoute = AnyRouteOf<AppContext>;

/** An analyst read only when it asks for the past (`as_of`): the inventory as it is now stays on the primary. */
export const readsThePast = (query: Record<string, unknown>): boolean => query.as_of !== undefined;
