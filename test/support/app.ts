import type { Server } from 'node:http';
import { Writable } from 'node:stream';
import { createApp } from '../../src/app.js';
import { AuditLog } from '../../src/platform/audit/log.js';
import { RateLimits } from '../../src/platform/http/rate-limit.js';
import { SingleSignOn } from '../../src/platform/auth/sso.js';
import { issueApiKey } from '../../src/platform/auth/api-keys.js';
import { principalCacheFor } from '../../src/platform/auth/principal-cache.js';
import type { DataScope, Permission } from '../../src/platform/auth/principal.js';
import { loadConfig, type Config } from '../../src/platform/config/config.js';
import type { AppContext } from '../../src/context.js';
import { admit, type Database, type RawDatabase, type Sql } from '../../src/platform/db/database.js';
import { AnalystReads } from '../../src/operations/read-routing/analyst-reads.js';
import { answerClientErrors } from '../../src/platform/http/client-errors.js';
import { createSearchBackend } from '../../src/history/search/backends.js';
import { createLogger } from '../../src/platform/observability/logger.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { resetDatabase, TEST_SECRET, testDatabase, testProbe } from './db.js';

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface RequestOptions {
  key?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
}

/** A running cinv API on a random port, with its own clock and captured log lines. */
export interface TestApp {
  /** The pool without admission control, for test set-up and checks. */
  sql: Sql;
  config: Config;
  context: AppContext;
  baseUrl: string;
  logs: string[];
  clock: { now: Date };
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<Reply<T>>;
  get<T = any>(path: string, key?: string): Promise<Reply<T>>;
  close(): Promise<void>;
}

/** The master key test apps wrap credential data keys with. */
export const TEST_MASTER_KEY = '7d3c1e0a9b8f6e5d4c3b2a1908f7e6d5c4b3a29180f7e6d5c4b3a2918f7e6d5c';

export function testConfig(overrides: Partial<Config> = {}): Config {
  return {
    // limits high enough that suites sending many requests with one key are not refused; the
    // rate-limit suite sets its own
    ...loadConfig({
      CINV_SECRET: TEST_SECRET,
      DATABASE_URL: 'postgres://unused',
      LOG_LEVEL: 'info',
      CINV_RATE_LIMIT: '1000000',
      CINV_QUERY_RATE_LIMIT: '1000000',
      CINV_MASTER_KEY: TEST_MASTER_KEY,
    }),
    databaseUrl: undefined,
    // a test process runs many apps and its own heavy work on one loop: its lag says nothing about
    // the server under test, so shedding on it is off unless a test sets it
    shedEventLoopDelayMs: 0,
    // fixtures are written at fixed dates while the clock is the real one: a retention would expire
    // them as the calendar moves on. The retention suite sets its own
    changeRetention: { defaultMs: null, byType: new Map() },
    // suites change keys and grants straight in the database and ask at once: a notification could
    // come after the request. The key-cache suite turns it on
    keyCacheMs: 0,
    ...overrides,
  };
}

/** A database other than the run's, for tests that control their own server. */
export interface OwnDatabase {
  raw: RawDatabase;
  probe: Sql;
  /** A streaming replica of it, for analyst reads (DATABASE_REPLICA_URL); the app closes it. */
  replica?: Database;
}

export async function startTestApp(overrides: Partial<Config> = {}, own?: OwnDatabase): Promise<TestApp> {
  const db = own?.raw ?? (await testDatabase());
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const config = testConfig(overrides);
  const clock = { now: new Date() };
  const context = testContext(db, own?.probe ?? (await testProbe()), config, createLogger('info', sink), clock);
  const analystReads = own?.replica ? new AnalystReads(context, own.replica) : undefined;
  context.analystReads = analystReads;
  analystReads?.start();
  // as `cinv serve` keeps it (the listener on the admitted pool, as there)
  const principals = await principalCacheFor(
    { kind: db.kind, sql: context.sql, onForeignWrites: db.onForeignWrites },
    config.keyCacheMs,
  );
  context.principals = principals?.cache;
  const server: Server = await new Promise((resolve) => {
    const listening = createApp(context, { checkResponses: true }).listen(0, '127.0.0.1', () => resolve(listening));
    answerClientErrors(listening);
    // fetch keeps an idle connection for 4 s and reuses it; a server closing idle ones after its
    // default 5 s can close one just as a request is written on it (ECONNRESET on a loaded machine)
    listening.keepAliveTimeout = 65_000;
  });
  const address = server.address();
  const baseUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

  async function request<T>(method: string, path: string, options: RequestOptions = {}): Promise<Reply<T>> {
    const headers: Record<string, string> = { ...options.headers };
    if (options.key) headers['x-api-key'] = options.key;
    let body: string | undefined = options.rawBody;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(baseUrl + path, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    if ((response.headers.get('content-type') ?? '').includes('json')) parsed = JSON.parse(text);
    return { status: response.status, headers: response.headers, body: parsed as T, text };
  }

  return {
    sql: db.sql,
    config,
    context,
    baseUrl,
    logs,
    clock,
    request,
    get: (path, key) => request('GET', path, { key }),
    close: async () => {
      context.health.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        // a connection a test abandoned mid-response (a download it aborted) would hold close open
        // for the keep-alive timeout; the test is over, so after a moment nothing on it matters
        setTimeout(() => server.closeAllConnections(), 1000).unref();
      });
      await context.audit.close();
      await context.limits.close();
      await analystReads?.stop();
      await principals?.stop();
    },
  };
}

/** What the server hands its routes, over the run's database, with the pool admission of a real start. */
export function testContext(
  db: RawDatabase,
  probe: Sql,
  config: Config,
  logger: AppContext['logger'],
  clock: { now: Date },
): AppContext {
  const { sql, gate, health } = admit(db.sql, probe, config.dbAcquireTimeoutMs);
  const now = () => clock.now;
  return {
    sql,
    database: db.kind,
    gate,
    health,
    search: createSearchBackend(sql, config, now),
    audit: new AuditLog(sql, logger, now),
    limits: new RateLimits(config, logger),
    sso: config.oidc ? new SingleSignOn(config.oidc, logger) : undefined,
    config,
    logger,
    now,
  };
}

/** Fresh tables and a fresh app for each test of the suite that calls it. */
export function useTestApp(overrides: Partial<Config> = {}): { current: TestApp } {
  const holder = {} as { current: TestApp };
  beforeEach(async () => {
    const db = await testDatabase();
    await resetDatabase(db.sql);
    holder.current = await startTestApp(overrides);
  });
  afterEach(async () => {
    await holder.current?.close();
  });
  return holder;
}

export async function createKey(
  sql: Sql,
  tier: 'adm' | 'svc' | 'ro',
  options: { permissions?: Permission[]; scopes?: DataScope[]; name?: string; expiresAt?: Date } = {},
): Promise<string> {
  const { key } = await issueApiKey(sql, TEST_SECRET, {
    tenantId: DEFAULT_TENANT_ID,
    name: options.name ?? `${tier} key`,
    tier,
    permissions: options.permissions,
    scopes: options.scopes,
    expiresAt: options.expiresAt,
  });
  return key;
}
