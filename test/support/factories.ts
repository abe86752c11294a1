import type { Sql } from '../../src/platform/db/database.js';
import type { UniversalRecord } from '../../src/inventory/write-path/records.js';
import { reconcile, type ReconcileResult } from '../../src/inventory/write-path/reconcile.js';
import { ensureSource } from '../../src/collection/sources/store.js';
import { DEFAULT_TENANT_ID } from '../../src/platform/tenants.js';

let counter = 0;

/** A Kubernetes-like pod record; every field can be overridden. */
export function buildPod(overrides: Partial<UniversalRecord> & { replicas?: number } = {}): UniversalRecord {
  counter++;
  const name = overrides.name ?? `pod-${counter}`;
  const namespace = overrides.namespace === undefined ? 'default' : overrides.namespace;
  return {
    external_id: overrides.external_id ?? `pod/${namespace}/${name}`,
    ci_type: overrides.ci_type ?? 'k8s.pod',
    name,
    namespace,
    raw_data: overrides.raw_data ?? {
      metadata: { name, namespace, resourceVersion: String(counter), labels: { app: 'web' } },
      spec: { replicas: overrides.replicas ?? 1, containers: [{ name: 'app', image: 'nginx:1.25' }] },
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True', lastProbeTime: null }] },
    },
    type_data: overrides.type_data ?? { phase: 'Running', restarts: 0 },
    ...(overrides.relationships ? { relationships: overrides.relationships } : {}),
  };
}

export async function buildSource(sql: Sql, name = 'k8s-prod', collectorType = 'kubernetes'): Promise<string> {
  return (await ensureSource(sql, DEFAULT_TENANT_ID, name, collectorType)).id;
}

/** Reconciles records into a source (created on first use) as a snapshot or delta. */
export async function ingest(
  sql: Sql,
  records: UniversalRecord[],
  options: {
    source?: string;
    scopeId?: string | null;
    mode?: 'snapshot' | 'delta';
    deletions?: string[];
    now?: Date;
    batchSize?: number;
  } = {},
): Promise<ReconcileResult & { sourceId: string }> {
  const sourceId = await buildSource(sql, options.source ?? 'k8s-prod');
  const result = await reconcile(
    sql,
    {
      tenantId: DEFAULT_TENANT_ID,
      sourceId,
      scopeId: options.scopeId ?? null,
      mode: options.mode ?? 'snapshot',
      records,
      deletions: options.deletions,
    },
    { now: options.now, batchSize: options.batchSize },
  );
  return { ...result, sourceId };
}

export async function ciIdOf(sql: Sql, externalId: string): Promise<string> {
  const [row] = await sql<{ ci_id: string }[]>`select ci_id from configuration_items where external_id = ${externalId}`;
  if (!row) throw new Error(`no CI with external id ${externalId}`);
  return row.ci_id;
}
