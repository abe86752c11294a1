/**
 * Soak benchmark: an open loop of 40 requests/s (CINV_BENCH_SOAK_RATE) for 120 s
 * (CINV_BENCH_SOAK_SECONDS) against `cinv serve` on the machine's PostgreSQL, with its default
 * limits. The mix is what an inventory sees in a day's busy hour: filtered CI lists (30 %), CI
 * details (18 %), relationships (16 %), CI histories (16 %), small delta ingests (12 %, from eight
 * agents, each into a source of its own: one source's ingests take turns, see reconcile), health
 * checks (3 %) and CSV exports of whole filtered change histories (5 %: no `limit`, hundreds of
 * thousands of rows each). The inventory is one generated cluster of 20 000 pods (about 29 000
 * CIs with their relationships), the history RECORDS (default 300 000) change records of those
 * CIs, kept in cinv_bench_soak between runs.
 *
 * Reports the answer times of the admitted requests (everything not refused at once; exports
 * apart, their time is their size), the share refused at once (503 `overloaded` or `exports_busy`)
 * by kind, both by 20 s of the run, and the server's side: resident memory (VmRSS every 5 s), CPU,
 * event-loop delay, and its in-flight count as /health/ready saw it. The machine's load average is
 * printed beside them: other work on the machine shows in every figure.
 *
 *   npm run bench -- soak [records]
 */
import { readFileSync } from 'node:fs';
import type { Sql } from '../../src/platform/db/database.js';
import { backfillSearchDocuments } from '../../src/history/search/backfill.js';
import { ensureSource } from '../../src/collection/sources/store.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { buildPod } from '../support/factories.js';
import { benchDatabase, benchKey, memoryOf, serveBench, type Figure, type RunningServer } from './common.js';
import { clusterShape, SERVE_ENV, seedClusters } from './list.js';
import { openLoop, percentile, summarize, type Sample, type Shot } from './open-loop.js';

const DATABASE = 'cinv_bench_soak';
const GENERATOR = 'soak-v1';
const PODS = 20_000;
/** Refused at once by the server, as opposed to answered (even with an error) after being worked on. */
const SHED_REASONS = new Set(['overloaded', 'exports_busy']);

const numberFromEnv = (name: string, fallback: number): number => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number`);
  return value;
};

/** `records` change records spread over every CI of the inventory, two field changes each. */
async function seedHistory(sql: Sql, records: number): Promise<void> {
  const [inventory] = await sql<
    { marker: string | null }[]
  >`select obj_description('configuration_items'::regclass, 'pg_class') as marker`;
  const marker = `${GENERATOR}:${records}:${inventory?.marker ?? ''}`;
  const [row] = await sql<{ marker: string | null; records: number }[]>`
    select obj_description('change_records'::regclass, 'pg_class') as marker, (select count(*)::int from change_records) as records`;
  if (row?.marker === marker && row.records >= records) return;
  console.log(`generating ${records} change records (kept for later runs) ...`);
  const started = performance.now();
  await sql.unsafe('truncate change_records, change_stats_queue, outbox restart identity cascade');
  await sql`
    with cis as (
      select row_number() over (order by ci_id) - 1 as n, ci_id, source_id, scope_id, name, namespace, ci_type
      from configuration_items where tenant_id = ${DEFAULT_TENANT_ID}
    )
    insert into change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields)
    select ${DEFAULT_TENANT_ID}, ci.ci_id, ci.source_id, ci.scope_id, ci.name, ci.namespace, ci.ci_type, 'UPDATED',
           now() - interval '60 days' + g * interval '15 seconds',
           jsonb_build_array(
             jsonb_build_object('field', 'raw_data.spec.replicas', 'old_value', g % 7, 'new_value', g % 7 + 1),
             jsonb_build_object('field', 'raw_data.status.conditions',
               'old_value', jsonb_build_array(jsonb_build_object('type', 'Ready', 'status', 'True')),
               'new_value', jsonb_build_array(jsonb_build_object('type', 'Ready', 'status', 'False', 'reason', 'CrashLoopBackOff')))),
           array['raw_data.spec.replicas', 'raw_data.status.conditions']
    from generate_series(1::bigint, ${records}) g join cis ci on ci.n = (g * 7919) % (select count(*) from cis)`;
  // the server fills missing search documents at start: done here, so that it starts settled
  await backfillSearchDocuments(sql, 5000);
  await sql`vacuum analyze change_records`;
  await sql.unsafe(`comment on table change_records is '${marker}'`);
  console.log(`  generated in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}

/** Delta ingests come from this many agents, each pushing into a source of its own. */
const AGENTS = 8;

interface Targets {
  ids: string[];
  withRelationships: string[];
  agentSources: string[];
}

async function targets(sql: Sql): Promise<Targets> {
  const ids = (
    await sql<{ ci_id: string }[]>`
    select ci_id from configuration_items where tenant_id = ${DEFAULT_TENANT_ID} order by ci_id limit 2000`
  ).map((r) => r.ci_id);
  const withRelationships = (
    await sql<{ ci_id: string }[]>`
    select ci_id from configuration_items where tenant_id = ${DEFAULT_TENANT_ID} and ci_type in ('k8s.node', 'k8s.deployment', 'k8s.replicaset', 'k8s.service')
    order by ci_id limit 2000`
  ).map((r) => r.ci_id);
  const agentSources: string[] = [];
  for (let a = 0; a < AGENTS; a++)
    agentSources.push((await ensureSource(sql, DEFAULT_TENANT_ID, `soak-agent-${a}`, 'universal')).id);
  return { ids, withRelationships, agentSources };
}

const EXPORTS = [
  '/api/v1/changes?filter=ci_type:eq:k8s.pod',
  '/api/v1/changes?filter=changed_field:eq:raw_data.status.conditions&sort_by=changed_at&sort_order=asc',
];

/** Request `i` of the mix; `(i * 37) % 100` spreads each kind evenly through the run. */
function mix(t: Targets): (i: number) => Shot {
  return (i): Shot => {
    const slot = (i * 37) % 100;
    const id = t.ids[i % t.ids.length]!;
    if (slot < 5)
      return { kind: 'export', method: 'GET', path: EXPORTS[i % EXPORTS.length]!, headers: { accept: 'text/csv' } };
    if (slot < 17) {
      const agent = i % AGENTS;
      const items = [0, 1].map((k) =>
        buildPod({ name: `soak-${agent}-${(i * 2 + k) % 50}`, namespace: 'soak', replicas: 1 + (i % 3) }),
      );
      return {
        kind: 'ingest',
        method: 'POST',
        path: `/api/v1/sources/${t.agentSources[agent]}/ingest`,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ mode: 'delta', scope_id: `agent-${agent}`, items }),
      };
    }
    if (slot < 20) return { kind: 'health', method: 'GET', path: '/health' };
    if (slot < 50) {
      const lists = [
        `/api/v1/configuration-items?filter=ci_type:eq:k8s.pod&filter=namespace:eq:team-${i % 400}&sort_by=name&limit=50`,
        `/api/v1/configuration-items?filter=name:startswith:svc-${i % 900}&limit=20`,
        '/api/v1/configuration-items?filter=ci_type:eq:k8s.deployment&filter=raw_data.spec.replicas:gte:2&limit=50',
      ];
      return { kind: 'list', method: 'GET', path: lists[i % lists.length]! };
    }
    if (slot < 68) return { kind: 'detail', method: 'GET', path: `/api/v1/configuration-items/${id}` };
    if (slot < 84) {
      return {
        kind: 'relationships',
        method: 'GET',
        path: `/api/v1/configuration-items/${t.withRelationships[i % t.withRelationships.length]}/relationships`,
      };
    }
    return { kind: 'history', method: 'GET', path: `/api/v1/ci-changes/${id}` };
  };
}

interface Watch {
  /** Resident memory, the server's share of a core since the previous sample, and the machine's load average. */
  rss: { at: number; mb: number; cpu: number; load: number }[];
  /** The event loop's delay as the server's own metrics saw it over each 5 s (mean, p50, p99 in ms). */
  lag: { mean: number; p50: number; p99: number }[];
  ready: { at: number; status: number; inFlight: number | undefined; dbWaiting: number | undefined; ms: number }[];
  stop(): void;
}

/** CPU seconds a process has used (user and system), from /proc/<pid>/stat. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const gauge = (metrics: string, name: string): number => {
  const match = new RegExp(`^${name} ([0-9.e+-]+)$`, 'm').exec(metrics);
  return match ? Number(match[1]) * 1000 : NaN;
};

/**
 * Samples the server's VmRSS and its event-loop delay every 5 s, and /health/ready every 2 s,
 * beside the load. The delay comes from /metrics, whose default process metrics keep a delay
 * histogram that each scrape reads and starts over.
 */
function watch(server: RunningServer, started: number): Watch {
  const rss: Watch['rss'] = [];
  const lag: Watch['lag'] = [];
  const ready: Watch['ready'] = [];
  let cpu = { at: performance.now(), seconds: cpuSeconds(server.pid) };
  const sampleRss = () => {
    const now = { at: performance.now(), seconds: cpuSeconds(server.pid) };
    const share = now.at > cpu.at ? (now.seconds - cpu.seconds) / ((now.at - cpu.at) / 1000) : 0;
    cpu = now;
    const load = Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
    rss.push({ at: now.at - started, mb: memoryOf(server.pid, 'VmRSS'), cpu: share, load });
    fetch(`${server.base}/metrics`).then(
      async (r) => {
        const text = await r.text();
        const of = (stat: string) => gauge(text, `cinv_nodejs_eventloop_lag_${stat}_seconds`);
        lag.push({ mean: of('mean'), p50: of('p50'), p99: of('p99') });
      },
      () => undefined,
    );
  };
  sampleRss();
  const rssTimer = setInterval(sampleRss, 5000);
  const readyTimer = setInterval(() => {
    const sent = performance.now();
    fetch(`${server.base}/health/ready`).then(
      async (r) => {
        const body = (await r.json()) as { checks?: { load?: { in_flight?: number; db_waiting?: number } } };
        const load = body.checks?.load;
        ready.push({
          at: sent - started,
          status: r.status,
          inFlight: load?.in_flight,
          dbWaiting: load?.db_waiting,
          ms: performance.now() - sent,
        });
      },
      () =>
        ready.push({
          at: sent - started,
          status: 0,
          inFlight: undefined,
          dbWaiting: undefined,
          ms: performance.now() - sent,
        }),
    );
  }, 2000);
  return {
    rss,
    lag,
    ready,
    stop() {
      clearInterval(rssTimer);
      clearInterval(readyTimer);
    },
  };
}

const isShed = (s: Sample) => s.status === 503 && SHED_REASONS.has(s.reason ?? '');
/** Exports take as long as their size: their answer times are reported apart from the rest. */
const isInteractive = (s: Sample) => s.kind !== 'export';
const max = (values: number[]) => values.reduce((a, b) => Math.max(a, b), 0);

/** The share of each kind refused at once, and why. */
function shedByKind(samples: Sample[], kinds: string[]): Figure[] {
  console.log('shed at once, by kind:');
  return kinds.map((kind) => {
    const all = samples.filter((s) => s.kind === kind);
    const shed = all.filter(isShed);
    const reasons = new Map<string, number>();
    for (const s of shed) reasons.set(s.reason!, (reasons.get(s.reason!) ?? 0) + 1);
    const share = all.length === 0 ? 0 : (100 * shed.length) / all.length;
    console.log(
      `  ${kind.padEnd(14)} ${String(shed.length).padStart(5)}/${String(all.length).padEnd(5)} = ${share.toFixed(1).padStart(5)} %  ${JSON.stringify(Object.fromEntries(reasons))}`,
    );
    return { bench: 'soak', path: `shed at once: ${kind}`, value: share, unit: '%' };
  });
}

/** Answer times and shedding by 20 s of sending, to tell a warm-up from a steady state or a drift. */
function timeline(samples: Sample[], seconds: number): void {
  console.log('by 20 s of sending (admitted requests other than exports; shed: share of all):');
  for (let from = 0; from < seconds; from += 20) {
    const slice = samples.filter((s) => s.at >= from * 1000 && s.at < (from + 20) * 1000);
    const ms = slice.filter((s) => s.status !== 0 && !isShed(s) && isInteractive(s)).map((s) => s.ms);
    const shed = slice.length === 0 ? 0 : (100 * slice.filter(isShed).length) / slice.length;
    console.log(
      `  ${String(from).padStart(4)}-${String(from + 20).padEnd(4)} s  p50 ${percentile(ms, 50).toFixed(0).padStart(5)} ms  ` +
        `p99 ${percentile(ms, 99).toFixed(0).padStart(6)} ms  shed ${shed.toFixed(1).padStart(5)} %`,
    );
  }
}

function serverSide(watched: Watch): void {
  console.log(`server RSS (MB) every 5 s: ${watched.rss.map((r) => r.mb.toFixed(0)).join(' ')}`);
  console.log(
    `server CPU (share of a core) every 5 s: ${watched.rss
      .slice(1)
      .map((r) => r.cpu.toFixed(2))
      .join(' ')}`,
  );
  console.log(`machine load average every 5 s: ${watched.rss.map((r) => r.load.toFixed(1)).join(' ')}`);
  const lag = (stat: 'mean' | 'p50' | 'p99') => watched.lag.map((l) => l[stat].toFixed(0)).join(' ');
  console.log(`server event-loop delay (ms, the 10 ms timer resolution included) per 5 s, mean: ${lag('mean')}`);
  console.log(`  p50: ${lag('p50')}`);
  console.log(`  p99: ${lag('p99')}`);
  console.log(
    `server in flight per /health/ready (every 2 s): ${watched.ready.map((r) => r.inFlight ?? '-').join(' ')}`,
  );
  console.log(`  of which waiting for a connection: ${watched.ready.map((r) => r.dbWaiting ?? '-').join(' ')}`);
  summarize('/health/ready meanwhile', watched.ready);
}

function report(samples: Sample[], watched: Watch, peakOpen: number, rate: number, seconds: number): Figure[] {
  const admitted = samples.filter((s) => s.status !== 0 && !isShed(s));
  const interactive = admitted.filter(isInteractive).map((s) => s.ms);
  const kinds = [...new Set(samples.map((s) => s.kind))].sort();
  console.log(`soak: ${rate} req/s for ${seconds} s, ${samples.length} requests`);
  summarize('admitted, but exports', admitted.filter(isInteractive));
  for (const kind of kinds)
    summarize(
      `  ${kind}`,
      admitted.filter((s) => s.kind === kind),
    );
  summarize('shed at once (503)', samples.filter(isShed));
  const figures: Figure[] = [
    { bench: 'soak', path: 'admitted but exports: p50', value: percentile(interactive, 50), unit: 'ms' },
    { bench: 'soak', path: 'admitted but exports: p99', value: percentile(interactive, 99), unit: 'ms', target: 1000 },
    { bench: 'soak', path: 'admitted but exports: max', value: max(interactive), unit: 'ms' },
  ];
  figures.push(...shedByKind(samples, kinds));
  timeline(samples, seconds);
  const unansweredKinds = new Map<string, number>();
  for (const s of samples.filter((s) => s.status === 0))
    unansweredKinds.set(s.kind, (unansweredKinds.get(s.kind) ?? 0) + 1);
  const unanswered = [...unansweredKinds.values()].reduce((a, b) => a + b, 0);
  const failed = samples.filter((s) => s.status >= 500 && !isShed(s)).length;
  console.log(
    `unanswered (failed connection, or still open at the end): ${unanswered} ${JSON.stringify(Object.fromEntries(unansweredKinds))}; ` +
      `answered 5xx after being admitted: ${failed}; client-side peak of open requests: ${peakOpen}`,
  );
  const exports = admitted.filter((s) => s.kind === 'export' && s.status === 200);
  if (exports.length > 0) {
    const mb = exports.reduce((sum, s) => sum + s.bytes, 0) / exports.length / 1e6;
    console.log(`exports completed: ${exports.length}, ${mb.toFixed(1)} MB each on average`);
  }
  serverSide(watched);
  figures.push(
    { bench: 'soak', path: 'exports completed', value: exports.length, unit: 'exports' },
    { bench: 'soak', path: 'unanswered (still open at the end)', value: unanswered, unit: 'requests' },
    {
      bench: 'soak',
      path: 'server RSS: peak of the 5 s samples',
      value: max(watched.rss.map((r) => r.mb)),
      unit: 'MB',
    },
    { bench: 'soak', path: 'server RSS: last sample', value: watched.rss.at(-1)?.mb ?? NaN, unit: 'MB' },
    { bench: 'soak', path: 'client-side peak of open requests', value: peakOpen, unit: 'requests' },
  );
  return figures;
}

export async function benchSoak(records = 300_000): Promise<Figure[]> {
  const rate = numberFromEnv('CINV_BENCH_SOAK_RATE', 40);
  const seconds = numberFromEnv('CINV_BENCH_SOAK_SECONDS', 120);
  const sql = await benchDatabase(DATABASE);
  let server: RunningServer | undefined;
  try {
    await seedClusters(sql, clusterShape(PODS), 1);
    await seedHistory(sql, records);
    const t = await targets(sql);
    const key = await benchKey(sql, 'adm');
    server = await serveBench(DATABASE, SERVE_ENV);
    const load = openLoop(server.base, {
      rate,
      count: Math.round(rate * seconds),
      headers: { 'x-api-key': key },
      pick: mix(t),
    });
    const watched = watch(server, load.started);
    let peakOpen = 0;
    const peakTimer = setInterval(() => (peakOpen = Math.max(peakOpen, load.inFlight())), 100);
    await load.sent;
    // what is still open gets a minute and a half to be answered; beyond that it counts as unanswered
    await load.stop(90_000);
    clearInterval(peakTimer);
    watched.stop();
    const metrics = await (await fetch(`${server.base}/metrics`)).text();
    const shedLines = metrics.split('\n').filter((line) => line.startsWith('cinv_http_requests_shed_total'));
    console.log(`server's shed counters: ${shedLines.join('; ') || 'none'}`);
    return report(load.samples, watched, peakOpen, rate, seconds);
  } finally {
    await server?.stop();
    await sql.end();
  }
}
