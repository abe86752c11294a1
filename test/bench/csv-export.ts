/**
 * CSV export benchmark: N change records (default 500 000) of two field changes each, kept in
 * cinv_bench_csv between runs, downloaded as one CSV (2N rows) from `cinv serve` by curl, both in
 * processes of their own. Reports the rows per second of the download and the server's peak
 * resident memory during it (VmHWM of its process, reset just before the download), beside its
 * resident memory when idle before (the compiled server, as `npm start` runs it).
 *
 *   npm run bench -- csv [records]
 */
import { spawn } from 'node:child_process';
import type { Sql } from '../../src/platform/db/database.js';
import { backfillSearchDocuments } from '../../src/history/search/backfill.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import {
  benchDatabase,
  benchKey,
  memoryOf,
  resetPeakMemory,
  serveBench,
  settlePartitions,
  type Figure,
  type RunningServer,
} from './common.js';
import { SERVE_ENV } from './list.js';

const GENERATOR = 'csv-v1';

async function seed(sql: Sql, records: number): Promise<void> {
  const marker = `${GENERATOR}:${records}`;
  const [row] = await sql<
    { marker: string | null }[]
  >`select obj_description('change_records'::regclass, 'pg_class') as marker`;
  if (row?.marker === marker) return;
  console.log(`generating ${records} change records (kept for later runs) ...`);
  const started = performance.now();
  await sql.unsafe('truncate change_records, change_stats_queue, outbox restart identity cascade');
  await sql`
    insert into change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields)
    select ${DEFAULT_TENANT_ID}, gen_random_uuid(), null, null, 'web-' || g, 'ns-' || (g % 50), 'k8s.pod', 'UPDATED',
           timestamptz '2026-01-01' + g * interval '1 second',
           jsonb_build_array(
             jsonb_build_object('field', 'raw_data.spec.replicas', 'old_value', g % 7, 'new_value', g % 7 + 1),
             jsonb_build_object('field', 'raw_data.status.conditions',
               'old_value', jsonb_build_array(jsonb_build_object('type', 'Ready', 'status', 'True')),
               'new_value', jsonb_build_array(jsonb_build_object('type', 'Ready', 'status', 'False', 'reason', 'CrashLoopBackOff')))),
           array['raw_data.spec.replicas', 'raw_data.status.conditions']
    from generate_series(1, ${records}) g`;
  // records without a search document are filled by the server at start: done here, so that the
  // server does nothing but the export while it is measured
  await backfillSearchDocuments(sql, 5000);
  await settlePartitions(sql);
  await sql`vacuum analyze change_records`;
  await sql.unsafe(`comment on table change_records is '${marker}'`);
  console.log(`  generated in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

/** curl downloads the export; wc counts its lines and bytes. */
function download(url: string, key: string): Promise<{ lines: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const script = 'set -o pipefail; curl -sSf -H "Accept: text/csv" -H "X-API-Key: $KEY" "$URL" | wc -lc';
    const shell = spawn('bash', ['-c', script], { env: { ...process.env, KEY: key, URL: url } });
    let out = '';
    let err = '';
    shell.stdout.on('data', (chunk) => (out += chunk));
    shell.stderr.on('data', (chunk) => (err += chunk));
    shell.on('close', (code) => {
      const [lines, bytes] = out.trim().split(/\s+/).map(Number);
      if (code === 0 && lines !== undefined && bytes !== undefined) resolve({ lines, bytes });
      else reject(new Error(`download failed (${code}): ${err}`));
    });
  });
}

export async function benchCsvExport(records = 500_000): Promise<Figure[]> {
  const database = 'cinv_bench_csv';
  const sql = await benchDatabase(database);
  let server: RunningServer | undefined;
  try {
    await seed(sql, records);
    const key = await benchKey(sql);
    server = await serveBench(database, SERVE_ENV);
    const startRss = memoryOf(server.pid, 'VmRSS');
    // the peak from here on: start-up is not the export's
    resetPeakMemory(server.pid);
    const started = performance.now();
    const { lines, bytes } = await download(`${server.base}/api/v1/changes?sort_by=changed_at&sort_order=asc`, key);
    const took = (performance.now() - started) / 1000;
    const peakRss = memoryOf(server.pid, 'VmHWM');
    const rows = lines - 1;
    if (rows !== records * 2) throw new Error(`the export held ${rows} rows, not ${records * 2}`);
    console.log(
      `csv export: ${rows} rows, ${(bytes / 1e6).toFixed(1)} MB in ${took.toFixed(2)} s = ${Math.round(rows / took)} rows/s; ` +
        `server RSS ${startRss.toFixed(0)} MB before, peak ${peakRss.toFixed(0)} MB`,
    );
    const full = records >= 500_000;
    return [
      {
        bench: 'csv',
        path: `export of ${rows} rows`,
        value: rows / took,
        unit: 'rows/s',
        target: full ? 100_000 : undefined,
        atLeast: true,
      },
      { bench: 'csv', path: 'server RSS before the export', value: startRss, unit: 'MB' },
      {
        bench: 'csv',
        path: 'server peak RSS during the export (VmHWM)',
        value: peakRss,
        unit: 'MB',
        target: full ? 250 : undefined,
      },
      { bench: 'csv', path: 'server RSS growth during the export', value: peakRss - startRss, unit: 'MB' },
    ];
  } finally {
    await server?.stop();
    await sql.end();
  }
}
