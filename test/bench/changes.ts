/**
 * Change history benchmark: `GET /api/v1/changes` of `cinv serve` over N generated change records
 * (default 1 000 000, the generator of the search benchmark, kept in cinv_bench_changes between
 * runs), driven by autocannon with 4 connections, 8 s per path after a warm-up:
 *
 *   - the first page, unfiltered (newest first, the default);
 *   - filtered on CI type and change type (k8s.pod DELETED, 2.7 % of the records), total from the
 *     statistics pre-aggregate;
 *   - `search=` on a pod's full name (about five records each), going through the pods;
 *   - the search route (`/api/v1/changes/search?query=`) with the same names.
 *
 * Targets: p99 of 100 ms for the unfiltered and the filtered page at 4 connections. The searches
 * have none: they are reported for comparison, their budget is the search benchmark's (50 ms p95
 * for one request at a time on 5 million records), which this load does not reproduce.
 *
 *   npm run bench -- changes [records]
 */
import { benchDatabase, benchKey, serveBench, type Figure, type RunningServer } from './common.js';
import { drive, SERVE_ENV, type Load } from './list.js';
import { load as loadHistory } from './search.js';

export async function benchChanges(records = 1_000_000): Promise<Figure[]> {
  const database = 'cinv_bench_changes';
  const sql = await benchDatabase(database);
  let server: RunningServer | undefined;
  try {
    await loadHistory(sql, records);
    // pods with history, spread over the records (by id, which the generator makes deterministic)
    const pods = (
      await sql<{ ci_name: string }[]>`
      select ci_name from change_records where ci_type = 'k8s.pod' and id % ${Math.max(1, Math.floor(records / 1000))} = 0 order by id limit 1000`
    ).map((r) => r.ci_name);
    const podName = (i: number) => pods[i % pods.length]!;
    const key = await benchKey(sql);
    server = await serveBench(database, SERVE_ENV);
    const base = server.base;
    const auth = { 'x-api-key': key };
    const paths = [
      { label: 'unfiltered', pathOf: () => '/api/v1/changes', target: 100 },
      {
        label: 'ci_type + change_type',
        pathOf: () => '/api/v1/changes?filter=ci_type:eq:k8s.pod&filter=change_type:eq:DELETED',
        target: 100,
      },
      {
        label: 'search= a pod name',
        pathOf: (i: number) => `/api/v1/changes?search=${encodeURIComponent(podName(i))}`,
        target: undefined,
      },
      {
        label: 'search route, a pod name',
        pathOf: (i: number) => `/api/v1/changes/search?query=${encodeURIComponent(podName(i))}`,
        target: undefined,
      },
    ];
    const load: Load = { connections: 4, seconds: 8, warmupSeconds: 2 };
    console.log(
      `${records} change records; ${load.connections} connections, ${load.seconds} s per path after ${load.warmupSeconds} s of warm-up`,
    );
    const figures: Figure[] = [];
    for (const p of paths) {
      const probe = await fetch(base + p.pathOf(0), { headers: auth });
      const body = (await probe.json()) as { items?: unknown[]; total?: number };
      if (!probe.ok || !body.items?.length)
        throw new Error(`${p.pathOf(0)}: ${probe.status}, ${body.items?.length ?? 0} items`);
      const measured = await drive(base, auth, p.pathOf, load);
      console.log(
        `  ${p.label.padEnd(26)} ${measured.rps.toFixed(0).padStart(5)} req/s p50 ${measured.p50} ms p99 ${measured.p99} ms ` +
          `(first request: ${body.items.length} items of ${body.total})`,
      );
      const full = records >= 1_000_000;
      figures.push(
        { bench: 'changes', path: `${p.label}: p50`, value: measured.p50, unit: 'ms' },
        {
          bench: 'changes',
          path: `${p.label}: p99`,
          value: measured.p99,
          unit: 'ms',
          target: full ? p.target : undefined,
        },
      );
    }
    return figures;
  } finally {
    await server?.stop();
    await sql.end();
  }
}
