import type { Sql } from '../../src/platform/db/database.js';
import type { UniversalRecord } from '../../src/inventory/write-path/records.js';

/** One ingest of a scenario: what a collector would push at one moment. */
export interface Step {
  source: string;
  scopeId: string;
  mode: 'snapshot' | 'delta';
  records: UniversalRecord[];
  deletions?: string[];
}

/** A small deterministic generator (mulberry32), so every run and every process sees the same data. */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const node = (n: number, generation: number): UniversalRecord => ({
  external_id: `node/n${n}`,
  ci_type: 'k8s.node',
  name: `n${n}`,
  raw_data: {
    metadata: { name: `n${n}`, labels: { zone: `z${n % 3}` } },
    status: { allocatable: { cpu: String(4 + (generation % 2)) } },
  },
  type_data: { kubelet: `1.${28 + (generation % 2)}` },
});

const pod = (p: number, nodeOf: number, replicas: number, service: number | null): UniversalRecord => ({
  external_id: `pod/default/p${p}`,
  ci_type: 'k8s.pod',
  name: `p${p}`,
  namespace: 'default',
  raw_data: {
    metadata: { name: `p${p}`, namespace: 'default' },
    spec: { nodeName: `n${nodeOf}`, replicas },
    status: { phase: 'Running' },
  },
  type_data: { phase: 'Running', node: `n${nodeOf}` },
  relationships: [
    { type: 'runs_on', target_external_id: `node/n${nodeOf}` },
    ...(service === null ? [] : [{ type: 'member_of', target_external_id: `service/default/s${service}` }]),
  ],
});

const service = (s: number): UniversalRecord => ({
  external_id: `service/default/s${s}`,
  ci_type: 'k8s.service',
  name: `s${s}`,
  namespace: 'default',
  raw_data: { metadata: { name: `s${s}` }, spec: { type: 'ClusterIP' } },
});

/**
 * A cluster collected eight times: pods come and go, move between nodes (their relationships
 * move with them), change their spec, and reference nodes and services listed after them (so
 * most references wait for a later batch); one collection is a delta with deletions, and one pod
 * points at a node that never appears.
 */
export function crashScenario(source = 'crash'): Step[] {
  const rand = random(20261123);
  const steps: Step[] = [];
  for (let generation = 0; generation < 8; generation++) {
    const pods: UniversalRecord[] = [];
    for (let p = 0; p < 360; p++) {
      if ((p + generation) % 11 === 0) continue;
      const nodeOf = Math.floor(rand() * 30);
      pods.push(
        pod(
          p,
          generation % 3 === 0 ? nodeOf : p % 30,
          1 + ((p + generation) % 4 === 0 ? generation : 0),
          p % 7 === 0 ? p % 5 : null,
        ),
      );
    }
    pods.push({ ...pod(999, 999, 1, null) });
    const nodes = Array.from({ length: 30 }, (_, n) => node(n, generation));
    const services = Array.from({ length: 5 }, (_, s) => service(s));
    if (generation === 5) {
      steps.push({
        source,
        scopeId: 'cluster',
        mode: 'delta',
        records: pods.slice(0, 40),
        deletions: Array.from({ length: 20 }, (_, i) => `pod/default/p${300 + i}`),
      });
    } else {
      steps.push({ source, scopeId: 'cluster', mode: 'snapshot', records: [...pods, ...services, ...nodes] });
    }
  }
  return steps;
}

/**
 * What one replica pushes in one round of the concurrency test. With a shared source, replicas
 * send overlapping slices of the same collection (identical where they overlap, so every order
 * of applying them ends in the same state); with their own sources, each has its own data.
 */
export function concurrentStep(round: number, replica: number, replicas: number, sharedSource: boolean): Step {
  const generation = Math.floor(round / 3);
  const offset = sharedSource ? 0 : replica * 1000;
  const from = sharedSource ? replica * 8 : 0;
  const records: UniversalRecord[] = [];
  for (let p = from; p < from + 40; p++) {
    records.push({
      ...pod(offset + p, offset + ((p + generation) % 12), 1 + (generation % 3), p % 5 === 0 ? offset : null),
    });
  }
  for (let n = 0; n < 12; n++) records.push(node(offset + n, generation));
  if ((round + replica) % 2 === 0) records.push(service(offset));
  return {
    source: sharedSource ? 'shared' : `replica-${replica}`,
    scopeId: 'cluster',
    mode: 'snapshot',
    records: rotate(records, replica, replicas),
  };
}

/**
 * Replicas pushing different versions of the same objects at once (two agents racing): each
 * replica puts every pod on another node and gives it another replica count. Which version wins
 * depends on timing; what must hold is that each CI's relationships belong to its stored version.
 */
export function conflictingStep(round: number, replica: number): Step {
  const records: UniversalRecord[] = [];
  for (let p = 0; p < 40; p++) records.push(pod(p, (p + round + replica) % 12, replica + 1, null));
  for (let n = 0; n < 12; n++) records.push(node(n, 0));
  return { source: 'contested', scopeId: 'cluster', mode: 'snapshot', records: rotate(records, replica, 4) };
}

/**
 * Pods whose runs_on relationships are not exactly the node their stored spec names, or whose last
 * recorded replica count is not the stored one: both must be empty whatever the interleaving.
 */
export async function inconsistentPods(sql: Sql): Promise<unknown[]> {
  return [
    ...(await sql`
    select c.external_id, c.raw_data #>> '{spec,nodeName}' as node, c.raw_data #> '{spec,replicas}' as replicas,
           array(select t.name from relationships r join configuration_items t on t.ci_id = r.to_ci_id
                 where r.from_ci_id = c.ci_id and r.relationship_type = 'runs_on' order by 1) as targets,
           (select f -> 'new_value' from change_records h, jsonb_array_elements(h.changes) f
            where h.ci_id = c.ci_id and f ->> 'field' = 'raw_data.spec.replicas' order by h.id desc limit 1) as last_recorded
    from configuration_items c
    where c.ci_type = 'k8s.pod'
      and (array(select t.name from relationships r join configuration_items t on t.ci_id = r.to_ci_id
                 where r.from_ci_id = c.ci_id and r.relationship_type = 'runs_on') <> array[c.raw_data #>> '{spec,nodeName}']
           or coalesce((select f -> 'new_value' from change_records h, jsonb_array_elements(h.changes) f
                        where h.ci_id = c.ci_id and f ->> 'field' = 'raw_data.spec.replicas' order by h.id desc limit 1),
                       '1'::jsonb) <> c.raw_data #> '{spec,replicas}')`),
  ];
}

/** Different replicas list the same objects in different orders, so their batches differ. */
function rotate<T>(items: T[], replica: number, replicas: number): T[] {
  const shift = Math.floor((items.length * replica) / Math.max(replicas, 1));
  return [...items.slice(shift), ...items.slice(0, shift)];
}

/**
 * The inventory as something to compare: every CI field that does not depend on when or in which
 * process it was written, relationships and pending references by external ids, and each CI's
 * change records in order. Ids and timestamps are left out.
 */
export async function inventoryState(sql: Sql): Promise<unknown> {
  const [cis, relationships, pending, changes, outbox] = await Promise.all([
    sql`
      select s.name as source, c.external_id, c.scope_id, c.ci_type, c.name, c.namespace, c.status, c.raw_data, c.type_data
      from configuration_items c join sources s on s.id = c.source_id
      order by s.name, c.external_id`,
    sql`
      select f.external_id as from_id, t.external_id as to_id, r.relationship_type
      from relationships r
      join configuration_items f on f.ci_id = r.from_ci_id
      join configuration_items t on t.ci_id = r.to_ci_id
      order by 1, 2, 3`,
    sql`
      select f.external_id as from_id, p.target_external_id, p.relationship_type
      from pending_relationships p join configuration_items f on f.ci_id = p.from_ci_id
      order by 1, 2, 3`,
    sql`
      select c.external_id, jsonb_agg(jsonb_build_array(r.change_type, r.changes) order by r.id) as history
      from change_records r join configuration_items c on c.ci_id = r.ci_id
      group by c.external_id order by c.external_id`,
    sql`select (select count(*) from outbox)::int as outbox, (select count(*) from change_records)::int as records`,
  ]);
  return { cis, relationships, pending, changes, outbox };
}
