/**
 * Readable changes at 5 000 000 change records:
 *
 *   npm run bench -- history [N]      (default 5 000 000 records, kept in cinv_bench_history)
 *
 * - A folded page of `GET /api/v1/changes` against the unfolded one, p95 of interleaved requests
 *   (first page, a deep page, one CI type): target folded / unfolded ≤ 1.5.
 * - A deployment's rolled-up, folded timeline over a week (200 pods at a time, a rollout a day,
 *   restarts every hour, collected through reconcile so relationships and their history are
 *   real): p95 ≤ 200 ms.
 * - Re-applying the rules to a day of history (about 167 000 records) ≤ 30 s, while a writer goes
 *   on writing records: its p95 beside the same writer alone.
 * - On the reconcile benchmark's cluster (143 834 objects, cinv_bench_history_collect), the 1 %
 *   changed re-collection: the share of it spent classifying, folding and applying rules
 *   (cinv_change_shaping_seconds_total), without rules and with three, interleaved: target
 *   total / (total − shaping) ≤ 1.05.
 *
 * The history is generated deterministically with the shipped kinds, fingerprints and folds of
 * the write path (kinds.ts; the folds computed as the writing statement decides them, in order), 2 000 pods crash
 * looping so that repeats fold, and loaded in bulk with the indexes rebuilt after.
 */
import type { AppContext } from '../../src/context.js';
import { ensureSource } from '../../src/collection/sources/store.js';
import { catchUpApplications } from '../../src/history/change-rules/service.js';
import { installChangeRules } from '../../src/history/change-rules/service.js';
import type { FieldChange } from '../../src/history/records/diff.js';
import { documentTokens, toTsvectorText } from '../../src/history/records/document.js';
import { fingerprintOf, shapeOf } from '../../src/history/records/kinds.js';
import { refreshStatsAggregate } from '../../src/history/records/stats-store.js';
import { recordChanges, type NewChangeRecord } from '../../src/history/records/writer.js';
import { reconcile } from '../../src/inventory/write-path/reconcile.js';
import type { UniversalRecord } from '../../src/inventory/write-path/records.js';
import { loadConfig } from '../../src/platform/config/config.js';
import type { Sql } from '../../src/platform/db/database.js';
import { addMonths, keepAllPartitions, monthOf } from '../../src/platform/db/partitions.js';
import { createLogger } from '../../src/platform/observability/logger.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { random } from '../support/scenario.js';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { packagePath } from '../../src/platform/paths.js';
import { benchDatabase, benchKey, seconds, serveBench, settlePartitions, type Figure } from './common.js';

const DATABASE = 'cinv_bench_history';
const ROOT = packagePath();
const NOW = new Date('2026-11-20T12:00:00Z');
const DAY = 86_400_000;
const HOUR = 3_600_000;
const DAYS = 30;
const CIS = 200_000;
const CRASHERS = 2_000;
const WINDOW_MS = 3_600_000;
const GENERATOR = 'history-v1';

const ciUuid = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, '0')}`;
const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

const contextOf = (sql: Sql) =>
  ({ sql, now: () => new Date(), config: loadConfig(), logger: createLogger('warn') }) as unknown as AppContext;

interface Generated extends NewChangeRecord {
  kind: string;
  severity: string;
  rolls_up: boolean;
  fingerprint: string;
  fold_at: Date | null;
}

/** Record `i` of the history: restarts of crash-looping pods (folding), rollouts, scaling, readiness, births and removals. */
function recordOf(i: number, rand: () => number, total: number): NewChangeRecord {
  const at = new Date(NOW.getTime() - DAYS * DAY + Math.floor((i / total) * DAYS * DAY));
  const roll = rand();
  const crasher = roll < 0.4;
  const n = crasher ? Math.floor(rand() * CRASHERS) : CRASHERS + Math.floor(rand() * (CIS - CRASHERS));
  const base = {
    tenant_id: DEFAULT_TENANT_ID,
    ci_id: ciUuid(n),
    source_id: '1',
    scope_id: `cluster-${n % 7}`,
    ci_name: `app-${n % 4000}-${n.toString(16)}`,
    ci_namespace: `ns-${n % 50}`,
    ci_type: n % 10 === 0 ? 'k8s.deployment' : 'k8s.pod',
    changed_at: at,
  };
  if (crasher) {
    const restarts = Math.floor(rand() * 50);
    const status = (count: number) => [{ name: 'app', ready: false, restartCount: count }];
    return {
      ...base,
      ci_type: 'k8s.pod',
      change_type: 'UPDATED',
      changes: [
        { field: 'raw_data.status.containerStatuses', old_value: status(restarts), new_value: status(restarts + 1) },
      ],
    };
  }
  if (roll < 0.47)
    return {
      ...base,
      change_type: 'CREATED',
      changes: [
        { field: 'name', old_value: null, new_value: base.ci_name },
        { field: 'status', old_value: null, new_value: 'active' },
      ],
    };
  if (roll < 0.5)
    return {
      ...base,
      change_type: 'DELETED',
      changes: [{ field: 'status', old_value: 'active', new_value: 'archived' }],
    };
  const minor = Math.floor(rand() * 40);
  const changes: FieldChange[] =
    roll < 0.75
      ? [
          {
            field: 'raw_data.spec.template.spec.containers',
            old_value: [{ name: 'app', image: `shop:1.${minor}` }],
            new_value: [{ name: 'app', image: `shop:1.${minor + 1}` }],
          },
        ]
      : roll < 0.85
        ? [{ field: 'raw_data.spec.replicas', old_value: (minor % 5) + 1, new_value: (minor % 5) + 2 }]
        : [{ field: 'raw_data.status.readyReplicas', old_value: (minor % 5) + 1, new_value: minor % 5 }];
  return { ...base, change_type: 'UPDATED', changes };
}

/** The write path's shaping of a generated record, with its fold decided as the writing statement decides it (records in time order). */
function shaper() {
  const heads = new Map<string, Map<string, number>>();
  const folds = new Map<string, { ci: string; fp: string; at: Date; repeats: number; last: Date }>();
  const shape = (record: NewChangeRecord): Generated => {
    const fingerprint = fingerprintOf(record);
    const shaped = { ...record, ...shapeOf(record), fingerprint, fold_at: null as Date | null };
    if (record.change_type !== 'UPDATED') {
      heads.delete(record.ci_id);
      return shaped;
    }
    const key = `${record.ci_id} ${fingerprint}`;
    const ofCi = heads.get(record.ci_id) ?? new Map<string, number>();
    heads.set(record.ci_id, ofCi);
    const head = ofCi.get(fingerprint);
    const t = record.changed_at.getTime();
    if (head !== undefined && t - head <= WINDOW_MS) {
      shaped.fold_at = new Date(head);
      const fold = folds.get(`${key} ${head}`) ?? {
        ci: record.ci_id,
        fp: fingerprint,
        at: new Date(head),
        repeats: 0,
        last: record.changed_at,
      };
      fold.repeats += 1;
      fold.last = record.changed_at;
      folds.set(`${key} ${head}`, fold);
    } else ofCi.set(fingerprint, t);
    return shaped;
  };
  return { shape, folds };
}

async function load(sql: Sql, total: number): Promise<void> {
  const marker = await sql`select 1 from pg_description where description = ${`${GENERATOR}:${total}`}`;
  if (marker.length > 0) return;
  console.log(`generating ${total} change records (kept for later runs) ...`);
  await sql.unsafe(
    'truncate change_records, change_stats_queue, change_stats_buckets, change_stats_days, change_stats_ci_last, change_stats_affected, ' +
      'change_stats_kinds, change_folds, change_fold_heads, change_rules, change_rule_runs, outbox, configuration_items, relationships, ' +
      'relationship_history, ci_tombstones, ci_undo, ci_versions, ci_last_seen restart identity cascade',
  );
  await sql`update change_stats_state set refreshed_at = '-infinity'`;
  for (let month = monthOf(new Date(NOW.getTime() - (DAYS + 1) * DAY)); month <= NOW; month = addMonths(month, 1))
    await keepAllPartitions(sql, month);
  const indexes = await sql<{ indexname: string; indexdef: string }[]>`
    select indexname, indexdef from pg_indexes where tablename = 'change_records' and indexname <> 'change_records_pkey'`;
  for (const index of indexes) await sql.unsafe(`drop index ${index.indexname}`);
  const rand = random(57);
  const { shape, folds } = shaper();
  const started = performance.now();
  const BATCH = 20_000;
  for (let from = 0; from < total; from += BATCH) {
    const rows = Array.from({ length: Math.min(BATCH, total - from) }, (_, k) =>
      shape(recordOf(from + k, rand, total)),
    );
    await sql`
      insert into change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at,
                                  changes, changed_fields, search_vector, kind, severity, rolls_up, fingerprint, fold_at)
      select r.tenant_id, r.ci_id, r.source_id, r.scope_id, r.ci_name, r.ci_namespace, r.ci_type, r.change_type, r.changed_at, r.changes,
             array(select distinct c ->> 'field' from jsonb_array_elements(r.changes) c order by 1), r.doc::tsvector,
             r.kind, r.severity, r.rolls_up, r.fingerprint, r.fold_at
      from jsonb_to_recordset(${sql.json(rows.map((r) => ({ ...r, doc: toTsvectorText(documentTokens(r)) })) as never)}::jsonb) as r(
        tenant_id uuid, ci_id uuid, source_id bigint, scope_id text, ci_name text, ci_namespace text, ci_type text, change_type text,
        changed_at timestamptz, changes jsonb, doc text, kind text, severity text, rolls_up boolean, fingerprint text, fold_at timestamptz)`;
    if ((from / BATCH) % 25 === 0) console.log(`  ${from + rows.length} records, ${seconds(started)} s`);
  }
  const foldRows = [...folds.values()];
  for (let from = 0; from < foldRows.length; from += BATCH)
    await sql`
      insert into change_folds (tenant_id, ci_id, fingerprint, fold_at, repeats, last_at)
      select ${DEFAULT_TENANT_ID}, f.ci, f.fp, f.at, f.repeats, f.last
      from jsonb_to_recordset(${sql.json(foldRows.slice(from, from + BATCH) as never)}::jsonb)
        as f(ci uuid, fp text, at timestamptz, repeats int, last timestamptz)`;
  console.log(`  loaded in ${seconds(started)} s (${foldRows.length} folds); rebuilding ${indexes.length} indexes ...`);
  await sql.unsafe("set maintenance_work_mem = '512MB'");
  for (const index of indexes) await sql.unsafe(index.indexdef.replace(' ON ONLY ', ' ON '));
  await sql`insert into change_stats_queue (change_id, changed_at) select id, changed_at from change_records`;
  await sql.unsafe('vacuum analyze change_records');
  await refreshStatsAggregate(sql, NOW, 50_000);
  await sql.unsafe(`comment on table change_records is '${GENERATOR}:${total}'`);
}

const PODS = 200;

/** A deployment's week through reconcile: a rollout a day (a new replica set, every pod replaced), 20 restarts an hour. */
async function deploymentWeek(sql: Sql): Promise<string> {
  const [done] = await sql<{ ci_id: string }[]>`
    select ci_id from configuration_items where external_id = 'deployment/shop/checkout'`;
  if (done) return done.ci_id;
  const sourceId = (await ensureSource(sql, DEFAULT_TENANT_ID, 'bench-checkout', 'kubernetes')).id;
  const start = NOW.getTime() - 7 * DAY;
  const restarts = new Map<string, number>();
  let generation = 0;
  const podsOf = (g: number) => Array.from({ length: PODS }, (_, i) => `checkout-${g}-${i}`);
  const pod = (name: string): UniversalRecord => ({
    external_id: `pod/shop/${name}`,
    ci_type: 'k8s.pod',
    name,
    namespace: 'shop',
    raw_data: {
      metadata: { name },
      status: { containerStatuses: [{ name: 'app', ready: true, restartCount: restarts.get(name) ?? 0 }] },
    },
    type_data: {},
  });
  const owners = (g: number): UniversalRecord[] => [
    {
      external_id: 'deployment/shop/checkout',
      ci_type: 'k8s.deployment',
      name: 'checkout',
      namespace: 'shop',
      raw_data: {
        metadata: { name: 'checkout' },
        spec: { replicas: PODS, template: { spec: { containers: [{ name: 'app', image: `shop:2.${g}` }] } } },
      },
      type_data: {},
      relationships: [{ type: 'manages', target_external_id: `replicaset/shop/checkout-${g}` }],
    },
    {
      external_id: `replicaset/shop/checkout-${g}`,
      ci_type: 'k8s.replicaset',
      name: `checkout-${g}`,
      namespace: 'shop',
      raw_data: { metadata: { name: `checkout-${g}` }, spec: { replicas: PODS } },
      type_data: {},
      relationships: podsOf(g).map((name) => ({ type: 'manages', target_external_id: `pod/shop/${name}` })),
    },
  ];
  const collect = (at: number, records: UniversalRecord[], deletions: string[] = []) =>
    reconcile(
      sql,
      { tenantId: DEFAULT_TENANT_ID, sourceId, scopeId: 'east', mode: 'delta', records, deletions },
      { now: new Date(at) },
    );
  await collect(start, [...owners(0), ...podsOf(0).map(pod)]);
  const rand = random(200);
  for (let hour = 1; hour < 7 * 24; hour++) {
    const at = start + hour * HOUR;
    if (hour % 24 === 9) {
      const old = podsOf(generation);
      generation += 1;
      await collect(
        at,
        [...owners(generation), ...podsOf(generation).map(pod)],
        [...old.map((name) => `pod/shop/${name}`), `replicaset/shop/checkout-${generation - 1}`],
      );
      continue;
    }
    const names = podsOf(generation);
    const hit = Array.from({ length: 20 }, () => names[Math.floor(rand() * names.length)]!);
    for (const name of hit) restarts.set(name, (restarts.get(name) ?? 0) + 1);
    await collect(at, [...new Set(hit)].map(pod));
  }
  const [row] = await sql<
    { ci_id: string }[]
  >`select ci_id from configuration_items where external_id = 'deployment/shop/checkout'`;
  return row!.ci_id;
}

async function timed(base: string, key: string, path: string) {
  const started = performance.now();
  const response = await fetch(base + path, { headers: { 'x-api-key': key } });
  const body = (await response.json()) as { items?: unknown[] };
  if (response.status !== 200) throw new Error(`${path}: ${response.status} ${JSON.stringify(body)}`);
  return { ms: performance.now() - started, items: body.items?.length ?? 0 };
}

async function reads(sql: Sql, figures: Figure[], deployment: string) {
  const server = await serveBench(DATABASE, { CINV_CHANGE_RULES_POLL_INTERVAL: '1h' });
  const key = await benchKey(sql, 'adm');
  try {
    const pages: [string, string][] = [
      ['first page', 'limit=100'],
      ['page at offset 2 000', 'limit=100&offset=2000'],
      ['pods, first page', 'limit=100&filter=ci_type:eq:k8s.pod'],
    ];
    for (const [label, query] of pages) {
      const plain: number[] = [];
      const folded: number[] = [];
      for (let i = 0; i < 110; i++) {
        const a = await timed(server.base, key, `/api/v1/changes?${query}`);
        const b = await timed(server.base, key, `/api/v1/changes?${query}&fold=true`);
        if (i >= 10) {
          plain.push(a.ms);
          folded.push(b.ms);
        }
      }
      const ratio = Math.round((100 * percentile(folded, 95)) / percentile(plain, 95)) / 100;
      console.log(
        `  /changes ${label}: p95 ${percentile(plain, 95).toFixed(1)} ms, folded ${percentile(folded, 95).toFixed(1)} ms`,
      );
      figures.push({
        bench: 'history',
        path: `/changes ${label}, folded / unfolded p95 (${percentile(folded, 95).toFixed(1)} / ${percentile(plain, 95).toFixed(1)} ms)`,
        value: ratio,
        unit: 'ratio',
        target: 1.5,
      });
    }
    const week = `start_date=${new Date(NOW.getTime() - 7 * DAY).toISOString()}&end_date=${NOW.toISOString()}`;
    for (const [label, query] of [
      ['rolled-up, folded timeline of a deployment (200 pods, a week)', `rollup=true&fold=true&limit=100&${week}`],
      ['rolled-up exact timeline, first 100', `rollup=true&limit=100&${week}`],
    ] as const) {
      const ms: number[] = [];
      let items = 0;
      for (let i = 0; i < 110; i++) {
        const reply = await timed(server.base, key, `/api/v1/ci-changes/${deployment}?${query}`);
        if (i >= 10) ms.push(reply.ms);
        items = reply.items;
      }
      console.log(`  ${label}: p95 ${percentile(ms, 95).toFixed(1)} ms (${items} items)`);
      figures.push({
        bench: 'history',
        path: label,
        value: Math.round(percentile(ms, 95) * 10) / 10,
        unit: 'ms p95',
        target: label.includes('folded') ? 200 : undefined,
      });
    }
  } finally {
    await server.stop();
  }
}

/** Re-applies the rules to one day while a writer writes 100 records every 50 ms; its p95 beside the writer alone. */
async function reapply(sql: Sql, figures: Figure[]) {
  installChangeRules();
  const app = contextOf(sql);
  await sql`delete from change_rules`;
  await sql`
    insert into change_rules (tenant_id, name, match, action, kind, severity, position)
    values (${DEFAULT_TENANT_ID}, 'crash loops', 'change.kind = restart and namespace starts with ns-1', 'classify', 'crash', 'high', 1),
           (${DEFAULT_TENANT_ID}, 'quiet scaling', 'change.kind = scale', 'ignore', null, null, 2)`;
  let writing = true;
  let n = 0;
  const writer = async (latencies: number[]) => {
    while (writing) {
      const started = performance.now();
      await sql.begin((tx) =>
        recordChanges(
          tx,
          Array.from({ length: 100 }, () => {
            n += 1;
            return {
              tenant_id: DEFAULT_TENANT_ID,
              ci_id: ciUuid(CIS + (n % 1000)),
              source_id: '1',
              scope_id: 'cluster-0',
              ci_name: `writer-${n % 1000}`,
              ci_namespace: 'ns-0',
              ci_type: 'k8s.pod',
              change_type: 'UPDATED' as const,
              changed_at: new Date(),
              changes: [{ field: 'raw_data.metadata.labels.n', old_value: n - 1, new_value: n }],
            };
          }),
        ),
      );
      latencies.push(performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const alone: number[] = [];
  const alongside: number[] = [];
  const quiet = writer(alone);
  await new Promise((resolve) => setTimeout(resolve, 10_000));
  writing = false;
  await quiet;
  const day = {
    from: new Date(NOW.getTime() - 2 * DAY).toISOString(),
    until: new Date(NOW.getTime() - DAY).toISOString(),
  };
  const [{ records }] = (await sql`
    select count(*)::int as records from change_records where tenant_id = ${DEFAULT_TENANT_ID}
      and changed_at >= ${day.from}::timestamptz and changed_at < ${day.until}::timestamptz`) as unknown as [
    { records: number },
  ];
  await sql`delete from change_rule_runs`;
  await sql`insert into change_rule_runs (tenant_id, from_at, until_at, requested_by) values (${DEFAULT_TENANT_ID}, ${day.from}, ${day.until}, 'bench')`;
  writing = true;
  const busy = writer(alongside);
  const started = performance.now();
  await catchUpApplications(app);
  const took = seconds(started);
  writing = false;
  await busy;
  const [run] = await sql<{ changed: string }[]>`select changed::text from change_rule_runs`;
  console.log(
    `  re-applied the rules to ${records} records in ${took} s (${run!.changed} changed); a writer's p95 ` +
      `${percentile(alongside, 95).toFixed(1)} ms beside it, ${percentile(alone, 95).toFixed(1)} ms alone`,
  );
  figures.push({
    bench: 'history',
    path: `re-applying the rules to a day (${records} records, ${run!.changed} changed)`,
    value: took,
    unit: 's',
    target: 30,
  });
  figures.push({
    bench: 'history',
    path: `a writer of 100 records per transaction beside it / alone (p95 ${percentile(alongside, 95).toFixed(1)} / ${percentile(alone, 95).toFixed(1)} ms)`,
    value: Math.round((100 * percentile(alongside, 95)) / percentile(alone, 95)) / 100,
    unit: 'ratio',
  });
  await sql`delete from change_rules`;
}

/** The commit before classification: the baseline of the write path's cost. */
const BASELINE = process.env.CINV_BENCH_BASELINE_REV ?? 'd7b18ee';

/** A worktree of the baseline commit beside this checkout, sharing its node_modules. */
function baselineTree(): string {
  const tree = path.join(tmpdir(), `cinv-baseline-${BASELINE}`);
  if (!existsSync(path.join(tree, 'package.json'))) {
    execFileSync('git', ['worktree', 'add', '--detach', '--force', tree, BASELINE], { cwd: ROOT, stdio: 'ignore' });
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(tree, 'node_modules'));
  }
  return tree;
}

/** A collector process of one tree, answering each generation with the seconds its re-collection took. */
function collector(tree: string, database: string) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'test/bench/history-collect.ts'), tree, database],
    {
      cwd: ROOT,
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async () => JSON.parse(String((await lines.next()).value)) as { seconds: number; updated: number };
  return {
    ready: next(),
    async run(generation: number) {
      child.stdin!.write(`${generation}\n`);
      return next();
    },
    stop() {
      child.stdin!.end();
    },
  };
}

/**
 * The 1 % changed re-collection by this write path and by the baseline's, in turn, each on a
 * database of its own after a first collection: what classification and folding add, with no
 * rules (a tenant's rules add one statement per batch, counted by cinv_change_shaping_seconds_total).
 */
async function collections(figures: Figure[]) {
  const current = collector(ROOT, 'cinv_bench_history_collect');
  const baseline = collector(baselineTree(), 'cinv_bench_history_baseline');
  try {
    await Promise.all([current.ready, baseline.ready]);
    const ours: number[] = [];
    const theirs: number[] = [];
    // six pairs, the order within a pair alternating: what one side's run leaves behind (autovacuum) falls on both
    for (let pair = 0; pair < 6; pair++) {
      const generation = 1 + pair;
      const first = pair % 2 === 0 ? baseline : current;
      const second = first === baseline ? current : baseline;
      const a = await first.run(generation);
      const b = await second.run(generation);
      const [before, after] = first === baseline ? [a, b] : [b, a];
      theirs.push(before.seconds);
      ours.push(after.seconds);
      console.log(
        `  1 % changed (${after.updated} updated): baseline ${before.seconds.toFixed(2)} s, classified and folded ${after.seconds.toFixed(2)} s`,
      );
    }
    const median = (values: number[]) => percentile(values, 50);
    figures.push({
      bench: 'history',
      path: `1 % changed re-collection, classified and folded / the commit before, medians (${median(theirs).toFixed(2)} s → ${median(ours).toFixed(2)} s)`,
      value: Math.round((100 * median(ours)) / median(theirs)) / 100,
      unit: 'ratio',
      target: 1.05,
    });
    figures.push({
      bench: 'history',
      path: `the same, means (${theirs.map((v) => v.toFixed(2)).join(' s, ')} s → ${ours.map((v) => v.toFixed(2)).join(' s, ')} s, interleaved)`,
      value: Math.round((100 * mean(ours)) / mean(theirs)) / 100,
      unit: 'ratio',
      target: 1.05,
    });
  } finally {
    current.stop();
    baseline.stop();
  }
}

export async function benchHistory(total = 5_000_000): Promise<Figure[]> {
  const figures: Figure[] = [];
  const sql = await benchDatabase(DATABASE, 8);
  try {
    await load(sql, total);
    await settlePartitions(sql);
    const deployment = await deploymentWeek(sql);
    await sql.unsafe('vacuum analyze change_records, relationships, relationship_history');
    await reads(sql, figures, deployment);
    await reapply(sql, figures);
  } finally {
    await sql.end();
  }
  await collections(figures);
  return figures;
}
