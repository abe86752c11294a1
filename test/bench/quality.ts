/**
 * Data quality at 1 000 000 CIs and on the write path:
 *
 *   npm run bench -- quality [requests]     (default 200 sequential requests per read)
 *
 * Reads, through `cinv serve` over 1 000 000 CIs of ten sources (kept in cinv_bench_quality
 * between runs; the quality worker checks them once when seeded): `GET /api/v1/quality` p95 ≤
 * 100 ms; a page of failing CIs, first and deep by cursor, p95 ≤ 100 ms; a rule's pass rate on the
 * 100 000 deployments (the rule editor's preview) ≤ 1 s.
 *
 * Writes, on the reconcile benchmark's generated cluster (100 000 pods, 143 834 objects; in
 * cinv_bench_quality_collect): the unchanged and the 1 % changed re-collections with the quality
 * triggers off, and on with the list recorded and the worker caught up with what the collection
 * queued, in turn (off, on, off, on, …). Target: on / off ≤ 1.05, mean against mean, for the
 * collection itself (reconcile and list); the ratio with the worker's catch-up counted in is shown
 * beside it (the worker runs after the collection, off its path).
 * The sweep's pass over the CIs the list did not see is timed apart: no collection waits for it.
 */
import type { AppContext } from '../../src/context.js';
import { ensureSource } from '../../src/collection/sources/store.js';
import { foldCiCounts } from '../../src/inventory/configuration-items/counts.js';
import { catchUpQuality, sourceListed, sweepQuality } from '../../src/inventory/quality/service.js';
import { flagUnseen } from '../../src/inventory/quality/upkeep-store.js';
import { assertSnapshot, reconcile } from '../../src/inventory/write-path/reconcile.js';
import type { UniversalRecord } from '../../src/inventory/write-path/records.js';
import type { Sql } from '../../src/platform/db/database.js';
import { loadConfig } from '../../src/platform/config/config.js';
import { createLogger } from '../../src/platform/observability/logger.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { cluster, LARGE_CLUSTER, type Collection } from './cluster.js';
import { benchDatabase, benchKey, seconds, serveBench, type Figure, type RunningServer } from './common.js';
import { SERVE_ENV } from './list.js';

const DATABASE = 'cinv_bench_quality';
const TOTAL = 1_000_000;
const SOURCES = 10;
const MARKER = `quality-v1:${TOTAL}`;

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;
const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

/** What the quality code needs of a server: the database, the clock, the settings and a logger. */
const contextOf = (sql: Sql) =>
  ({ sql, now: () => new Date(), config: loadConfig(), logger: createLogger('warn') }) as unknown as AppContext;

/**
 * Per source 100 000 CIs: 70 000 pods (one in ten without containers, one in five without a
 * team), 10 000 deployments (half with two replicas or more), 10 000 services, 10 000 config maps.
 */
async function seed(sql: Sql): Promise<number> {
  const [marked] = await sql<{ marker: string | null }[]>`
    select obj_description('ci_quality'::regclass, 'pg_class') as marker`;
  if (marked?.marker === MARKER) return 0;
  await sql.unsafe(
    'truncate configuration_items, ci_last_seen, ci_quality, quality_queue, quality_counts, quality_count_deltas, ' +
      'ci_counts, ci_type_counts, ci_count_deltas, ci_versions, ci_undo restart identity cascade',
  );
  for (let s = 0; s < SOURCES; s++) {
    const sourceId = (await ensureSource(sql, DEFAULT_TENANT_ID, `cluster-${s}`, 'kubernetes')).id;
    await sql`
      insert into configuration_items (ci_id, tenant_id, source_id, scope_id, external_id, ci_type, name, namespace, status,
                                       raw_data, type_data, content_hash, created_at, updated_at)
      select md5(${s} || '-' || i)::uuid, ${DEFAULT_TENANT_ID}, ${sourceId}, 'prod', kind || '/ns-' || (i % 400) || '/' || i,
             'k8s.' || kind, kind || '-' || i, 'ns-' || (i % 400), 'active',
             case kind
               when 'pod' then jsonb_build_object(
                 'metadata', jsonb_build_object('name', 'pod-' || i,
                   'labels', case when i % 5 = 0 then '{}'::jsonb else jsonb_build_object('team', 'team-' || (i % 50)) end),
                 'spec', case when i % 10 = 0 then '{}'::jsonb
                              else jsonb_build_object('containers', jsonb_build_array(jsonb_build_object('name', 'app'))) end)
               when 'deployment' then jsonb_build_object(
                 'metadata', jsonb_build_object('name', 'deployment-' || i, 'labels', jsonb_build_object('team', 'team-' || (i % 50))),
                 'spec', jsonb_build_object('replicas', 1 + (i / 10) % 2, 'selector', '{}'::jsonb,
                   'template', jsonb_build_object('spec', jsonb_build_object('containers', jsonb_build_array('{}'::jsonb)))))
               else jsonb_build_object('metadata', jsonb_build_object('name', kind || '-' || i), 'spec', jsonb_build_object('ports', '[]'::jsonb))
             end,
             '{}'::jsonb, decode(md5(i::text), 'hex'), now() - interval '30 days', now()
      from generate_series(0, ${TOTAL / SOURCES - 1}) i,
           lateral (select case when i % 10 < 7 then 'pod' when i % 10 = 7 then 'deployment'
                                when i % 10 = 8 then 'service' else 'configmap' end as kind) k`;
  }
  await sql`insert into ci_last_seen (ci_id, tenant_id, last_seen) select ci_id, tenant_id, now() from configuration_items`;
  await foldCiCounts(sql);
  // the CIs were written after the migration queued a walk of the tenant: the queue alone covers them
  await sql`delete from quality_walks`;
  const started = performance.now();
  const checked = await catchUpQuality(contextOf(sql));
  const took = seconds(started);
  console.log(`  the quality worker checked ${checked} CIs in ${took} s`);
  await sweepQuality(contextOf(sql), new Date());
  await sql`vacuum analyze ci_quality, quality_counts, configuration_items`;
  await sql.unsafe(`comment on table ci_quality is '${MARKER}'`);
  return took;
}

async function reads(requests: number, figures: Figure[]) {
  const sql = await benchDatabase(DATABASE);
  let server: RunningServer | undefined;
  try {
    const seeding = await seed(sql);
    if (seeding > 0)
      figures.push({ bench: 'quality', path: `first check of ${TOTAL} CIs by the worker`, value: seeding, unit: 's' });
    const key = await benchKey(sql);
    server = await serveBench(DATABASE, SERVE_ENV);
    const base = server.base;
    const call = async (path: string, body?: unknown) => {
      const reply = await fetch(base + path, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const answer: any = await reply.json();
      if (reply.status !== 200) throw new Error(`${path}: ${reply.status} ${JSON.stringify(answer)}`);
      return answer;
    };
    const timed = async (
      label: string,
      path: () => string,
      target: number,
      said: (body: any) => string,
      n = requests,
    ) => {
      const ms: number[] = [];
      let text = '';
      for (let i = 0; i < n + 10; i++) {
        const started = performance.now();
        const body = await call(path());
        if (i >= 10) ms.push(performance.now() - started);
        text = said(body);
      }
      const p95 = percentile(ms, 95);
      console.log(
        `  ${label.padEnd(52)} p50 ${percentile(ms, 50).toFixed(1)} ms  p95 ${p95.toFixed(1)} ms  (target ${target}; ${text})`,
      );
      figures.push({ bench: 'quality', path: label, value: Math.round(p95 * 10) / 10, unit: 'ms p95', target });
    };
    await timed(
      'GET /quality, 1M CIs',
      () => '/api/v1/quality',
      100,
      (b) => `${b.cis} CIs, score ${b.score}, ${b.by_owner.length} owners`,
    );
    await timed(
      'GET /quality?ci_type=k8s.pod',
      () => '/api/v1/quality?ci_type=k8s.pod',
      100,
      (b) => `${b.cis} pods`,
    );
    await timed(
      'failing CIs: completeness, first page of 50',
      () => '/api/v1/quality/completeness/items?limit=50',
      100,
      (b) => `${b.items.length} items`,
    );
    let cursor: string | null = null;
    for (let page = 0; page < 200; page++) {
      const body: { next_cursor: string | null } = await call(
        `/api/v1/quality/completeness/items?limit=50${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      cursor = body.next_cursor;
    }
    await timed(
      'failing CIs: completeness, page 201 by cursor',
      () => `/api/v1/quality/completeness/items?limit=50&cursor=${encodeURIComponent(cursor!)}`,
      100,
      (b) => `${b.items.length} items`,
    );
    await timed(
      'failing CIs: completeness of one owner',
      () => '/api/v1/quality/completeness/items?limit=50&owner=team-7',
      100,
      (b) => `${b.items.length} items`,
    );
    const ms: number[] = [];
    let said = '';
    for (let i = 0; i < 12; i++) {
      const started = performance.now();
      const body = await call('/api/v1/quality/rules/preview', {
        applies_to: 'ci_type = k8s.deployment',
        requires: 'raw_data.spec.replicas >= 2',
      });
      if (i >= 2) ms.push(performance.now() - started);
      said = `${body.applies} deployments, ${body.passes} pass`;
    }
    const worst = Math.max(...ms);
    console.log(`  rule pass rate over the deployments: worst of 10 ${worst.toFixed(0)} ms (target 1000; ${said})`);
    figures.push({
      bench: 'quality',
      path: `a rule's pass rate on ${said}`,
      value: Math.round(worst),
      unit: 'ms, worst of 10',
      target: 1000,
    });
  } finally {
    await server?.stop();
    await sql.end();
  }
}

const TRIGGERS: [string, string[]][] = [
  ['configuration_items', ['ci_quality_queue_insert', 'ci_quality_queue_update', 'ci_quality_queue_delete']],
  ['relationships', ['relationships_quality_insert', 'relationships_quality_delete']],
  ['pending_relationships', ['pending_relationships_quality_insert', 'pending_relationships_quality_delete']],
];

async function qualityTriggers(sql: Sql, on: boolean) {
  for (const [table, names] of TRIGGERS)
    for (const name of names) await sql.unsafe(`alter table ${table} ${on ? 'enable' : 'disable'} trigger ${name}`);
}

async function collections(figures: Figure[]) {
  const sql = await benchDatabase('cinv_bench_quality_collect');
  const app = contextOf(sql);
  try {
    await sql.unsafe(
      'truncate outbox, relationships, relationship_history, pending_relationships, change_records, change_stats_queue, change_feed, ' +
        'ci_last_seen, configuration_items, ci_versions, ci_undo, ci_counts, ci_type_counts, ci_count_deltas, ci_quality, quality_queue, ' +
        'quality_counts, quality_count_deltas, quality_source_lists restart identity cascade',
    );
    const sourceId = (await ensureSource(sql, DEFAULT_TENANT_ID, 'bench-cluster', 'kubernetes')).id;
    const run = async (at: Collection, quality: boolean) => {
      const document: unknown = { items: [...cluster(LARGE_CLUSTER, at)] };
      await qualityTriggers(sql, quality);
      const started = performance.now();
      const listedAt = new Date();
      assertSnapshot(document);
      const records = (document as { items: UniversalRecord[] }).items;
      const result = await reconcile(
        sql,
        { tenantId: DEFAULT_TENANT_ID, sourceId, scopeId: 'prod', mode: 'snapshot', records },
        { lanes: true },
      );
      const written = seconds(started);
      let worker = 0;
      let list = 0;
      if (quality) {
        const listing = performance.now();
        await sourceListed(app, DEFAULT_TENANT_ID, sourceId, listedAt);
        list = seconds(listing);
        const caught = performance.now();
        await catchUpQuality(app);
        worker = seconds(caught);
      }
      const total = seconds(started);
      // the sweep's pass over what the list did not see, off the collection: timed apart
      const sweeping = performance.now();
      if (quality) await flagUnseen(sql);
      return { seconds: total, written, list, worker, sweep: seconds(sweeping), result };
    };
    await run({ collection: 0, generation: 0 }, true);
    await catchUpQuality(app);
    await sql`vacuum analyze configuration_items, ci_quality`;
    const pairs = async (label: string, at: (pair: number, on: boolean) => Collection) => {
      const offs: number[] = [];
      const ons: Awaited<ReturnType<typeof run>>[] = [];
      for (let pair = 0; pair < 4; pair++) {
        const off = await run(at(pair, false), false);
        const on = await run(at(pair, true), true);
        offs.push(off.seconds);
        ons.push(on);
        console.log(
          `  ${label}: quality off ${off.seconds} s, on ${on.seconds} s (the reconcile ${on.written} s against ${off.written} s, ` +
            `the list ${on.list} s, the worker ${on.worker} s; then the sweep's unseen pass ${on.sweep} s; ${on.result.updated} updated)`,
        );
      }
      const ratio = (values: number[]) => Math.round((100 * mean(values)) / mean(offs)) / 100;
      // the collection itself (what a source's run waits for), and with the worker's catch-up after it
      const collection = ons.map((on) => Math.round((on.written + on.list) * 100) / 100);
      figures.push({
        bench: 'quality',
        path: `${label}, quality on / off (${offs.join(' s, ')} s → ${collection.join(' s, ')} s, interleaved)`,
        value: ratio(collection),
        unit: 'ratio',
        target: 1.05,
      });
      figures.push({
        bench: 'quality',
        path: `${label}, with the worker's catch-up after it (→ ${ons.map((on) => on.seconds).join(' s, ')} s)`,
        value: ratio(ons.map((on) => on.seconds)),
        unit: 'ratio',
      });
    };
    await pairs('unchanged re-collection', () => ({ collection: 0, generation: 0 }));
    await pairs('1 % changed', (pair, on) => ({
      collection: 1,
      generation: 1 + 2 * pair + (on ? 1 : 0),
      changeEvery: 100,
    }));
  } finally {
    await qualityTriggers(sql, true).catch(() => undefined);
    await sql.end();
  }
}

export async function benchQuality(requests = 200): Promise<Figure[]> {
  const figures: Figure[] = [];
  await collections(figures);
  await reads(requests, figures);
  return figures;
}
