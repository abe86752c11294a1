/**
 * The inventory as it was: reads of the past against a month of history, through `cinv serve`.
 *
 *   npm run bench -- as-of [CIs]        (default 1 000 000 CIs, five change records each)
 *
 * The history is generated in SQL into cinv_bench_as_of (kept between runs): the CIs created over
 * the first day of 35, then five waves of edits, each over a week (every write through the trigger
 * that keeps the way back, each with its change record), one other CI edited 5 000 times across
 * the month, and 1% of the CIs removed for good (tombstones) in the last week.
 *
 * Targets (p95 of sequential requests): the 5 000-change CI as of a week back ≤ 50 ms; a list page
 * as of a day back, default sort and with one ci_type filter, ≤ 300 ms; the inventory diff between
 * two moments a day apart ≤ 1 s for its counts, each further page ≤ 300 ms. Storage of the versions
 * and tombstones beside the change records' ≤ 30 %; the way back itself is reported too.
 */
import type { Sql } from '../../src/platform/db/database.js';
import { backfillSearchDocuments } from '../../src/history/search/backfill.js';
import { ensureSource } from '../../src/collection/sources/store.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import { benchDatabase, benchKey, serveBench, settlePartitions, type Figure } from './common.js';

const GENERATOR = 'as-of-v1';
const DAY = 86_400_000;
const TYPES = [
  'k8s.pod',
  'k8s.pod',
  'k8s.pod',
  'k8s.pod',
  'k8s.pod',
  'k8s.pod',
  'k8s.pod',
  'k8s.deployment',
  'k8s.service',
  'k8s.replicaset',
];
const HOT_CHANGES = 5000;

async function markerOf(sql: Sql): Promise<string | null> {
  const [row] = await sql<
    { marker: string | null }[]
  >`select obj_description('ci_undo'::regclass, 'pg_class') as marker`;
  return row?.marker ?? null;
}

/** The month of history; `base` is its first moment. */
async function seed(sql: Sql, cis: number): Promise<Date> {
  const marker = `${GENERATOR}:${cis}`;
  const found = await markerOf(sql);
  if (found?.startsWith(`${marker}@`)) return new Date(found.slice(marker.length + 1));
  const base = new Date(Math.floor(Date.now() / DAY) * DAY - 35 * DAY);
  console.log(`generating ${cis} CIs and ${5 * cis} change records over 35 days (kept for later runs) ...`);
  const started = performance.now();
  const step = (what: string) => console.log(`  ${what}: ${((performance.now() - started) / 1000).toFixed(0)} s`);
  await sql.unsafe(
    'truncate outbox, relationships, pending_relationships, change_records, change_stats_queue, ci_last_seen, configuration_items, ' +
      'ci_counts, ci_type_counts, ci_count_deltas, ci_undo, ci_tombstones, ci_versions, relationship_history restart identity cascade',
  );
  await sql`update time_machine set exact_since = '-infinity'`;
  const source = await ensureSource(sql, DEFAULT_TENANT_ID, 'bench-as-of', 'kubernetes');
  const chunk = 100_000;
  for (let from = 1; from <= cis; from += chunk) {
    const to = Math.min(cis, from + chunk - 1);
    await sql`
      insert into configuration_items (ci_id, tenant_id, source_id, scope_id, external_id, ci_type, name, namespace, status,
                                       raw_data, type_data, content_hash, created_at, updated_at)
      select md5('ci' || g)::uuid, ${DEFAULT_TENANT_ID}, ${source.id}, 'cluster-' || (g % 7), 'w/' || g, (${TYPES}::text[])[1 + g % 10],
             'w-' || g, 'ns-' || (g % 200), 'active',
             jsonb_build_object(
               'metadata', jsonb_build_object('name', 'w-' || g, 'namespace', 'ns-' || (g % 200), 'resourceVersion', '1',
                 'labels', jsonb_build_object('app', 'app-' || (g % 500), 'tier', (array['web', 'db', 'cache'])[1 + g % 3], 'app.kubernetes.io/part-of', 'shop')),
               'spec', jsonb_build_object('replicas', 1, 'nodeName', 'node-' || (g % 300),
                 'containers', jsonb_build_array(jsonb_build_object('name', 'app', 'image', 'registry.local/app-' || (g % 500) || ':1.0',
                   'resources', jsonb_build_object('requests', jsonb_build_object('cpu', '100m', 'memory', '128Mi'))))),
               'status', jsonb_build_object('phase', 'Running', 'podIP', '10.' || (g % 250) || '.' || (g % 199) || '.' || (g % 97),
                 'conditions', jsonb_build_array(jsonb_build_object('type', 'Ready', 'status', 'True')))),
             jsonb_build_object('phase', 'Running', 'restarts', 0), '\\x00'::bytea,
             ${base}::timestamptz + (g % 86400) * interval '1 second', ${base}::timestamptz + (g % 86400) * interval '1 second'
      from generate_series(${from}::int, ${to}::int) g`;
    await sql`insert into ci_last_seen (ci_id, tenant_id, last_seen) select md5('ci' || g)::uuid, ${DEFAULT_TENANT_ID}, now() from generate_series(${from}::int, ${to}::int) g`;
  }
  step('CIs');
  // the hot CI: 5 000 edits over the month
  await sql`
    do $$
    declare i int;
    begin
      for i in 1..${sql.unsafe(String(HOT_CHANGES))} loop
        update configuration_items
        set raw_data = jsonb_set(jsonb_set(raw_data, '{metadata,resourceVersion}', to_jsonb((100 + i)::text)), '{status,restartCount}', to_jsonb(i)),
            updated_at = ${sql.unsafe(`'${base.toISOString()}'`)}::timestamptz + interval '1 day' + i * interval '500 seconds' + interval '1 millisecond'
        where ci_id = md5('ci1')::uuid;
      end loop;
    end $$`;
  step('the hot CI');
  // five waves of edits, one a week: every CI edited once in each, at a moment spread over the week
  for (let wave = 0; wave < 5; wave++) {
    for (let from = 1; from <= cis; from += chunk) {
      const to = Math.min(cis, from + chunk - 1);
      await sql`
        with edited as (
          update configuration_items c
          set raw_data = jsonb_set(jsonb_set(jsonb_set(c.raw_data, '{metadata,resourceVersion}', to_jsonb((${wave} + 2)::text)),
                                             '{spec,replicas}', to_jsonb(1 + (g.n + ${wave}) % 4)),
                                   '{status,phase}', to_jsonb((array['Running', 'Pending', 'Running', 'Succeeded'])[1 + (g.n * 7 + ${wave}) % 4])),
              updated_at = ${base}::timestamptz + interval '1 day' + ${wave} * interval '6 days 19 hours' + ((g.n::bigint * 7919) % 587000) * interval '1 second'
          from generate_series(${from}::int, ${to}::int) as g(n)
          where c.ci_id = md5('ci' || g.n)::uuid and g.n <> 1
          returning c.ci_id, c.source_id, c.scope_id, c.name, c.namespace, c.ci_type, c.updated_at, g.n
        )
        insert into change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields)
        select ${DEFAULT_TENANT_ID}, ci_id, source_id, scope_id, name, namespace, ci_type, 'UPDATED', updated_at,
               jsonb_build_array(
                 jsonb_build_object('field', 'raw_data.spec.replicas', 'old_value', 1 + (n + ${wave} + 3) % 4, 'new_value', 1 + (n + ${wave}) % 4),
                 jsonb_build_object('field', 'raw_data.status.phase', 'old_value', 'Running', 'new_value', 'Pending')),
               array['raw_data.spec.replicas', 'raw_data.status.phase']
        from edited`;
    }
    step(`wave ${wave + 1} of 5`);
  }
  // 1% removed for good in the last week, as the archive retention removes them
  await sql`
    with gone as (
      delete from configuration_items c using generate_series(1, ${cis}::int, 100) g(n)
      where c.ci_id = md5('ci' || g.n)::uuid and g.n > 1
      returning c.*)
    insert into ci_tombstones (ci_id, tenant_id, source_id, scope_id, external_id, ci_type, name, namespace, status, status_updated_at,
                               raw_data, type_data, created_at, updated_at, removed_at)
    select ci_id, tenant_id, source_id, scope_id, external_id, ci_type, name, namespace, status, status_updated_at,
           raw_data, type_data, created_at, updated_at, greatest(updated_at, ${base}::timestamptz + interval '30 days') + interval '1 hour'
    from gone`;
  // the server fills records without a search document at start: done here, so that it does nothing but answer while measured
  await backfillSearchDocuments(sql, 5000);
  step('search documents');
  await sql`vacuum analyze configuration_items`;
  await sql`vacuum analyze ci_undo`;
  await sql`vacuum analyze ci_tombstones`;
  await sql`vacuum analyze change_records`;
  await sql`vacuum analyze ci_last_seen`;
  await sql`vacuum analyze ci_versions`;
  step('tombstones and statistics');
  await sql.unsafe(`comment on table ci_undo is '${marker}@${base.toISOString()}'`);
  return base;
}

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))]!;

export async function benchAsOf(size = 1_000_000): Promise<Figure[]> {
  const sql = await benchDatabase('cinv_bench_as_of');
  const figures: Figure[] = [];
  try {
    const base = await seed(sql, size);
    await settlePartitions(sql);
    const end = new Date(base.getTime() + 35 * DAY);
    const key = await benchKey(sql, 'ro');
    const server = await serveBench('cinv_bench_as_of');
    try {
      const timed = async (path: string, runs: number): Promise<{ p50: number; p95: number; body: any }> => {
        const ms: number[] = [];
        let body: any;
        for (let i = 0; i < runs + 2; i++) {
          const started = performance.now();
          const reply = await fetch(server.base + path, { headers: { 'x-api-key': key } });
          body = await reply.json();
          if (reply.status !== 200) throw new Error(`${path}: ${reply.status} ${JSON.stringify(body)}`);
          // the first two warm the server's and the database's caches
          if (i >= 2) ms.push(performance.now() - started);
        }
        return { p50: percentile(ms, 50), p95: percentile(ms, 95), body };
      };
      const report = (path: string, result: { p50: number; p95: number }, target: number) => {
        console.log(
          `  ${path.padEnd(60)} p50 ${result.p50.toFixed(0).padStart(6)} ms  p95 ${result.p95.toFixed(0).padStart(6)} ms  (target ${target})`,
        );
        figures.push({ bench: 'as-of', path, value: Math.round(result.p95), unit: 'ms p95', target });
      };
      const weekBack = new Date(end.getTime() - 7 * DAY).toISOString();
      const dayBack = new Date(end.getTime() - DAY).toISOString();
      const twoDaysBack = new Date(end.getTime() - 2 * DAY).toISOString();
      const [hot] = await sql<{ ci_id: string; n: number }[]>`
        select ci_id, (select count(*)::int from ci_undo u where u.ci_id = c.ci_id) as n from configuration_items c where ci_id = md5('ci1')::uuid`;
      console.log(`  the hot CI has ${hot!.n} writes in its way back`);
      report(
        'CI detail as_of a week back (5 000 changes)',
        await timed(`/api/v1/configuration-items/${hot!.ci_id}?as_of=${weekBack}`, 40),
        50,
      );
      report(
        'list as_of a day back, default sort',
        await timed(`/api/v1/configuration-items?as_of=${dayBack}&limit=50`, 20),
        300,
      );
      report(
        'list as_of a day back, ci_type=k8s.deployment',
        await timed(`/api/v1/configuration-items?as_of=${dayBack}&limit=50&filter=ci_type:eq:k8s.deployment`, 20),
        300,
      );
      const first = await timed(`/api/v1/inventory/diff?from=${twoDaysBack}&to=${dayBack}&limit=100`, 5);
      console.log(
        `  diff a day apart: ${JSON.stringify({ appeared: first.body.counts.appeared, disappeared: first.body.counts.disappeared, changed: first.body.counts.changed })}`,
      );
      report('inventory diff a day apart, counts and first page', first, 1000);
      let cursor = first.body.next_cursor as string;
      const pages: number[] = [];
      for (let i = 0; i < 10 && cursor; i++) {
        const started = performance.now();
        const reply = await fetch(
          `${server.base}/api/v1/inventory/diff?from=${twoDaysBack}&to=${dayBack}&limit=100&cursor=${encodeURIComponent(cursor)}`,
          {
            headers: { 'x-api-key': key },
          },
        );
        const body: any = await reply.json();
        pages.push(performance.now() - started);
        cursor = body.next_cursor;
      }
      report(
        'inventory diff a day apart, further pages',
        { p50: percentile(pages, 50), p95: percentile(pages, 95) },
        300,
      );
    } finally {
      await server.stop();
    }
    const [sizes] = await sql<{ records: string; undo: string; tombstones: string; versions: string }[]>`
      select (select sum(pg_total_relation_size(c.oid)) from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'change_records'::regclass)
               + pg_total_relation_size('change_records') as records,
             (select sum(pg_total_relation_size(c.oid)) from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'ci_undo'::regclass) as undo,
             pg_total_relation_size('ci_tombstones') as tombstones,
             pg_total_relation_size('ci_versions') as versions`;
    const mb = (bytes: string) => Number(bytes) / 1024 / 1024;
    console.log(
      `  storage: change records ${mb(sizes!.records).toFixed(0)} MB, way back (ci_undo) ${mb(sizes!.undo).toFixed(0)} MB, ` +
        `versions ${mb(sizes!.versions).toFixed(0)} MB, tombstones ${mb(sizes!.tombstones).toFixed(0)} MB`,
    );
    const added = Number(sizes!.tombstones) + Number(sizes!.versions);
    figures.push({
      bench: 'as-of',
      path: 'versions and tombstones beside the change records',
      value: Math.round((100 * added) / Number(sizes!.records)),
      unit: '%',
      target: 30,
    });
    figures.push({
      bench: 'as-of',
      path: 'the way back (ci_undo) beside the change records',
      value: Math.round((100 * Number(sizes!.undo)) / Number(sizes!.records)),
      unit: '%',
    });
  } finally {
    await sql.end();
  }
  return figures;
}
