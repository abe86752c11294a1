/**
 * Change subscriptions under load, through `cinv serve` (its delivery job) on the machine's
 * PostgreSQL and NATS server:
 *
 *   npm run bench -- subscriptions [pods]      (default 100 000 pods: a 143 834-object first load)
 *
 * 1. The first load with no subscription, then again with 10 webhook subscriptions (receivers in
 *    a process of their own, answering at once) and one NATS JetStream subscription, in turn, twice
 *    (interleaved: one load's time moves more from run to run than the difference measured): the
 *    ingest's slowdown (mean against mean), and the time from a batch's first record committing to
 *    the batch delivered (p95 over batches).
 * 2. A receiver's outage: 1 000 000 change records commit while one webhook answers 503; once it is
 *    back, how fast the backlog drains (records per second).
 *
 * Targets: p95 commit to delivery ≤ 2 s; the ingest ≤ 10 % slower; the backlog ≥ 20 000 records/s.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { assertSnapshot, reconcile } from '../../src/inventory/write-path/reconcile.js';
import type { UniversalRecord } from '../../src/inventory/write-path/records.js';
import { ensureSource } from '../../src/collection/sources/store.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';
import type { Sql } from '../../src/platform/db/database.js';
import { cluster, LARGE_CLUSTER } from './cluster.js';
import { benchDatabase, benchKey, seconds, serveBench, type Figure } from './common.js';

const DATABASE = 'cinv_bench_subscriptions';
const MASTER_KEY = '3f'.repeat(32);
const NATS_URL = process.env.CINV_BENCH_NATS_URL ?? 'nats://127.0.0.1:4222';
const WEBHOOKS = 10;

const percentile = (values: number[], p: number) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))] ?? NaN;

interface Receivers {
  urls: string[];
  /** Records each has been sent (with a 2xx answer). */
  records(): Promise<number[]>;
  answer(index: number, status: number): Promise<void>;
  stop(): void;
}

/** The receivers, in a process of their own (test/bench/receivers.ts). */
async function startReceivers(count: number): Promise<Receivers> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./receivers.ts', import.meta.url)), String(count)],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
  const { urls, control } = JSON.parse(line) as { urls: string[]; control: string };
  return {
    urls,
    records: async () => (await (await fetch(`${control}/control/count`)).json()) as number[],
    answer: async (index, status) =>
      void (await fetch(`${control}/control/answer/${index}/${status}`, { method: 'POST' })).arrayBuffer(),
    stop: () => void child.kill(),
  };
}

async function empty(sql: Sql): Promise<void> {
  await sql.unsafe(
    'truncate outbox, relationships, pending_relationships, change_records, change_stats_queue, ci_last_seen, configuration_items, ' +
      'ci_counts, ci_type_counts, ci_count_deltas, ci_undo, ci_tombstones, ci_versions, relationship_history, change_feed, subscription_deliveries, subscriptions restart identity cascade',
  );
}

/** Waits until every enabled subscription has nothing pending and has reached the feed's end. */
async function drained(sql: Sql, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const [left] = await sql<{ behind: number }[]>`
      select count(*)::int as behind from subscriptions s
      where s.enabled and (exists (select 1 from subscription_deliveries d where d.subscription_id = s.id and d.status = 'pending')
        or s.feed_position < (select coalesce(max(position), 0) from change_feed))`;
    if (left!.behind === 0) return true;
    await sleep(100);
  }
  return false;
}

export async function benchSubscriptions(pods = LARGE_CLUSTER.pods): Promise<Figure[]> {
  const shape = {
    ...LARGE_CLUSTER,
    pods,
    deployments: Math.max(1, Math.round((LARGE_CLUSTER.deployments * pods) / LARGE_CLUSTER.pods)),
  };
  const sql = await benchDatabase(DATABASE);
  const figures: Figure[] = [];
  const BACKLOG = pods >= LARGE_CLUSTER.pods ? 1_000_000 : 100_000;
  const receivers = await startReceivers(WEBHOOKS + 1);
  const subject = `cinv.bench.${Date.now()}`;
  const stream = `CINV_BENCH_${Date.now()}`;
  const nc = await connect({ servers: new URL(NATS_URL).host });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: stream, subjects: [subject], max_bytes: 4 * 1024 * 1024 * 1024 });
  try {
    // the first load into an empty source (the subscriptions, when made, are kept)
    const load = async () => {
      await sql.unsafe(
        'truncate relationships, pending_relationships, change_records, change_stats_queue, ci_last_seen, configuration_items, ci_counts, ci_type_counts, ci_count_deltas, outbox restart identity cascade',
      );
      const source = await ensureSource(sql, DEFAULT_TENANT_ID, 'bench-cluster', 'kubernetes');
      const document: unknown = { items: [...cluster(shape, { collection: 0, generation: 0 })] };
      const started = performance.now();
      assertSnapshot(document);
      const items = (document as { items: UniversalRecord[] }).items;
      await reconcile(sql, {
        tenantId: DEFAULT_TENANT_ID,
        sourceId: source.id,
        scopeId: 'prod',
        mode: 'snapshot',
        records: items,
      });
      return { seconds: seconds(started), objects: items.length, source };
    };
    await empty(sql);
    const key = await benchKey(sql, 'adm');
    const server = await serveBench(DATABASE, { CINV_MASTER_KEY: MASTER_KEY, CINV_SUBSCRIPTION_POLL: '100ms' });
    try {
      const create = async (name: string, sink: Record<string, unknown>) => {
        const reply = await fetch(`${server.base}/api/v1/subscriptions`, {
          method: 'POST',
          headers: { 'x-api-key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ name, sink }),
        });
        if (reply.status !== 201) throw new Error(`subscription ${name}: ${reply.status} ${await reply.text()}`);
        return ((await reply.json()) as { id: string }).id;
      };
      for (let i = 0; i < WEBHOOKS; i++) await create(`hook-${i}`, { type: 'webhook', url: receivers.urls[i]! });
      await create('nats', { type: 'nats', url: NATS_URL, subject });
      // loads without and with the subscriptions in turn, twice: one load's time moves by a sixth
      // from run to run (checkpoints, autovacuum), more than the difference measured
      const alone: number[] = [];
      const withSubscriptions: number[] = [];
      let source: { id: string } | undefined;
      let objects = 0;
      for (let round = 0; round < 2; round++) {
        await sql`update subscriptions set enabled = false`;
        const quiet = await load();
        alone.push(quiet.seconds);
        objects = quiet.objects;
        console.log(`  first load, no subscription: ${quiet.objects} objects in ${quiet.seconds} s`);
        // the subscriptions start from the feed's end: what the load without them wrote is not theirs
        await sql`update subscriptions set enabled = true, feed_position = (select coalesce(max(position), 0) from change_feed), feed_record = 9223372036854775807`;
        const before = (await receivers.records()).slice(0, WEBHOOKS);
        const loaded = await load();
        source = loaded.source;
        withSubscriptions.push(loaded.seconds);
        const allDelivered = await drained(sql, 600_000);
        const [records] = await sql<
          { n: number }[]
        >`select count(*)::int as n from change_records where changes <> '[]'::jsonb`;
        const received = (await receivers.records()).slice(0, WEBHOOKS).map((n, i) => n - before[i]!);
        console.log(
          `  with ${WEBHOOKS} webhooks and 1 NATS subject: ${loaded.seconds} s; ${allDelivered ? 'all delivered' : 'NOT all delivered'}; ` +
            `${records!.n} records, each webhook received ${Math.min(...received)}–${Math.max(...received)}; NATS stream ${(await jsm.streams.info(stream)).state.messages} batches`,
        );
      }
      const lags = await sql<{ ms: number }[]>`
        select extract(epoch from (delivered_at - committed_at)) * 1000 as ms from subscription_deliveries where status = 'delivered'`;
      const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
      const slower = Math.round((100 * (mean(withSubscriptions) - mean(alone))) / mean(alone));
      figures.push({
        bench: 'subscriptions',
        path: `first load of ${objects} objects, slower with 11 subscriptions (${alone.join(' s, ')} s → ${withSubscriptions.join(' s, ')} s, interleaved)`,
        value: slower,
        unit: '%',
        target: 10,
      });
      figures.push({
        bench: 'subscriptions',
        path: `commit to delivery, p95 over ${lags.length} batches (p50 ${Math.round(
          percentile(
            lags.map((l) => Number(l.ms)),
            50,
          ),
        )} ms)`,
        value: Math.round(
          percentile(
            lags.map((l) => Number(l.ms)),
            95,
          ),
        ),
        unit: 'ms',
        target: 2000,
      });

      // the outage: one more webhook, down while a million records commit; the others are disabled,
      // so that the drain is measured alone
      await sql`update subscriptions set enabled = false`;
      await receivers.answer(WEBHOOKS, 503);
      const outage = await create('outage', { type: 'webhook', url: receivers.urls[WEBHOOKS]! });
      // in transactions of a thousand, as the write path commits its batches
      for (let from = 0; from < BACKLOG; from += 1000) {
        await sql`
          insert into change_records (tenant_id, ci_id, source_id, scope_id, ci_name, ci_namespace, ci_type, change_type, changed_at, changes, changed_fields)
          select ${DEFAULT_TENANT_ID}, md5('backlog' || (g % 50000))::uuid, ${source!.id}, 'prod', 'pod-' || (g % 50000), 'ns-' || (g % 400), 'k8s.pod', 'UPDATED', now(),
                 jsonb_build_array(jsonb_build_object('field', 'raw_data.status.phase', 'old_value', 'Running', 'new_value', 'Pending')),
                 array['raw_data.status.phase']
          from generate_series(${from}::int, ${from + 999}::int) g`;
      }
      // the one down has failed its first batch and waits to retry
      await sleep(2000);
      const [waiting] = await sql<
        { feed_position: string }[]
      >`select feed_position::text from subscriptions where id = ${outage}`;
      await receivers.answer(WEBHOOKS, 200);
      const drainStarted = performance.now();
      await sql`update subscription_deliveries set next_attempt_at = now() where subscription_id = ${outage} and status = 'pending'`;
      const deadline = Date.now() + 900_000;
      const drainedRecords = async () => (await receivers.records())[WEBHOOKS]!;
      while ((await drainedRecords()) < BACKLOG && Date.now() < deadline) await sleep(50);
      const drainSeconds = (performance.now() - drainStarted) / 1000;
      const drainedCount = await drainedRecords();
      console.log(
        `  backlog: ${drainedCount} records after the outage (subscription at position ${waiting!.feed_position}) in ${drainSeconds.toFixed(1)} s`,
      );
      figures.push({
        bench: 'subscriptions',
        path: `backlog of ${BACKLOG} records drained after an outage`,
        value: Math.round(drainedCount / drainSeconds),
        unit: 'records/s',
        target: 20_000,
        atLeast: true,
      });
    } finally {
      await server.stop();
    }
  } finally {
    await jsm.streams.delete(stream).catch(() => undefined);
    await nc.close();
    receivers.stop();
    await sql.end();
  }
  return figures;
}
