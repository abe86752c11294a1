import { randomUUID } from 'node:crypto';
import type { Sql } from '../../../src/platform/db/database.js';
import { DEFAULT_TENANT_ID } from '../../../src/platform/tenants.js';
import { buildPod, ciIdOf, ingest } from '../../support/factories.js';

/**
 * A node `hub` in source `k8s-prod`, instance `cluster-a`:
 * - outgoing: manages pod-01, pod-02; hosts svc-01, svc-02, svc-03; runs_on svc-01 (6 live)
 * - incoming: runs_on from pod-01 … pod-06; manages from svc-03 (7 live)
 * - dangling: runs_on from pod-gone (collected, then removed for good), plus one row each way to
 *   an id that never was a CI (3 in all)
 */
export interface Hub {
  sourceId: string;
  hub: string;
  /** CI ids by name. */
  ids: Record<string, string>;
  live: number;
  dangling: number;
}

export const podName = (n: number) => `pod-${String(n).padStart(2, '0')}`;

/**
 * Inserts a relationship row directly, as reconcile would have left it (with the instances of its
 * two ends); returns its id.
 */
export async function insertRelationship(
  sql: Sql,
  from: string,
  to: string,
  type: string,
  sourceId: string | null = null,
  scopes: { from?: string | null; to?: string | null } = {},
): Promise<string> {
  const now = new Date();
  const [row] = await sql<{ id: string }[]>`
    insert into relationships (tenant_id, source_id, from_ci_id, to_ci_id, relationship_type, created_at, last_seen, from_scope_id, to_scope_id)
    values (${DEFAULT_TENANT_ID}, ${sourceId}, ${from}, ${to}, ${type}, ${now}, ${now}, ${scopes.from ?? null}, ${scopes.to ?? null})
    returning id::text`;
  return row!.id;
}

/** Removes a CI for good, as the archive-retention cleanup does; its relationship rows stay. */
export async function hardDelete(sql: Sql, ciId: string): Promise<void> {
  await sql`delete from configuration_items where ci_id = ${ciId}`;
}

export async function setStatus(sql: Sql, ciId: string, status: 'active' | 'inactive' | 'archived'): Promise<void> {
  await sql`update configuration_items set status = ${status}, status_updated_at = now() where ci_id = ${ciId}`;
}

export async function seedHub(sql: Sql): Promise<Hub> {
  const hub = buildPod({
    name: 'hub',
    external_id: 'node/hub',
    ci_type: 'k8s.node',
    namespace: null,
    relationships: [
      { type: 'manages', target_external_id: `pod/default/${podName(1)}` },
      { type: 'manages', target_external_id: `pod/default/${podName(2)}` },
      ...[1, 2, 3].map((n) => ({ type: 'hosts', target_external_id: `svc/svc-0${n}` })),
      { type: 'runs_on', target_external_id: 'svc/svc-01' },
    ],
  });
  const pods = [...[1, 2, 3, 4, 5, 6].map(podName), 'pod-gone'].map((name) =>
    buildPod({ name, relationships: [{ type: 'runs_on', target_external_id: 'node/hub' }] }),
  );
  const services = [1, 2, 3].map((n) =>
    buildPod({
      name: `svc-0${n}`,
      external_id: `svc/svc-0${n}`,
      ci_type: 'k8s.service',
      ...(n === 3 ? { relationships: [{ type: 'manages', target_external_id: 'node/hub' }] } : {}),
    }),
  );
  const { sourceId } = await ingest(sql, [hub, ...pods, ...services], { scopeId: 'cluster-a' });

  const ids: Record<string, string> = {};
  for (const record of [hub, ...pods, ...services]) ids[record.name] = await ciIdOf(sql, record.external_id);
  const hubId = ids.hub!;
  await hardDelete(sql, ids['pod-gone']!);
  await insertRelationship(sql, hubId, randomUUID(), 'hosts', sourceId, { from: 'cluster-a', to: 'cluster-a' });
  await insertRelationship(sql, randomUUID(), hubId, 'runs_on', sourceId, { from: 'cluster-a', to: 'cluster-a' });
  return { sourceId, hub: hubId, ids, live: 13, dangling: 3 };
}
