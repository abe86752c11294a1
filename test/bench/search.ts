/**
 * Change search and statistics benchmarks on the machine's PostgreSQL, at N change records
 * (default 5 000 000), generated deterministically and kept between runs in the bench database:
 *
 *   npm run bench -- search [N]    rare term, two-term query, common term (p50/p95 of the API)
 *   npm run bench -- stats [N]     default window, a 7-day explicit window, and an incremental
 *                                  refresh after 10 000 new changes
 *
 * Each path is requested ten times before its measured runs (WARM_UP).
 *
 * CINV_BENCH_DATABASE_URL names the database (default postgres://postgres@127.0.0.1:5432/cinv_bench_search).
 */
import { AuditLog } from '../../src/platform/audit/log.js';
import { RateLimits } from '../../src/platform/http/rate-limit.js';
import type { Server } from 'node:http';
import postgres from 'postgres';
import { createApp } from '../../src/app.js';
import { issueApiKey } from '../../src/platform/auth/api-keys.js';
import { loadConfig } from '../../src/platform/config/config.js';
import { admit, type Sql } from '../../src/platform/db/database.js';
import { migrate } from '../../src/platform/db/migrate.js';
import { addMonths, keepAllPartitions, monthOf } from '../../src/platform/db/partitions.js';
import { settlePartitions } from './common.js';
import { recordChanges, type NewChangeRecord } from '../../src/history/records/writer.js';
import { createLogger } from '../../src/platform/observability/logger.js';
import { createSearchBackend } from '../../src/history/search/backends.js';
import { documentTokens, toTsvectorText } from '../../src/history/records/document.js';
import { refreshStatsAggregate } from '../../src/history/records/stats-store.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { random } from '../support/scenario.js';

const SECRET = 'bench-secret-bench-secret-bench-secret-01';
const GENERATOR = 'search-v1';
const NOW = new Date('2026-11-20T12:00:00Z');
const DAY = 86_400_000;
const CIS = 200_000;

const url = () => process.env.CINV_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/cinv_bench_search';

async function ensureDatabase(): Promise<void> {
  const target = new URL(url());
  const name = target.pathname.slice(1);
  const admin = postgres({
    host: target.hostname,
    port: Number(target.port || 5432),
    username: target.username || 'postgres',
    database: 'postgres',
    max: 1,
    onnotice: () => {},
  });
  const [exists] = await admin`select 1 from pg_database where datname = ${name}`;
  if (!exists) await admin.unsafe(`create database ${name}`);
  await admin.end();
}

/** The CI behind record `i`: a pod of a deployment, a node, or a service, with stable names. */
function ciOf(n: number) {
  const hash = ((n * 2654435761) % 1048576).toString(16).padStart(5, '0');
  if (n % 20 === 0) return { id: n, name: `node-${n}.prod.example`, namespace: null, type: 'k8s.node' };
  if (n % 20 === 1) return { id: n, name: `svc-${n % 5000}`, namespace: `ns-${n % 50}`, type: 'k8s.service' };
  return {
    id: n,
    name: `app-${n % 4000}-${hash}-${((n * 7919) % 65536).toString(16)}`,
    namespace: `ns-${n % 50}`,
    type: 'k8s.pod',
  };
}

const ciUuid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;

/** Change record `i` of the generated history: mostly updates of images, replicas and conditions. */
function recordOf(i: number, rand: () => number, total: number): NewChangeRecord {
  const ci = ciOf(Math.floor(rand() * CIS));
  const kind = rand();
  const at = new Date(NOW.getTime() - 120 * DAY + Math.floor((i / total) * 120 * DAY));
  const base = {
    tenant_id: DEFAULT_TENANT_ID,
    ci_id: ciUuid(ci.id),
    source_id: '1',
    scope_id: `cluster-${ci.id % 7}`,
    ci_name: ci.name,
    ci_namespace: ci.namespace,
    ci_type: ci.type,
    changed_at: at,
  };
  if (kind < 0.1) {
    return {
      ...base,
      change_type: 'CREATED',
      changes: [
        { field: 'name', old_value: null, new_value: ci.name },
        { field: 'status', old_value: null, new_value: 'active' },
      ],
    };
  }
  if (kind < 0.13)
    return {
      ...base,
      change_type: 'DELETED',
      changes: [{ field: 'status', old_value: 'active', new_value: 'archived' }],
    };
  const minor = Math.floor(rand() * 40);
  // one image tag in 500 000 is rare: nginx:9.<x>
  const tag = rand() < 0.000002 ? `nginx:9.${i % 10}` : `nginx:1.${minor}`;
  const changes =
    kind < 0.6
      ? [
          {
            field: 'raw_data.spec.containers',
            old_value: [{ name: 'app', image: `nginx:1.${minor === 0 ? 1 : minor - 1}` }],
            new_value: [{ name: 'app', image: tag }],
          },
        ]
      : kind < 0.8
        ? [{ field: 'raw_data.spec.replicas', old_value: minor % 5, new_value: (minor % 5) + 1 }]
        : [
            {
              field: 'raw_data.status.conditions',
              old_value: [{ type: 'Ready', status: 'True' }],
              new_value: [{ type: 'Ready', status: 'False', reason: rand() < 0.5 ? 'CrashLoopBackOff' : 'OOMKilled' }],
            },
            {
              field: 'raw_data.status.podIP',
              old_value: `10.${minor}.0.${i % 250}`,
              new_value: `10.${minor}.1.${i % 250}`,
            },
          ];
  return { ...base, change_type: 'UPDATED', changes };
}

/** Loads N generated records with their documents, indexes dropped during the load and rebuilt after. */
export async function load(sql: Sql, count: number): Promise<void> {
  const [meta] = await sql<{ records: string }[]>`select (select count(*) from change_records)::text as records`;
  const marker = await sql`select 1 from pg_description where description = ${`${GENERATOR}:${count}`}`;
  if (marker.length > 0 && Number(meta!.records) >= count) return;
  console.log(`generating ${count} change records (kept for later runs) ...`);
  await sql.unsafe(
    'truncate change_records, change_stats_queue, change_stats_buckets, change_stats_days, change_stats_ci_last, change_stats_affected, outbox restart identity',
  );
  await sql`update change_stats_state set refreshed_at = '-infinity'`;
  // every month of the generated history has its partitions, as the sweep keeps them in service
  for (let month = monthOf(new Date(NOW.getTime() - 121 * DAY)); month <= NOW; month = addMonths(month, 1))
    await keepAllPartitions(sql, month);
  const indexes = await sql<{ indexname: string; indexdef: string }[]>`
    select indexname, indexdef from pg_indexes where tablename = 'change_records' and indexname <> 'change_records_pkey'`;
  for (const index of indexes) await sql.unsafe(`drop index ${index.indexname}`);
  const rand = random(5);
  const started = performance.now();
  const BATCH = 20_000;
  for (let from = 0; from < count; from += BATCH) {
    const rows = Array.from({ length: Math.min(BATCH, count - from) }, (_, k) => recordOf(from + k, rand, count));
    await sql`
      insert into change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields, search_vector)
      select r.tenant_id, r.ci_id, r.source_id, r.scope_id, r.ci_name, r.ci_namespace, r.ci_type, r.change_type, r.changed_at, r.changes,
             array(select distinct c ->> 'field' from jsonb_array_elements(r.changes) c order by 1), r.doc::tsvector
      from jsonb_to_recordset(${sql.json(rows.map((r) => ({ ...r, doc: toTsvectorText(documentTokens(r)) })) as never)}::jsonb) as r(
        tenant_id uuid, ci_id uuid, source_id bigint, scope_id text, ci_name text, ci_namespace text, ci_type text, change_type text,
        changed_at timestamptz, changes jsonb, doc text)`;
    if ((from / BATCH) % 25 === 0)
      console.log(`  ${from + rows.length} records, ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }
  console.log(
    `  loaded in ${((performance.now() - started) / 1000).toFixed(0)} s; rebuilding ${indexes.length} indexes ...`,
  );
  const indexing = performance.now();
  await sql.unsafe("set maintenance_work_mem = '512MB'");
  // the definitions read from a partitioned table say ON ONLY, which would leave the partitions
  // without the index (and the parent's invalid)
  for (const index of indexes) await sql.unsafe(index.indexdef.replace(' ON ONLY ', ' ON '));
  console.log(`  indexes rebuilt in ${((performance.now() - indexing) / 1000).toFixed(0)} s`);
  await sql`insert into change_stats_queue (change_id, changed_at) select id, changed_at from change_records`;
  await sql.unsafe('vacuum analyze change_records');
  const refreshing = performance.now();
  const { rows } = await refreshStatsAggregate(sql, NOW, 50_000);
  console.log(
    `  initial statistics refresh of ${rows} records in ${((performance.now() - refreshing) / 1000).toFixed(1)} s`,
  );
  await sql.unsafe(`comment on table change_records is '${GENERATOR}:${count}'`);
}

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;

interface Bench {
  sql: Sql;
  /** A key that sees one of the seven instances. */
  scopedKey: string;
  get(path: string, key?: string): Promise<{ status: number; body: any; ms: number }>;
  close(): Promise<void>;
}

async function start(count: number): Promise<Bench> {
  await ensureDatabase();
  const sql = postgres(url(), { max: 8, onnotice: () => {} });
  await migrate(sql);
  await load(sql, count);
  // a database generated before the load made its months: their rows move out of the default partitions
  await settlePartitions(sql);
  const { key } = await issueApiKey(sql, SECRET, { tenantId: DEFAULT_TENANT_ID, name: 'bench', tier: 'adm' });
  await sql`insert into collectors (tenant_id, name, collector_type) values (${DEFAULT_TENANT_ID}, 'bench', 'universal') on conflict do nothing`;
  await sql`
    insert into sources (tenant_id, collector_id, name)
    select ${DEFAULT_TENANT_ID}, id, 'bench' from collectors where name = 'bench'
    on conflict (tenant_id, name) where deleted_at is null do nothing`;
  const { key: scopedKey } = await issueApiKey(sql, SECRET, {
    tenantId: DEFAULT_TENANT_ID,
    name: 'bench-scoped',
    tier: 'svc',
    permissions: ['changes:read'],
    scopes: [{ sourceId: '1', scopeId: 'cluster-3' }],
  });
  const config = { ...loadConfig({ CINV_SECRET: SECRET, DATABASE_URL: url() }), logLevel: 'warn' };
  const probe = postgres(url(), { max: 1, onnotice: () => {} });
  const admitted = admit(sql, probe, config.dbAcquireTimeoutMs);
  const now = () => NOW;
  const logger = createLogger('warn');
  const audit = new AuditLog(admitted.sql, logger, now);
  const limits = new RateLimits({ ...config, rateLimit: 1_000_000, rateBurst: 1_000_000 }, logger);
  const app = createApp({
    ...admitted,
    database: 'postgres',
    search: createSearchBackend(admitted.sql, config, now),
    audit,
    limits,
    sso: undefined,
    config,
    logger,
    now,
  });
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    sql,
    scopedKey,
    async get(path, asKey = key) {
      const started = performance.now();
      const response = await fetch(base + path, { headers: { 'x-api-key': asKey } });
      const body = await response.json();
      return { status: response.status, body, ms: performance.now() - started };
    },
    async close() {
      server.close();
      admitted.health.stop();
      await Promise.all([sql.end(), probe.end()]);
    },
  };
}

/**
 * Requests a path before it is measured. The bench's server is a new process: the first 30 answers
 * of the hourly default window had a p95 of 23-36 ms, the next three sets of 30 10.5-13.2 ms, while
 * its code was compiled and its connections opened.
 */
const WARM_UP = 10;

async function measure(
  bench: Bench,
  label: string,
  path: string,
  target: number,
  runs = 30,
  key?: string,
): Promise<void> {
  for (let i = 0; i < WARM_UP; i++) await bench.get(path, key);
  const times: number[] = [];
  let last: { status: number; body: any; ms: number } | undefined;
  for (let i = 0; i < runs; i++) {
    last = await bench.get(path, key);
    if (last.status !== 200) throw new Error(`${path}: ${last.status} ${JSON.stringify(last.body)}`);
    times.push(last.ms);
  }
  const p95 = percentile(times, 95);
  const total = last!.body.total ?? last!.body.total_changes;
  console.log(
    `${label.padEnd(34)} p50 ${percentile(times, 50).toFixed(1).padStart(7)} ms  p95 ${p95.toFixed(1).padStart(7)} ms  ` +
      `target ${String(target).padStart(4)} ms  ${p95 <= target ? 'met' : 'MISSED'}   (${total} matching)`,
  );
}

export async function benchSearch(count: number): Promise<void> {
  const bench = await start(count);
  try {
    console.log(`change search, ${count} change records on PostgreSQL, through the API (30 runs each)`);
    await measure(bench, 'rare term (nginx:9)', `/api/v1/changes/search?query=${encodeURIComponent('nginx:9')}`, 50);
    await measure(
      bench,
      'a pod by its full name',
      `/api/v1/changes/search?query=${encodeURIComponent(ciOf(4242).name)}`,
      50,
    );
    await measure(
      bench,
      'two terms (pod part + field)',
      `/api/v1/changes/search?query=${encodeURIComponent(`${ciOf(4242).name.split('-')[2]} replicas`)}`,
      50,
    );
    await measure(bench, 'common term (crashloopbackoff)', `/api/v1/changes/search?query=crashloopbackoff`, 300);
    await measure(bench, 'common term (nginx)', `/api/v1/changes/search?query=nginx`, 300);
  } finally {
    await bench.close();
  }
}

export async function benchStats(count: number): Promise<void> {
  const bench = await start(count);
  try {
    console.log(`change statistics, ${count} change records on PostgreSQL, through the API (30 runs each)`);
    // as the service does at start and on its schedule
    const refreshing = performance.now();
    await refreshStatsAggregate(bench.sql, NOW);
    console.log(
      `${'refresh (snapshots included)'.padEnd(34)} ${(performance.now() - refreshing).toFixed(0).padStart(7)} ms`,
    );
    await measure(bench, 'default window (90 days)', '/api/v1/changes/stats', 20);
    await measure(bench, 'default window by day', '/api/v1/changes/stats?group_by=day', 20);
    await measure(bench, 'default window, one instance (svc key)', '/api/v1/changes/stats', 100, 30, bench.scopedKey);
    const from = new Date(NOW.getTime() - 10 * DAY).toISOString();
    const to = new Date(NOW.getTime() - 3 * DAY).toISOString();
    await measure(bench, '7-day explicit window', `/api/v1/changes/stats?start_date=${from}&end_date=${to}`, 300, 10);
    const rand = random(99);
    const fresh = Array.from({ length: 10_000 }, (_, i) => ({ ...recordOf(i, rand, 10_000), changed_at: NOW }));
    for (let i = 0; i < fresh.length; i += 1000)
      await bench.sql.begin((tx) => recordChanges(tx, fresh.slice(i, i + 1000)));
    const started = performance.now();
    const { rows } = await refreshStatsAggregate(bench.sql, NOW);
    const ms = performance.now() - started;
    console.log(
      `${'incremental refresh'.padEnd(34)} ${ms.toFixed(0).padStart(7)} ms for ${rows} new changes   target 1000 ms  ${ms <= 1000 ? 'met' : 'MISSED'}`,
    );
    await bench.sql`delete from outbox`;
  } finally {
    await bench.close();
  }
}
