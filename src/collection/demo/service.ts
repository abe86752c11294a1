import type { Sql } from '../../platform/db/database.js';
import { refreshStatsAggregate } from '../../history/records/stats-store.js';
import { catchUpIdentities } from '../../inventory/identities/service.js';
import { reconcile } from '../../inventory/write-path/reconcile.js';
import type { UniversalRecord } from '../../inventory/write-path/records.js';
import { insertSource, provisionCollector, updateSource } from '../sources/service.js';
import { postgresqlRecords, prometheusRecords } from './fleet.js';
import { ENDPOINTS, parseServerSource, serverRecords, serverSources } from './servers.js';
import { demoSources, markCollected, removeSources } from './store.js';
import { buildDemo, DEMO_DAYS, type Touched } from './timeline.js';

const HOUR = 3_600_000;

interface DemoSourcePlan {
  name: string;
  collectorType: string;
  scopeId: string;
  endpoint: string;
  config: Record<string, unknown>;
}

/**
 * The demo's sources: what collector type each stands for, the instance its CIs belong to, and the
 * endpoint and settings such a source would have, at a reserved name (RFC 2606): the demo is never
 * collected from anywhere.
 */
const SOURCES = {
  east: plan('demo-east', 'kubernetes', 'east', { cluster_name: 'east' }),
  west: plan('demo-west', 'kubernetes', 'west', { cluster_name: 'west' }),
  prometheus: plan('demo-prometheus', 'prometheus', 'prometheus-demo'),
  postgresql: plan('demo-postgresql', 'postgresql', 'pg-demo-primary'),
  ...Object.fromEntries(
    serverSources().map((source) => {
      const { kind } = parseServerSource(source);
      // server_name is what a collection scopes the server's CIs by
      return [
        source,
        { ...plan(`demo-${source}`, kind, source, { server_name: source }), endpoint: ENDPOINTS[kind](source) },
      ];
    }),
  ),
} as Record<Touched, DemoSourcePlan>;

function plan(
  name: string,
  collectorType: string,
  scopeId: string,
  config: Record<string, unknown> = {},
): DemoSourcePlan {
  return { name, collectorType, scopeId, endpoint: `https://${scopeId}.demo.invalid`, config };
}

export interface DemoOptions {
  tenantId: string;
  /** The demo's week ends at the start of this moment's hour. */
  now: Date;
  batchSize: number;
  /** A line of progress: which day, which event. */
  progress: (done: number, total: number, what: string) => void;
}

export type DemoOutcome =
  | { loaded: false; sources: string[] }
  | { loaded: true; sources: string[]; steps: number; cis: number; changes: number; from: Date; to: Date };

/**
 * Loads the demo inventory: two Kubernetes clusters with a Redis, a MariaDB and a NATS each, a
 * Prometheus and a PostgreSQL, each as a source of its own marked `config.demo` and disabled
 * (nothing collects them), with a week of history written at the moments it happened, and the
 * host identities its observations make resolved. Loaded already: nothing is written.
 */
export async function loadDemo(sql: Sql, options: DemoOptions): Promise<DemoOutcome> {
  const existing = await demoSources(sql, options.tenantId);
  if (existing.length > 0) return { loaded: false, sources: existing.map((s) => s.name) };
  const sourceIds = await createSources(sql, options.tenantId, options.now);
  const demo = buildDemo(new Date(Math.floor(options.now.getTime() / HOUR) * HOUR));
  let cis = 0;
  let changes = 0;
  const emitted = new Map<Touched, Set<string>>();
  const lastCollected = new Map<Touched, { at: Date; created: number; updated: number; changes: number }>();
  for (const [index, step] of demo.steps.entries()) {
    demo.clock.now = step.at;
    const touched = step.apply();
    for (const name of touched) {
      const { records, deletions } = await recordsOf(
        demo,
        name,
        index === 0 || index === demo.steps.length - 1,
        emitted,
      );
      if (records.length === 0 && deletions.length === 0) continue;
      const result = await reconcile(
        sql,
        {
          tenantId: options.tenantId,
          sourceId: sourceIds[name],
          scopeId: SOURCES[name].scopeId,
          mode: 'delta',
          records,
          deletions,
          typeDataDerived: true,
        },
        { now: step.at, batchSize: options.batchSize },
      );
      cis += result.created;
      changes += result.changes;
      lastCollected.set(name, {
        at: step.at,
        created: result.created,
        updated: result.updated,
        changes: result.changes,
      });
    }
    options.progress(
      index + 1,
      demo.steps.length,
      `${step.at.toISOString().slice(0, 16).replace('T', ' ')} ${step.what}`,
    );
  }
  // each source says when it was last collected, as a collection would: not 'not collected yet' beside its CIs
  for (const [name, last] of lastCollected) await markCollected(sql, options.tenantId, sourceIds[name], last);
  await refreshStatsAggregate(sql, options.now);
  // the identities at once, rather than at the identity worker's next turn
  await catchUpIdentities(sql, () => options.now);
  return {
    loaded: true,
    sources: Object.values(SOURCES).map((s) => s.name),
    steps: demo.steps.length,
    cis,
    changes,
    from: demo.start,
    to: demo.end,
  };
}

/**
 * What a collection of one source reports now. The clusters say what changed; the Prometheus, the
 * PostgreSQL and the clusters' servers report everything, and what they no longer report is gone.
 */
async function recordsOf(
  demo: ReturnType<typeof buildDemo>,
  name: Touched,
  everything: boolean,
  emitted: Map<Touched, Set<string>>,
): Promise<{ records: UniversalRecord[]; deletions: string[] }> {
  if (name !== 'east' && name !== 'west') {
    const records = await reported(demo, name);
    const now = new Set(records.map((r) => r.external_id));
    const deletions = [...(emitted.get(name) ?? [])].filter((id) => !now.has(id));
    emitted.set(name, now);
    return { records, deletions };
  }
  const cluster = demo[name];
  const drained = cluster.drain();
  return everything ? { records: cluster.all(), deletions: drained.deletions } : drained;
}

function reported(
  demo: ReturnType<typeof buildDemo>,
  name: Exclude<Touched, 'east' | 'west'>,
): Promise<UniversalRecord[]> {
  if (name === 'prometheus') return Promise.resolve(prometheusRecords(demo.fleet));
  if (name === 'postgresql') return Promise.resolve(postgresqlRecords(demo.fleet));
  const { kind, cluster } = parseServerSource(name);
  return serverRecords(demo.servers[cluster], kind, demo.clock.now);
}

async function createSources(sql: Sql, tenantId: string, now: Date): Promise<Record<Touched, string>> {
  const ids = {} as Record<Touched, string>;
  for (const [key, source] of Object.entries(SOURCES) as [Touched, DemoSourcePlan][]) {
    const collectorId = await provisionCollector(sql, tenantId, source.collectorType, `demo-${source.collectorType}`);
    const id = await insertSource(sql, tenantId, {
      collectorId,
      name: source.name,
      endpoint: source.endpoint,
      config: { demo: true, ...source.config },
      scheduleConfig: { enabled: false },
    });
    if (!id) throw new Error(`a source named ${source.name} exists already and is not the demo's: rename it first`);
    await updateSource(sql, tenantId, id, { status: 'disabled' }, now);
    ids[key] = id;
  }
  return ids;
}

/** Removes the demo's sources with everything they brought (see removeSources). */
export async function removeDemo(
  sql: Sql,
  tenantId: string,
  now: Date,
): Promise<{ sources: string[]; cis: number; changes: number }> {
  const sources = await demoSources(sql, tenantId);
  if (sources.length === 0) return { sources: [], cis: 0, changes: 0 };
  const removed = await removeSources(
    sql,
    tenantId,
    sources.map((s) => s.id),
  );
  await refreshStatsAggregate(sql, now);
  return { sources: sources.map((s) => s.name), ...removed };
}

export { DEMO_DAYS };
