/**
 * CSV export benchmark: seeds change records (two field changes each) and downloads them as CSV
 * with curl from a separate process, sampling this server process's RSS meanwhile.
 *
 *   CINV_BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/cinv_bench npm run bench -- csv [records]
 */
import { spawn } from 'node:child_process';
import type { Server } from 'node:http';
import postgres from 'postgres';
import { createApp } from '../../src/app.js';
import { issueApiKey } from '../../src/auth/api-keys.js';
import { loadConfig } from '../../src/config/config.js';
import { admit } from '../../src/db/database.js';
import { migrate } from '../../src/db/migrate.js';
import { createSearchBackend } from '../../src/search/backends.js';
import { createLogger } from '../../src/observability/logger.js';
import { DEFAULT_TENANT_ID } from '../../src/tenants.js';

const SECRET = 'bench-secret-bench-secret-bench-secret-00';

export async function benchCsvExport(records: number): Promise<void> {
  const url = process.env.CINV_BENCH_DATABASE_URL;
  if (!url) throw new Error('set CINV_BENCH_DATABASE_URL to a throwaway PostgreSQL database');
  const sql = postgres(url, { max: 4, onnotice: () => {} });
  await migrate(sql);
  await sql`truncate change_records, outbox, api_key_scopes, api_keys restart identity cascade`;
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
  await sql`analyze change_records`;
  const { key } = await issueApiKey(sql, SECRET, { tenantId: DEFAULT_TENANT_ID, name: 'bench', tier: 'ro' });

  const config = { ...loadConfig({ CINV_SECRET: SECRET, DATABASE_URL: url }), logLevel: 'warn' };
  const probe = postgres(url, { max: 1, onnotice: () => {} });
  const admitted = admit(sql, probe, config.dbAcquireTimeoutMs);
  const now = () => new Date();
  const app = createApp({ ...admitted, database: 'postgres', search: createSearchBackend(admitted.sql, config, now), config, logger: createLogger('warn'), now });
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  const port = (server.address() as { port: number }).port;
  let peakRss = process.memoryUsage().rss;
  const baseRss = peakRss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
  const started = performance.now();
  const bytes = await new Promise<number>((resolve, reject) => {
    const curl = spawn('curl', ['-sS', '-o', '/dev/null', '-w', '%{size_download}', '-H', 'Accept: text/csv', '-H', `X-API-Key: ${key}`,
      `http://127.0.0.1:${port}/api/v1/changes?sort_by=changed_at&sort_order=asc`]);
    let out = '';
    curl.stdout.on('data', (chunk) => (out += chunk));
    curl.on('close', (code) => (code === 0 ? resolve(Number(out)) : reject(new Error(`curl exited with ${code}`))));
  });
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const rows = records * 2;
  console.log(`csv export: ${rows} rows, ${(bytes / 1e6).toFixed(1)} MB in ${seconds.toFixed(2)} s = ${Math.round(rows / seconds)} rows/s; ` +
    `RSS ${(baseRss / 1e6).toFixed(0)} MB at start, peak ${(peakRss / 1e6).toFixed(0)} MB`);
  server.close();
  admitted.health.stop();
  await Promise.all([sql.end(), probe.end()]);
}
