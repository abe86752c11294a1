import type { Sql } from '../../../../src/platform/db/database.js';
import type { UniversalRecord } from '../../../../src/inventory/write-path/records.js';
import { reconcile } from '../../../../src/inventory/write-path/reconcile.js';
import { ensureSource } from '../../../../src/collection/sources/store.js';
import { sweepLifecycle } from '../../../../src/inventory/lifecycle/sweep.js';
import { DEFAULT_TENANT_ID } from '../../../../src/platform/tenants.js';
import type { ChangeRow, CiRow, Dump, Json, Model, RelRow } from './model.js';

/**
 * A small random inventory with a history, drawn from one seed: CIs over two sources (alpha with the
 * instances east and west, beta with none), written at successive hours through the write path
 * (snapshots and deltas with deletions, moves between instances, relationships of a few types with
 * cycles and self-loops, lifecycle sweeps that age, archive and remove), plus relationships across
 * the sources inserted as the write path stores them (it never writes those itself).
 */

export const BASE = new Date('2026-10-01T00:00:00Z');
export const HOUR = 3_600_000;
export const at = (hours: number) => new Date(BASE.getTime() + hours * HOUR);

export const SOURCES = [
  { name: 'alpha', instances: ['east', 'west'] as (string | null)[] },
  { name: 'beta', instances: [null] as (string | null)[] },
];
export const CI_TYPES = ['k8s.pod', 'k8s.node', 'k8s.deployment', 'k8s.service', 'pg.database'];
export const NAMES = ['web', 'api', 'db', 'Web', 'web_1', 'web1', 'api2', 'cache', 'a', 'ab'];
export const NAMESPACES = ['shop', 'ops', 'pay', 'Shop'];
export const RELATIONSHIP_TYPES = ['manages', 'runs_on', 'member_of', 'owns', 'hosts'];
export const IMAGES = ['app:1', 'app:2', 'web:1', 'db:10'];
export const LABELS = ['web', 'api', 'db', 'Web'];

/** A small deterministic generator (mulberry32), so that a seed names one estate. */
export class Draw {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }
}

interface Potential {
  externalId: string;
  source: number;
  /** The instance it is collected in now (a move changes it). */
  instance: string | null;
  ciType: string;
  name: string;
  namespace: string | null;
  record?: UniversalRecord;
}

/** Values at a few paths: numbers, numeric strings, text, booleans, nulls, objects, arrays, or nothing. */
function rawData(d: Draw): Record<string, Json> {
  const raw: Record<string, Json> = {};
  const spec: Record<string, Json> = {};
  if (d.chance(0.8)) spec.replicas = d.pick<Json>([0, 1, 2, 3, 5, 10, 2.5, -1, '3', '10', null]);
  if (d.chance(0.7)) spec.image = d.pick(IMAGES);
  if (d.chance(0.4)) spec.template = { image: d.pick(IMAGES), env: d.pick<Json>(['prod', 'dev', null]) };
  if (d.chance(0.9)) raw.spec = spec;
  const labels: Record<string, Json> = {};
  if (d.chance(0.7)) labels.app = d.pick(LABELS);
  if (d.chance(0.4)) labels.tier = d.pick(['front', 'back']);
  if (d.chance(0.3)) labels['app.io/name'] = d.pick(['checkout', 'cart']);
  if (d.chance(0.8)) raw.metadata = { labels };
  if (d.chance(0.7)) raw.status = { ready: d.pick<Json>([true, false, null]), phase: d.pick(['Running', 'Pending']) };
  if (d.chance(0.3)) raw.ports = d.pick<Json>([[80], [80, 443], [443, 80], []]);
  if (d.chance(0.5)) raw.count = d.pick<Json>([0, 7, 9, 10, -3, 'x', true]);
  return raw;
}

function typeData(d: Draw): Record<string, Json> | undefined {
  if (d.chance(0.2)) return undefined;
  const data: Record<string, Json> = {};
  if (d.chance(0.8)) data.phase = d.pick(['Running', 'Pending', 'Failed']);
  if (d.chance(0.6)) data.restarts = d.int(0, 3);
  return data;
}

function recordOf(d: Draw, ci: Potential, all: readonly Potential[]): UniversalRecord {
  const fresh = !ci.record || d.chance(0.45);
  const renamed = ci.record && d.chance(0.1);
  const record: UniversalRecord = {
    external_id: ci.externalId,
    ci_type: ci.ciType,
    name: renamed ? (ci.name = d.pick(NAMES)) : ci.name,
    namespace: ci.namespace,
    raw_data: fresh ? rawData(d) : ci.record!.raw_data,
    ...(fresh
      ? (() => {
          const t = typeData(d);
          return t ? { type_data: t } : {};
        })()
      : ci.record!.type_data
        ? { type_data: ci.record!.type_data }
        : {}),
  };
  if (d.chance(0.6)) {
    const sameSource = all.filter((other) => other.source === ci.source);
    const count = d.int(0, 3);
    record.relationships = Array.from({ length: count }, () => ({
      type: d.pick(RELATIONSHIP_TYPES),
      target_external_id: d.chance(0.08) ? ci.externalId : d.pick(sameSource).externalId,
    }));
  }
  ci.record = record;
  return record;
}

type Step =
  | {
      kind: 'ingest';
      source: number;
      instance: string | null;
      mode: 'snapshot' | 'delta';
      records: UniversalRecord[];
      deletions: string[];
    }
  | { kind: 'sweep' }
  | { kind: 'link'; links: { from: string; to: string; type: string }[] };

export interface EstatePlan {
  seed: number;
  cis: Potential[];
  /** Each event's steps, written at the event's hour (1, 2, …). */
  events: Step[][];
  /** Whether the sweeps remove archived CIs (leaving tombstones and dangling relationships). */
  removal: boolean;
}

function ingestStep(d: Draw, cis: Potential[], source: number, instance: string | null, seen: Set<string>): Step {
  const mode = d.chance(0.5) ? 'delta' : 'snapshot';
  const records: UniversalRecord[] = [];
  const deletions: string[] = [];
  for (const ci of cis.filter((c) => c.source === source)) {
    const home = ci.instance === instance;
    // a move: collected in this instance now, whatever it was collected in before
    const moved = !home && seen.has(ci.externalId) && d.chance(0.06);
    if (!home && !moved) continue;
    if (moved) ci.instance = instance;
    if (mode === 'delta' && seen.has(ci.externalId) && !moved && d.chance(0.1)) deletions.push(ci.externalId);
    else if (moved || d.chance(0.7)) {
      records.push(recordOf(d, ci, cis));
      seen.add(ci.externalId);
    }
  }
  return { kind: 'ingest', source, instance, mode, records, deletions };
}

/** The estate of a seed: which CIs may exist, and what is written when. */
export function planEstate(seed: number): EstatePlan {
  const d = new Draw(seed);
  const count = d.int(20, 60);
  const cis: Potential[] = Array.from({ length: count }, (_, i) => {
    const source = d.chance(0.6) ? 0 : 1;
    const ciType = d.pick(CI_TYPES);
    return {
      externalId: `${ciType}/${i}`,
      source,
      instance: d.pick(SOURCES[source]!.instances),
      ciType,
      name: d.pick(NAMES),
      namespace: d.chance(0.2) ? null : d.pick(NAMESPACES),
    };
  });
  const seen = new Set<string>();
  const everywhere = SOURCES.flatMap((s, source) => s.instances.map((instance) => ({ source, instance })));
  const events: Step[][] = [everywhere.map(({ source, instance }) => ingestStep(d, cis, source, instance, seen))];
  const eventCount = d.int(3, 6);
  for (let e = 1; e < eventCount; e++) {
    const steps: Step[] = [];
    const kind = d.pick(['ingest', 'ingest', 'ingest', 'sweep', 'link']);
    if (kind === 'sweep') steps.push({ kind: 'sweep' });
    else if (kind === 'link') {
      const links = Array.from({ length: d.int(1, 3) }, () => {
        const from = d.pick(cis);
        const others = cis.filter((c) => c.source !== from.source);
        return {
          from: from.externalId,
          to: d.pick(others.length > 0 ? others : cis).externalId,
          type: d.pick(RELATIONSHIP_TYPES),
        };
      });
      steps.push({ kind: 'link', links });
    } else {
      for (const { source, instance } of everywhere.filter(() => d.chance(0.6)))
        steps.push(ingestStep(d, cis, source, instance, seen));
    }
    events.push(steps);
  }
  return { seed, cis, events, removal: d.chance(0.3) };
}

const SWEEP = (removal: boolean) => ({
  inactiveAfterMs: 1.5 * HOUR,
  archiveInactiveAfterMs: 1.5 * HOUR,
  archiveRetentionMs: removal ? 0.5 * HOUR : 1000 * HOUR,
  batchSize: 100,
});

async function dump(sql: Sql, moment: Date): Promise<Dump> {
  const cis = await sql<CiRow[]>`
    select ci_id, source_id::text as source_id, scope_id, external_id, ci_type, name, namespace, status,
           status_updated_at, raw_data, type_data, created_at, updated_at
    from configuration_items where tenant_id = ${DEFAULT_TENANT_ID}`;
  const rels = await sql<RelRow[]>`
    select from_ci_id, to_ci_id, relationship_type from relationships where tenant_id = ${DEFAULT_TENANT_ID}`;
  return { at: moment, cis: new Map(cis.map((c) => [c.ci_id, { ...c }])), rels: [...rels] };
}

async function insertLinks(sql: Sql, links: { from: string; to: string; type: string }[], moment: Date): Promise<void> {
  for (const link of links) {
    await sql`
      insert into relationships (tenant_id, source_id, from_ci_id, to_ci_id, relationship_type, created_at, last_seen, from_scope_id, to_scope_id)
      select f.tenant_id, f.source_id, f.ci_id, t.ci_id, ${link.type}, ${moment}, ${moment}, f.scope_id, t.scope_id
      from configuration_items f, configuration_items t
      where f.tenant_id = ${DEFAULT_TENANT_ID} and t.tenant_id = ${DEFAULT_TENANT_ID}
        and f.external_id = ${link.from} and t.external_id = ${link.to}
      on conflict do nothing`;
  }
}

/** Writes the plan into an empty database at its hours and returns what the oracle reads. */
export async function writeEstate(sql: Sql, plan: EstatePlan): Promise<Model> {
  const sourceIds: string[] = [];
  for (const source of SOURCES)
    sourceIds.push((await ensureSource(sql, DEFAULT_TENANT_ID, source.name, 'universal')).id);
  const dumps: Dump[] = [];
  for (const [i, steps] of plan.events.entries()) {
    const moment = at(i + 1);
    for (const step of steps) {
      if (step.kind === 'sweep') await sweepLifecycle(sql, SWEEP(plan.removal), moment);
      else if (step.kind === 'link') await insertLinks(sql, step.links, moment);
      else
        await reconcile(
          sql,
          {
            tenantId: DEFAULT_TENANT_ID,
            sourceId: sourceIds[step.source]!,
            scopeId: step.instance,
            mode: step.mode,
            records: step.records,
            deletions: step.deletions,
          },
          { now: moment },
        );
    }
    dumps.push(await dump(sql, moment));
  }
  return readModel(sql, dumps, sourceIds);
}

async function readModel(sql: Sql, dumps: Dump[], sourceIds: string[]): Promise<Model> {
  const changes = await sql<(Omit<ChangeRow, 'id'> & { id: string })[]>`
    select id::text as id, ci_id, source_id::text as source_id, scope_id, moved_from_scope_id, change_type, changed_at,
           changes, changed_fields
    from change_records where tenant_id = ${DEFAULT_TENANT_ID}`;
  const tombstones = await sql<CiRow[]>`
    select ci_id, source_id::text as source_id, scope_id, external_id, ci_type, name, namespace, status,
           status_updated_at, raw_data, type_data, created_at, updated_at
    from ci_tombstones where tenant_id = ${DEFAULT_TENANT_ID}`;
  const lastSeen = await sql<{ ci_id: string; last_seen: Date }[]>`select ci_id, last_seen from ci_last_seen`;
  const types = await sql<{ relationship_type: string }[]>`
    select relationship_type from relationships where tenant_id = ${DEFAULT_TENANT_ID}
    union select relationship_type from relationship_history where tenant_id = ${DEFAULT_TENANT_ID}`;
  const ids = await sql<{ external_id: string; ci_id: string }[]>`
    select external_id, ci_id from configuration_items union all select external_id, ci_id from ci_tombstones`;
  return {
    dumps,
    tombstones: new Map(tombstones.map((t) => [t.ci_id, { ...t }])),
    changes: changes.map((c) => ({ ...c, id: BigInt(c.id), changes: c.changes as unknown[] })),
    lastSeen: new Map(lastSeen.map((l) => [l.ci_id, l.last_seen])),
    relationshipTypes: new Set(types.map((t) => t.relationship_type)),
    sourceIds,
    ciIds: new Map(ids.map((r) => [r.external_id, r.ci_id])),
  };
}

/** The moment the estate's app clock stands at: half an hour after the last write. */
export const nowOf = (plan: EstatePlan) => new Date(at(plan.events.length).getTime() + 0.5 * HOUR);
