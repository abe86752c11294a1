/**
 * What the benchmarks share: their databases on the machine's PostgreSQL, a `cinv serve` process
 * with a read key, and the figures they report for the closing table.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import postgres from 'postgres';
import type { Sql } from '../../src/platform/db/database.js';
import { migrate } from '../../src/platform/db/migrate.js';
import { keepAllPartitions } from '../../src/platform/db/partitions.js';
import { issueApiKey } from '../../src/platform/auth/api-keys.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { ROOT, startServer, stopServer } from '../support/cli.js';

export const BENCH_SECRET = 'bench-secret-bench-secret-bench-secret-02';

/** One measured figure; `target` is the bound it must stay under (or, with `atLeast`, above). */
export interface Figure {
  bench: string;
  path: string;
  value: number;
  unit: string;
  target?: number;
  atLeast?: boolean;
}

export const seconds = (started: number): number => Math.round((performance.now() - started) / 10) / 100;

/** The server the benchmarks run on: CINV_BENCH_SERVER_URL, by default the machine's PostgreSQL. */
export function serverUrl(database: string): string {
  const base = new URL(process.env.CINV_BENCH_SERVER_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
  base.pathname = `/${database}`;
  return base.toString();
}

/** Opens (creating and migrating it first) one benchmark's database. */
export async function benchDatabase(database: string, max = 4): Promise<Sql> {
  const admin = postgres(serverUrl('postgres'), { max: 1, onnotice: () => {} });
  try {
    const [exists] = await admin`select 1 from pg_database where datname = ${database}`;
    if (!exists) await admin.unsafe(`create database "${database}"`);
  } finally {
    await admin.end();
  }
  const sql = benchConnection(database, max);
  await migrate(sql);
  return sql;
}

/** Connections to a benchmark's database that exists and is migrated already (from another thread, say). */
export function benchConnection(database: string, max = 4): Sql {
  return postgres(serverUrl(database), { max, onnotice: () => {}, connection: { statement_timeout: 0 } });
}

/** A key for the default tenant, with the given tier. */
export async function benchKey(sql: Sql, tier: 'ro' | 'svc' | 'adm' = 'ro'): Promise<string> {
  const { key } = await issueApiKey(sql, BENCH_SECRET, {
    tenantId: DEFAULT_TENANT_ID,
    name: `bench-${tier}-${Date.now()}`,
    tier,
  });
  return key;
}

export interface RunningServer {
  base: string;
  pid: number;
  stop(): Promise<void>;
}

/** `cinv serve` on the database, as a separate process (its own event loop and heap, as in production). */
let built = false;

/** Compiles the server once per bench run: figures are taken on what `npm start` runs. */
function buildOnce(): void {
  if (built) return;
  execFileSync('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: 'inherit' });
  built = true;
}

export async function serveBench(database: string, env: Record<string, string> = {}): Promise<RunningServer> {
  buildOnce();
  const server = await startServer(
    {
      DATABASE_URL: serverUrl(database),
      CINV_SECRET: BENCH_SECRET,
      // info: the start waits for the "cinv listening" line; requests are not logged at info
      LOG_LEVEL: 'info',
      CINV_SWEEP_SCHEDULE: '0 0 1 1 *',
      NODE_ENV: 'production',
      // the benchmarks measure throughput, not the per-key limits
      CINV_RATE_LIMIT: '1000000',
      ...env,
    },
    { built: true },
  );
  return {
    base: `http://127.0.0.1:${server.port}`,
    pid: server.child.pid!,
    async stop() {
      await stopServer(server.child);
    },
  };
}

/** A field of /proc/<pid>/status in MB (`VmRSS`, `VmHWM`). */
export function memoryOf(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no ${field} for process ${pid}`);
  return Number(match[1]) / 1024;
}

/** Starts a process's peak resident memory (VmHWM) over from its current size. */
export function resetPeakMemory(pid: number): void {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
  } catch (error) {
    console.log(`could not reset the peak RSS (${(error as Error).message}): the peak includes what came before`);
  }
}

const format = (value: number, unit: string) =>
  unit === 's' || unit === 'ratio' ? value.toFixed(2) : value >= 100 ? Math.round(value).toString() : value.toFixed(1);

/** The closing table: every figure beside its target, and whether it holds. */
export function printTable(figures: Figure[]): void {
  const rows = figures.map((f) => {
    const verdict =
      f.target === undefined ? '' : (f.atLeast ? f.value >= f.target : f.value <= f.target) ? 'ok' : 'MISSED';
    const target = f.target === undefined ? '' : `${f.atLeast ? '≥' : '≤'} ${format(f.target, f.unit)}`;
    return [f.bench, f.path, `${format(f.value, f.unit)} ${f.unit}`, target, verdict];
  });
  const header = ['bench', 'path', 'measured', 'target', ''];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const row of rows) console.log(line(row));
}

/**
 * Gives every month of generated history its own partition, as the sweep would over several runs:
 * rows written straight into the default partition are moved out here, with no statement timeout,
 * so that the server neither starts on nor measures a default partition full of history.
 */
export async function settlePartitions(sql: Sql): Promise<void> {
  for (let round = 0; round < 24; round++) {
    const upkeep = await keepAllPartitions(sql, new Date());
    const moved = Object.values(upkeep).reduce((sum, table) => sum + table.movedFromDefault, 0);
    if (moved > 0) console.log(`  partitions: ${moved} rows moved out of the default partitions`);
    // rows just moved have no visibility map and no statistics yet: measured before autovacuum
    // comes by, a 7-day statistics window took 820 ms at p95 instead of 320
    for (const [table, kept] of Object.entries(upkeep))
      if (kept.movedFromDefault > 0) await sql.unsafe(`vacuum analyze ${table}`);
    if (Object.values(upkeep).every((table) => table.defaultRows === 0)) return;
  }
}
