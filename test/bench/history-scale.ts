/**
 * History at scale: the change history's reads at N change records (default 20 000 000, over 14
 * months for 1 000 000 CIs) against the same reads at N / 10, in one run on one database that grows
 * from the smaller to the larger size, so each figure is a ratio (target ≤ 1.5 for every read).
 *
 *   npm run bench -- history-scale [N]
 *
 * The generator writes with COPY (indexes dropped for the load and rebuilt after, as a restore
 * would), reports its time and the disk used, and scales N down with a warning when the disk
 * cannot hold it. Also measured: bytes per change record (table and indexes), and the sweep's
 * retention trim of the oldest month (run in a transaction that is rolled back, so the data stays
 * for the next run). Kept in cinv_bench_history between runs.
 */
import { statfs } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Sql } from '../../src/db/database.js';
import { documentTokens, toTsvectorText } from '../../src/history/document.js';
import { trimChangeHistory } from '../../src/history/retention.js';
import { refreshStatsAggregate } from '../../src/history/stats-store.js';
import { DEFAULT_TENANT_ID } from '../../src/tenants.js';
import { random } from '../support/scenario.js';
import { benchDatabase, benchKey, serveBench, type Figure, type RunningServer } from './common.js';

const DATABASE = 'cinv_bench_history';
const DAY = 86_400_000;
const NOW = new Date('2026-11-20T12:00:00Z');
const SPAN = 425 * DAY;
const CIS = 1_000_000;
/** What one generated record takes on disk with its index entries, before it is measured. */
const BYTES_PER_RECORD_GUESS = 2_000;
const GENERATOR = 'history-v1';

const ciUuid = (n: number) => `00000000-0000-4000-9000-${n.toString(16).padStart(12, '0')}`;

function ciOf(n: number) {
  if (n % 50 === 0) return { name: `node-${n}.prod.example`, namespace: null, type: 'k8s.node' };
  if (n % 50 === 1) return { name: `svc-${n % 5000}`, namespace: `ns-${n % 200}`, type: 'k8s.service' };
  return { name: `app-${n % 4000}-${(n * 2654435761 % 1048576).toString(16)}`, namespace: `ns-${n % 200}`, type: 'k8s.pod' };
}

/** COPY text format: backslash, tab and line breaks escaped; null as \N. */
const field = (value: string | null): string => (value === null ? '\\N' : value.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r'));

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
      ? ['CREATED', [{ field: 'name', old_value: null, new_value: ci.name }, { field: 'status', old_value: null, new_value: 'active' }]]
      : kind < 0.1
        ? ['DELETED', [{ field: 'status', old_value: 'active', new_value: 'archived' }]]
        : kind < 0.6
          ? ['UPDATED', [{ field: 'raw_data.spec.containers', old_value: [{ name: 'app', image: `nginx:1.${(minor + 39) % 40}` }], new_value: [{ name: 'app', image: tag }] }]]
          : kind < 0.8
            ? ['UPDATED', [{ field: 'raw_data.spec.replicas', old_value: minor % 5, new_value: (minor % 5) + 1 }]]
            : ['UPDATED', [
                { field: 'raw_data.status.conditions', old_value: [{ type: 'Ready', status: 'True' }], new_value: [{ type: 'Ready', status: 'False', reason: rand() < 0.5 ? 'CrashLoopBackOff' : 'OOMKilled' }] },
                { field: 'raw_data.status.podIP', old_value: `10.${minor}.0.${i % 250}`, new_value: `10.${minor}.1.${i % 250}` },
              ]];
  const document = toTsvectorText(documentTokens({ ci_name: ci.name, ci_namespace: ci.namespace, ci_type: ci.type, changes }));
  const fields = `{${[...new Set(changes.map((c) => c.field))].sort().map((f) => `"${f}"`).join(',')}}`;
  return [DEFAULT_TENANT_ID, ciUuid(n), '1', `cluster-${n % 7}`, ci.name, ci.namespace, ci.type, changeType, at.toISOString(), JSON.stringify(changes), fields, document]
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

/** Adds generated records up to `target` by COPY, indexes dropped and rebuilt; the statistics queue gets them too. */
async function growTo(sql: Sql, target: number): Promise<void> {
  const have = await recordCount(sql);
  if (have >= target) return;
  console.log(`generating records ${have}..${target} ...`);
  const indexes = await sql<{ indexname: string; indexdef: string }[]>`
    select indexname, indexdef from pg_indexes where tablename = 'change_records' and indexname <> 'change_records_pkey'`;
  for (const index of indexes) await sql.unsafe(`drop index ${index.indexname}`);
  const started = performance.now();
  const BATCH = 50_000;
  async function* lines() {
    for (let from = have; from < target; from += BATCH) {
      const rand = random(from + 17);
      const batch: string[] = [];
      for (let i = from; i < Math.min(target, from + BATCH); i++) batch.push(`${lineOf(i, rand)}\n`);
      yield batch.join('');
      if ((from / BATCH) % 40 === 0) console.log(`  ${Math.min(target, from + BATCH)} records, ${((performance.now() - started) / 1000).toFixed(0)} s`);
    }
  }
  const copy = await sql`
    copy change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields, search_vector)
    from stdin`.writable();
  await pipeline(Readable.from(lines()), copy);
  const loaded = performance.now();
  await sql.unsafe(`set maintenance_work_mem = '1GB'`);
  for (const index of indexes) await sql.unsafe(index.indexdef);
  await sql`insert into change_stats_queue (change_id, changed_at) select id, changed_at from change_records where id > (select coalesce(max(change_id), 0) from change_stats_queue)`;
  await sql.unsafe('vacuum analyze change_records');
  const refreshed = performance.now();
  await refreshStatsAggregate(sql, NOW, 100_000);
  console.log(
    `  copied in ${((loaded - started) / 1000).toFixed(0)} s, indexes rebuilt in ${((refreshed - loaded) / 1000).toFixed(0)} s, ` +
      `statistics refreshed in ${((performance.now() - refreshed) / 1000).toFixed(0)} s`,
  );
  await sql.unsafe(`comment on table change_records is '${GENERATOR}:${target}'`);
}

/** Table and index bytes per change record. */
async function diskPerRecord(sql: Sql, label: string): Promise<Figure[]> {
  const [row] = await sql<{ records: string; heap: string; indexes: string }[]>`
    select (select count(*) from change_records)::text as records,
           pg_table_size('change_records')::text as heap, pg_indexes_size('change_records')::text as indexes`;
  const records = Number(row!.records);
  console.log(`  ${label}: ${records} records, table ${(Number(row!.heap) / 1e9).toFixed(2)} GB, indexes ${(Number(row!.indexes) / 1e9).toFixed(2)} GB`);
  return [
    { bench: 'history-scale', path: `${label}: table bytes per record`, value: Math.round(Number(row!.heap) / records), unit: 'B' },
    { bench: 'history-scale', path: `${label}: index bytes per record`, value: Math.round(Number(row!.indexes) / records), unit: 'B' },
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
  { label: 'GET /changes changed_field', path: () => '/api/v1/changes?limit=50&filter=changed_field:eq:raw_data.status.podIP' },
  { label: 'search rare', path: () => `/api/v1/changes/search?query=${encodeURIComponent('nginx:9')}` },
  { label: 'search two terms', path: (i) => `/api/v1/changes/search?query=${encodeURIComponent(`${ciOf(4242 + i).name.split('-')[2]} replicas`)}` },
  { label: 'stats default', path: () => '/api/v1/changes/stats' },
  {
    label: 'stats 7-day window',
    path: () => `/api/v1/changes/stats?start_date=${new Date(NOW.getTime() - 10 * DAY).toISOString()}&end_date=${new Date(NOW.getTime() - 3 * DAY).toISOString()}`,
  },
  { label: 'CSV export (ms per 1 000 rows)', path: () => `/api/v1/changes?start_date=${new Date(NOW.getTime() - 2 * DAY).toISOString()}&end_date=${new Date(NOW.getTime() - DAY).toISOString()}`, csv: true },
];

/** Median milliseconds of each read over `runs` requests (CSV: per 1 000 rows streamed). */
async function measureReads(server: RunningServer, key: string, reads: Read[], runs = 9): Promise<Map<string, number>> {
  const medians = new Map<string, number>();
  for (const read of reads) {
    const samples: number[] = [];
    for (let i = 0; i <= runs; i++) {
      const started = performance.now();
      const response = await fetch(server.base + read.path(i), { headers: { 'x-api-key': key, accept: read.csv ? 'text/csv' : 'application/json' } });
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

async function measureAt(sql: Sql, records: number): Promise<Map<string, number>> {
  await growTo(sql, records);
  const server = await serveBench(DATABASE, { CINV_CHANGE_RETENTION: '0', CINV_SHED_EVENT_LOOP_DELAY: 'off', CINV_SHED_DB_WAIT: 'off' });
  try {
    const cis = await sql<{ ci_id: string }[]>`select ci_id::text from change_records order by id limit 20`;
    const medians = await measureReads(server, await benchKey(sql), readsOf(cis.map((row) => row.ci_id)));
    for (const [label, ms] of medians) console.log(`  ${String(records).padStart(9)} records  ${label.padEnd(32)} ${ms.toFixed(1).padStart(8)} ms`);
    return medians;
  } finally {
    await server.stop();
  }
}

/** The sweep's trim of the oldest month, in a transaction rolled back: the time a delete-based retention takes. */
async function trimOldestMonth(sql: Sql): Promise<Figure> {
  const retention = { defaultMs: SPAN - 30 * DAY, byType: new Map<string, number | null>() };
  let trimmed = 0;
  const started = performance.now();
  await sql
    .begin(async (tx) => {
      trimmed = (await trimChangeHistory(tx as unknown as Sql, retention, NOW, 10_000)).records;
      throw new Error('rolled back on purpose');
    })
    .catch((error: Error) => {
      if (error.message !== 'rolled back on purpose') throw error;
    });
  const ms = performance.now() - started;
  console.log(`  trimming the oldest month by delete: ${trimmed} records in ${(ms / 1000).toFixed(1)} s (rolled back)`);
  return { bench: 'history-scale', path: `trim oldest month by delete (${trimmed} records)`, value: Math.round(ms), unit: 'ms', target: 1000 };
}

export async function benchHistoryScale(wanted = 20_000_000): Promise<Figure[]> {
  const sql = await benchDatabase(DATABASE);
  try {
    const full = await fitToDisk(sql, wanted);
    const base = Math.max(1, Math.floor(full / 10));
    if ((await recordCount(sql)) > base) {
      console.log('the database holds more than the smaller size: starting it again');
      await sql.unsafe('truncate change_records, change_stats_queue, change_stats_buckets, change_stats_ci_last, change_stats_affected, change_stats_snapshots, outbox restart identity');
      await sql`update change_stats_state set refreshed_at = '-infinity'`;
    }
    const small = await measureAt(sql, base);
    const figures = await diskPerRecord(sql, `${base} records`);
    const large = await measureAt(sql, full);
    figures.push(...(await diskPerRecord(sql, `${full} records`)));
    for (const [label, ms] of large) {
      figures.push(
        { bench: 'history-scale', path: `${label}: at ${full}`, value: Math.round(ms * 10) / 10, unit: 'ms' },
        { bench: 'history-scale', path: `${label}: ${full} ÷ ${base}`, value: Math.round((ms / small.get(label)!) * 100) / 100, unit: 'ratio', target: 1.5 },
      );
    }
    figures.push(await trimOldestMonth(sql));
    return figures;
  } finally {
    await sql.end();
  }
}
