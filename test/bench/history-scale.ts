/**
 * History at scale: the change history's reads at N change records (default 20 000 000, over 14
 * months for 1 000 000 CIs) against the same reads at N / 10 (the first N / 10 of the same
 * generated records), in one run, so each figure is a ratio (target ≤ 1.5 for every read).
 *
 *   npm run bench -- history-scale [N]
 *
 * The generator writes with COPY (indexes dropped for the load and rebuilt after, as a restore
 * would), reports its time and the disk used, and scales N down with a warning when the disk
 * cannot hold it. Also measured: bytes per change record (table and indexes), the retention drop
 * of the oldest month with ingest running beside it (the month is gone afterwards: the next run
 * generates its records again), and the online move of M records (default 5 000 000) from an
 * unpartitioned installation into partitions, with the p99 of API requests before and during it.
 * Both sizes are kept between runs (cinv_bench_history_small, cinv_bench_history), so a run after a
 * change to the reads measures at once; a database's migrations bring its statistics along.
 * The move builds cinv_bench_migrate afresh each run.
 *
 *   npm run bench -- history-scale [N] [M]     (N = 0: the online move alone)
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import postgres from 'postgres';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Sql } from '../../src/platform/db/database.js';
import { documentTokens, toTsvectorText } from '../../src/history/records/document.js';
import { listMigrations, migrate } from '../../src/platform/db/migrate.js';
import { migrateIntoPartitions } from '../../src/platform/db/partition-migration.js';
import {
  addMonths,
  CHANGE_RECORDS,
  createMonthPartition,
  dropPartitionsBefore,
  monthOf,
  monthPartitions,
  partitionedTable,
} from '../../src/platform/db/partitions.js';
import { recordChanges, type NewChangeRecord } from '../../src/history/records/writer.js';
import { refreshStatsAggregate } from '../../src/history/records/stats-store.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { random } from '../support/scenario.js';
import { benchDatabase, benchKey, serveBench, serverUrl, type Figure, type RunningServer } from './common.js';

const DATABASE = 'cinv_bench_history';
const SMALL_DATABASE = 'cinv_bench_history_small';
const DAY = 86_400_000;
const NOW = new Date('2026-11-20T12:00:00Z');
const SPAN = 425 * DAY;
const CIS = 1_000_000;
/** What one generated record takes on disk with its index entries, before it is measured. */
const BYTES_PER_RECORD_GUESS = 2_000;

const ciUuid = (n: number) => `00000000-0000-4000-9000-${n.toString(16).padStart(12, '0')}`;

function ciOf(n: number) {
  if (n % 50 === 0) return { name: `node-${n}.prod.example`, namespace: null, type: 'k8s.node' };
  if (n % 50 === 1) return { name: `svc-${n % 5000}`, namespace: `ns-${n % 200}`, type: 'k8s.service' };
  return {
    name: `app-${n % 4000}-${((n * 2654435761) % 1048576).toString(16)}`,
    namespace: `ns-${n % 200}`,
    type: 'k8s.pod',
  };
}

/** COPY text format: backslash, tab and line breaks escaped; null as \N. */
const field = (value: string | null): string =>
  value === null
    ? '\\N'
    : value.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r');

/** Record `i`: mostly image, replica and condition updates of pods, at a moment spread over the span. */
function lineOf(i: number, rand: () => number): string {
  const n = Math.floor(rand() * CIS);
  const ci = ciOf(n);
  const at = new Date(NOW.getTime() - SPAN + Math.floor(rand() * SPAN));
  const kind = rand();
  const minor = Math.floor(rand() * 40);
  const tag = rand() < 0.000002 ? `nginx:9.${i % 10}` : `nginx:1.${minor}`;
  const [changeType, changes] =
    kind < 0.08
      ? [
          'CREATED',
          [
            { field: 'name', old_value: null, new_value: ci.name },
            { field: 'status', old_value: null, new_value: 'active' },
          ],
        ]
      : kind < 0.1
        ? ['DELETED', [{ field: 'status', old_value: 'active', new_value: 'archived' }]]
        : kind < 0.6
          ? [
              'UPDATED',
              [
                {
                  field: 'raw_data.spec.containers',
                  old_value: [{ name: 'app', image: `nginx:1.${(minor + 39) % 40}` }],
                  new_value: [{ name: 'app', image: tag }],
                },
              ],
            ]
          : kind < 0.8
            ? ['UPDATED', [{ field: 'raw_data.spec.replicas', old_value: minor % 5, new_value: (minor % 5) + 1 }]]
            : [
                'UPDATED',
                [
                  {
                    field: 'raw_data.status.conditions',
                    old_value: [{ type: 'Ready', status: 'True' }],
                    new_value: [
                      { type: 'Ready', status: 'False', reason: rand() < 0.5 ? 'CrashLoopBackOff' : 'OOMKilled' },
                    ],
                  },
                  {
                    field: 'raw_data.status.podIP',
                    old_value: `10.${minor}.0.${i % 250}`,
                    new_value: `10.${minor}.1.${i % 250}`,
                  },
                ],
              ];
  const document = toTsvectorText(
    documentTokens({ ci_name: ci.name, ci_namespace: ci.namespace, ci_type: ci.type, changes }),
  );
  const fields = `{${[...new Set(changes.map((c) => c.field))]
    .sort()
    .map((f) => `"${f}"`)
    .join(',')}}`;
  return [
    DEFAULT_TENANT_ID,
    ciUuid(n),
    '1',
    `cluster-${n % 7}`,
    ci.name,
    ci.namespace,
    ci.type,
    changeType,
    at.toISOString(),
    JSON.stringify(changes),
    fields,
    document,
  ]
    .map((value) => field(value as string | null))
    .join('\t');
}

async function recordCount(sql: Sql): Promise<number> {
  const [row] = await sql<{ n: string }[]>`select count(*)::text as n from change_records`;
  return Number(row!.n);
}

/** Shrinks the target to what the disk holds with room to spare, saying so. */
async function fitToDisk(sql: Sql, wanted: number): Promise<number> {
  const [dir] = await sql<{ setting: string }[]>`select setting from pg_settings where name = 'data_directory'`;
  const disk = await statfs(dir!.setting).catch(() => statfs('/'));
  const free = disk.bavail * disk.bsize;
  const fits = Math.floor((free * 0.7) / BYTES_PER_RECORD_GUESS);
  if (fits >= wanted) return wanted;
  console.log(`WARNING: ${(free / 1e9).toFixed(0)} GB free holds about ${fits} records, not ${wanted}: scaled down`);
  return fits;
}

/** Records `from` to `to` by COPY into the (partitioned or not) change_records, its indexes dropped and rebuilt. */
async function copyRecords(sql: Sql, from: number, to: number): Promise<void> {
  const parent = await partitionedTable(sql, CHANGE_RECORDS);
  if (parent === 'change_records') {
    const existing = new Set((await monthPartitions(sql, parent, CHANGE_RECORDS)).map((p) => p.from.getTime()));
    for (let month = monthOf(new Date(NOW.getTime() - SPAN)); month <= NOW; month = addMonths(month, 1)) {
      if (!existing.has(month.getTime())) await createMonthPartition(sql, CHANGE_RECORDS, parent, month);
    }
  }
  const indexes = await sql<{ indexname: string; indexdef: string }[]>`
    select indexname, indexdef from pg_indexes where tablename = 'change_records' and indexname not like '%pkey%'`;
  for (const index of indexes) await sql.unsafe(`drop index ${index.indexname}`);
  const started = performance.now();
  const BATCH = 50_000;
  async function* lines() {
    for (let first = from; first < to; first += BATCH) {
      const rand = random(first + 17);
      const batch: string[] = [];
      for (let i = first; i < Math.min(to, first + BATCH); i++) batch.push(`${lineOf(i, rand)}\n`);
      yield batch.join('');
      if ((first / BATCH) % 40 === 0)
        console.log(`  ${Math.min(to, first + BATCH)} records, ${((performance.now() - started) / 1000).toFixed(0)} s`);
    }
  }
  const copy = await sql`
    copy change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields, search_vector)
    from stdin`.writable();
  await pipeline(Readable.from(lines()), copy);
  const loaded = performance.now();
  await sql.unsafe(`set maintenance_work_mem = '1GB'`);
  // a partitioned index is listed as made ON ONLY the parent; made on the parent it reaches every month
  for (const index of indexes) await sql.unsafe(index.indexdef.replace(' ON ONLY ', ' ON '));
  console.log(
    `  copied in ${((loaded - started) / 1000).toFixed(0)} s, indexes rebuilt in ${((performance.now() - loaded) / 1000).toFixed(0)} s`,
  );
}

/** Adds generated records up to `target`; the statistics queue gets them too. */
async function growTo(sql: Sql, target: number): Promise<void> {
  const have = await recordCount(sql);
  if (have >= target) return;
  console.log(`generating records ${have}..${target} ...`);
  await copyRecords(sql, have, target);
  await sql`insert into change_stats_queue (change_id, changed_at) select id, changed_at from change_records where id > (select coalesce(max(change_id), 0) from change_stats_queue)`;
  await sql.unsafe('vacuum analyze change_records');
  const refreshed = performance.now();
  await refreshStatsAggregate(sql, NOW, 100_000);
  console.log(`  statistics refreshed in ${((performance.now() - refreshed) / 1000).toFixed(0)} s`);
}

/** Table and index bytes per change record. */
async function diskPerRecord(sql: Sql, label: string): Promise<Figure[]> {
  const [row] = await sql<{ records: string; heap: string; indexes: string }[]>`
    select (select count(*) from change_records)::text as records,
           (select sum(pg_table_size(inhrelid)) from pg_inherits where inhparent = 'change_records'::regclass)::text as heap,
           (select sum(pg_indexes_size(inhrelid)) from pg_inherits where inhparent = 'change_records'::regclass)::text as indexes`;
  const records = Number(row!.records);
  console.log(
    `  ${label}: ${records} records, table ${(Number(row!.heap) / 1e9).toFixed(2)} GB, indexes ${(Number(row!.indexes) / 1e9).toFixed(2)} GB`,
  );
  return [
    {
      bench: 'history-scale',
      path: `${label}: table bytes per record`,
      value: Math.round(Number(row!.heap) / records),
      unit: 'B',
    },
    {
      bench: 'history-scale',
      path: `${label}: index bytes per record`,
      value: Math.round(Number(row!.indexes) / records),
      unit: 'B',
    },
  ];
}

interface Read {
  label: string;
  path: (i: number) => string;
  csv?: boolean;
}

/** The reads measured; the per-CI history walks CIs known to have history (the first records' CIs, the same at both sizes). */
const readsOf = (cis: readonly string[]): Read[] => [
  { label: 'per-CI history page', path: (i) => `/api/v1/ci-changes/${cis[i % cis.length]}?limit=50` },
  { label: 'GET /changes default', path: () => '/api/v1/changes?limit=50' },
  { label: 'GET /changes ci_type', path: () => '/api/v1/changes?limit=50&filter=ci_type:eq:k8s.node' },
  {
    label: 'GET /changes changed_field',
    path: () => '/api/v1/changes?limit=50&filter=changed_field:eq:raw_data.status.podIP',
  },
  { label: 'search rare', path: () => `/api/v1/changes/search?query=${encodeURIComponent('nginx:9')}` },
  {
    label: 'search two terms',
    path: (i) => `/api/v1/changes/search?query=${encodeURIComponent(`${ciOf(4242 + i).name.split('-')[2]} replicas`)}`,
  },
  { label: 'stats default', path: () => '/api/v1/changes/stats' },
  {
    label: 'stats 7-day window',
    path: () =>
      `/api/v1/changes/stats?start_date=${new Date(NOW.getTime() - 10 * DAY).toISOString()}&end_date=${new Date(NOW.getTime() - 3 * DAY).toISOString()}`,
  },
  {
    label: 'CSV export (ms per 1 000 rows)',
    path: () =>
      `/api/v1/changes?start_date=${new Date(NOW.getTime() - 2 * DAY).toISOString()}&end_date=${new Date(NOW.getTime() - DAY).toISOString()}`,
    csv: true,
  },
];

/** Median milliseconds of each read over `runs` requests (CSV: per 1 000 rows streamed). */
async function measureReads(server: RunningServer, key: string, reads: Read[], runs = 9): Promise<Map<string, number>> {
  const medians = new Map<string, number>();
  for (const read of reads) {
    const samples: number[] = [];
    for (let i = 0; i <= runs; i++) {
      const started = performance.now();
      const response = await fetch(server.base + read.path(i), {
        headers: { 'x-api-key': key, accept: read.csv ? 'text/csv' : 'application/json' },
      });
      const text = await response.text();
      if (!response.ok) throw new Error(`${read.path(i)}: ${response.status} ${text.slice(0, 300)}`);
      const ms = performance.now() - started;
      // the first request warms the caches and is not counted
      if (i > 0) samples.push(read.csv ? (ms * 1000) / Math.max(1, text.split('\n').length - 2) : ms);
    }
    medians.set(read.label, samples.sort((a, b) => a - b)[Math.floor(samples.length / 2)]!);
  }
  return medians;
}

/** Brings a database to exactly `records` generated records (started again when it holds more). */
async function holding(sql: Sql, records: number): Promise<void> {
  if ((await recordCount(sql)) > records) {
    console.log('the database holds more records than wanted: starting it again');
    await sql.unsafe(
      'truncate change_records, change_stats_queue, change_stats_buckets, change_stats_days, change_stats_ci_last, change_stats_affected, change_stats_snapshots, outbox restart identity',
    );
    await sql`update change_stats_state set refreshed_at = '-infinity'`;
  }
  await growTo(sql, records);
}

async function measureAt(sql: Sql, database: string, records: number): Promise<Map<string, number>> {
  const server = await serveBench(database, {
    CINV_CHANGE_RETENTION: '0',
    CINV_SHED_EVENT_LOOP_DELAY: 'off',
    CINV_SHED_DB_WAIT: 'off',
  });
  try {
    const cis = await sql<{ ci_id: string }[]>`select ci_id::text from change_records order by id limit 20`;
    const medians = await measureReads(server, await benchKey(sql), readsOf(cis.map((row) => row.ci_id)));
    for (const [label, ms] of medians)
      console.log(`  ${String(records).padStart(9)} records  ${label.padEnd(32)} ${ms.toFixed(1).padStart(8)} ms`);
    return medians;
  } finally {
    await server.stop();
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const p99 = (samples: number[]) =>
  [...samples].sort((a, b) => a - b)[Math.min(samples.length - 1, Math.floor(samples.length * 0.99))] ?? 0;

/** Two writers adding change records (batches of 100, as a collection writes them; each at most one batch per `everyMs`) until stopped; the time of each batch. */
function ingestBeside(url: string, everyMs = 0): { stop(): Promise<number[]> } {
  const writer = postgres(url, { max: 2, onnotice: () => {} });
  const latencies: number[] = [];
  let running = true;
  const loops = [0, 1].map(async (w) => {
    for (let i = 0; running; i++) {
      const records: NewChangeRecord[] = Array.from({ length: 100 }, (_, k) => ({
        tenant_id: DEFAULT_TENANT_ID,
        ci_id: ciUuid((w * 1_000_000 + i * 100 + k) % CIS),
        source_id: '1',
        scope_id: 'cluster-0',
        ci_name: `ingest-${w}-${i}-${k}`,
        ci_namespace: 'ns-1',
        ci_type: 'k8s.pod',
        change_type: 'UPDATED',
        changed_at: new Date(),
        changes: [{ field: 'raw_data.spec.replicas', old_value: 1, new_value: 2 }],
      }));
      const started = performance.now();
      await writer.begin((tx) => recordChanges(tx, records));
      const ms = performance.now() - started;
      latencies.push(ms);
      if (ms < everyMs) await pause(everyMs - ms);
    }
  });
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      await writer.end();
      return latencies;
    },
  };
}

/** Retention's drop of the oldest month (the month is gone afterwards), while two writers ingest. */
async function dropOldestMonth(sql: Sql): Promise<Figure[]> {
  const [oldest] = await monthPartitions(sql, 'change_records', CHANGE_RECORDS);
  if (!oldest) return [];
  const [size] = await sql<
    { rows: string }[]
  >`select count(*)::text as rows from change_records where changed_at >= ${oldest.from} and changed_at < ${oldest.to}`;
  const ingest = ingestBeside(serverUrl(DATABASE));
  await pause(2000);
  const started = performance.now();
  const dropped = await dropPartitionsBefore(sql, CHANGE_RECORDS, oldest.to, {
    beforeDrop: (tx, month) =>
      tx`delete from change_stats_queue where changed_at >= ${month.from} and changed_at < ${month.to}`,
  });
  const ms = performance.now() - started;
  await pause(2000);
  const writes = await ingest.stop();
  console.log(
    `  dropping ${dropped.dropped.join(', ')} (${size!.rows} records) with ingest running: ${ms.toFixed(0)} ms; ingest batches p99 ${p99(writes).toFixed(0)} ms, max ${Math.max(...writes).toFixed(0)} ms`,
  );
  return [
    {
      bench: 'history-scale',
      path: `drop oldest month with ingest running (${size!.rows} records)`,
      value: Math.round(ms),
      unit: 'ms',
      target: 1000,
    },
    {
      bench: 'history-scale',
      path: 'ingest batch of 100 records during the drop: max',
      value: Math.round(Math.max(...writes)),
      unit: 'ms',
    },
  ];
}

/** Requests at a steady rate (`perSecond`, open loop: one is sent on time whether or not the last one answered) until stopped; each one's time. */
function requestsBeside(
  server: RunningServer,
  key: string,
  paths: string[],
  perSecond = 20,
): { stop(): Promise<number[]>; sent: [number, number][] } {
  const latencies: number[] = [];
  // [sent at, took]: where in time the slow ones fall
  const timeline: [number, number][] = [];
  const refused: string[] = [];
  const pending = new Set<Promise<void>>();
  let sent = 0;
  const timer = setInterval(() => {
    const path = paths[sent++ % paths.length]!;
    const started = performance.now();
    const request = fetch(server.base + path, { headers: { 'x-api-key': key } })
      .then(async (response) => {
        await response.text();
        // a refusal (503 under load) counts at the time it took, and is reported
        if (!response.ok) refused.push(`${path}: ${response.status}`);
        latencies.push(performance.now() - started);
        timeline.push([started, performance.now() - started]);
      })
      .finally(() => pending.delete(request));
    pending.add(request);
  }, 1000 / perSecond);
  return {
    async stop() {
      clearInterval(timer);
      await Promise.all(pending);
      if (refused.length > 0)
        console.log(`  ${refused.length} of ${latencies.length} requests refused, e.g. ${refused[0]}`);
      return latencies;
    },
    sent: timeline,
  };
}

/**
 * Samples, every 100 ms, what the database's active sessions wait on (or that they run), so a
 * stalled phase of the move names its cause: (time, "wait event: statement") per active session.
 */
function activityBeside(database: string): { stop(): Promise<[number, string][]> } {
  const watcher = postgres(serverUrl(database), { max: 1, onnotice: () => {} });
  const seen: [number, string][] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const rows = await watcher<{ what: string }[]>`
        select coalesce(wait_event_type || ':' || wait_event, 'CPU') || '  ' || left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 60) as what
        from pg_stat_activity where datname = current_database() and state = 'active' and pid <> pg_backend_pid()`.catch(
        () => [],
      );
      const at = performance.now();
      for (const row of rows) seen.push([at, row.what]);
      await pause(100);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      await watcher.end();
      return seen;
    },
  };
}

/** The most frequent of `samples` between two moments, with their counts. */
function mostSeen(samples: [number, string][], from: number, to: number): string {
  const counts = new Map<string, number>();
  for (const [at, what] of samples) if (at >= from && at < to) counts.set(what, (counts.get(what) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5)
    .map(([what, n]) => `      ${String(n).padStart(4)}  ${what}`)
    .join('\n');
}

/**
 * The online move of an unpartitioned installation: `records` change records written under the
 * schema before partitioning, then `cinv migrate`'s move while a server answers API requests,
 * p99 before and during.
 */
async function onlineMigration(records: number): Promise<Figure[]> {
  const name = 'cinv_bench_migrate';
  const admin = postgres(serverUrl('postgres'), { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists ${name} with (force)`);
  await admin.unsafe(`create database ${name}`);
  await admin.end();
  const sql = postgres(serverUrl(name), { max: 4, onnotice: () => {}, connection: { statement_timeout: 0 } });
  const dir = mkdtempSync(path.join(tmpdir(), 'cinv-bench-sql-'));
  try {
    for (const migration of (await listMigrations()).filter((m) => m.version <= 15))
      copyFileSync(migration.file, path.join(dir, path.basename(migration.file)));
    await migrate(sql, dir);
    console.log(`online move into partitions: writing ${records} records under the schema before partitioning ...`);
    await copyRecords(sql, 0, records);
    await sql.unsafe('vacuum analyze change_records');
    await migrate(sql);
    const server = await serveBench(name, {
      CINV_CHANGE_RETENTION: '0',
      CINV_SHED_EVENT_LOOP_DELAY: 'off',
      CINV_SHED_DB_WAIT: 'off',
    });
    try {
      const key = await benchKey(sql);
      const cis = (await sql<{ ci_id: string }[]>`select ci_id::text from change_records order by id limit 20`).map(
        (r) => r.ci_id,
      );
      const paths = [
        '/api/v1/changes?limit=50',
        ...cis.map((ci) => `/api/v1/ci-changes/${ci}?limit=50`),
        '/api/v1/changes?limit=50&filter=ci_type:eq:k8s.node',
        '/api/v1/configuration-items?limit=50',
      ];
      const before = requestsBeside(server, key, paths);
      await pause(20_000);
      const quiet = await before.stop();
      const during = requestsBeside(server, key, paths);
      // a collection's steady flow beside the move: 2 000 records a second
      const ingest = ingestBeside(serverUrl(name), 100);
      const activity = activityBeside(name);
      const started = performance.now();
      const phases: [string, number][] = [['start', started]];
      const [outcome] = (
        await migrateIntoPartitions(sql, {
          batchSize: 10_000,
          progress: {
            phase: (table, phase) => phases.push([`${table} ${phase}`, performance.now()]),
            copied: () => undefined,
          },
        })
      ).filter((o) => o.table === 'change_records');
      const ms = performance.now() - started;
      phases.push(['end', performance.now()]);
      const [loaded, writes, sampled] = [await during.stop(), await ingest.stop(), await activity.stop()];
      // the requests sent in each phase of the move: where the slow ones are
      for (let i = 0; i + 1 < phases.length; i++) {
        const [label, from] = phases[i]!;
        const within = during.sent.filter(([at]) => at >= from && at < phases[i + 1]![1]).map(([, took]) => took);
        if (within.length > 0)
          console.log(
            `    ${label.padEnd(28)} ${((phases[i + 1]![1] - from) / 1000).toFixed(1)} s, ${within.length} requests, p99 ${p99(within).toFixed(0)} ms, max ${Math.max(...within).toFixed(0)} ms`,
          );
        const seen = mostSeen(sampled, from, phases[i + 1]![1]);
        if (seen) console.log(`      sessions seen active (every 100 ms):\n${seen}`);
      }
      console.log(
        `  moved ${outcome!.rows} records in ${(ms / 1000).toFixed(1)} s (checksum equal, ${outcome!.repaired} repaired); ` +
          `API p99 ${p99(quiet).toFixed(0)} ms before, ${p99(loaded).toFixed(0)} ms during (${loaded.length} requests at 20/s); ingest batches p99 ${p99(writes).toFixed(0)} ms`,
      );
      return [
        {
          bench: 'history-scale',
          path: `online move into partitions of ${outcome!.rows} records`,
          value: Math.round(ms / 100) / 10,
          unit: 's',
        },
        { bench: 'history-scale', path: 'API p99 before the move', value: Math.round(p99(quiet)), unit: 'ms' },
        { bench: 'history-scale', path: 'API p99 during the move', value: Math.round(p99(loaded)), unit: 'ms' },
        {
          bench: 'history-scale',
          path: 'ingest batch of 100 records during the move: p99',
          value: Math.round(p99(writes)),
          unit: 'ms',
        },
      ];
    } finally {
      await server.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await sql.end();
    const dropper = postgres(serverUrl('postgres'), { max: 1, onnotice: () => {} });
    await dropper.unsafe(`drop database if exists ${name} with (force)`);
    await dropper.end();
  }
}

export async function benchHistoryScale(wanted = 20_000_000, moved = 5_000_000): Promise<Figure[]> {
  // N = 0: only the online move
  if (wanted === 0) return onlineMigration(moved);
  const sql = await benchDatabase(DATABASE);
  const figures: Figure[] = [];
  let small: Map<string, number>;
  try {
    // both sizes are on the disk at once
    const base = Math.max(1, Math.floor((await fitToDisk(sql, Math.round(wanted * 1.1))) / 11));
    const full = base * 10;
    // the smaller size in a database of its own, so both are kept between runs: a run after a change
    // to the reads measures at once, with no records generated again
    const smaller = await benchDatabase(SMALL_DATABASE);
    try {
      await holding(smaller, base);
      await holding(sql, full);
      figures.push(
        ...(await diskPerRecord(smaller, `${base} records`)),
        ...(await diskPerRecord(sql, `${full} records`)),
      );
      small = await measureAt(smaller, SMALL_DATABASE, base);
    } finally {
      await smaller.end();
    }
    const large = await measureAt(sql, DATABASE, full);
    for (const [label, ms] of large) {
      figures.push(
        { bench: 'history-scale', path: `${label}: at ${full}`, value: Math.round(ms * 10) / 10, unit: 'ms' },
        {
          bench: 'history-scale',
          path: `${label}: ${full} ÷ ${base}`,
          value: Math.round((ms / small.get(label)!) * 100) / 100,
          unit: 'ratio',
          target: 1.5,
        },
      );
    }
    figures.push(...(await dropOldestMonth(sql)));
    figures.push(...(await onlineMigration(Math.min(moved, full))));
    return figures;
  } finally {
    await sql.end();
  }
}
