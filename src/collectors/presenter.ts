import { UNKNOWN_TYPE_CAPABILITIES } from '../collector-types/plugin.js';
import { collectorType } from '../collector-types/registry.js';
import type { RunRow } from './runs/runs.js';
import type { CollectorRow } from './store.js';

/** What the collector's type can do; a type this service does not know takes pushes only. */
export const capabilitiesOf = (row: CollectorRow) => {
  const { supports_universal_format, supports_multi_source } = collectorType(row.collector_type)?.capabilities ?? UNKNOWN_TYPE_CAPABILITIES;
  return { supports_universal_format, supports_multi_source };
};

export const presentCollector = (row: CollectorRow) => ({
  id: Number(row.id),
  name: row.name,
  collector_type: row.collector_type,
  status: row.status,
  capabilities: capabilitiesOf(row),
  sources_total: row.sources_total,
  last_collection: row.last_collection?.toISOString() ?? null,
});

export const presentRun = (row: RunRow) => ({
  id: row.id,
  collector_id: Number(row.collector_id),
  source_id: Number(row.source_id),
  source_name: row.source_name,
  status: row.status,
  trigger: row.trigger,
  queued_at: row.queued_at.toISOString(),
  started_at: row.started_at?.toISOString() ?? null,
  finished_at: row.finished_at?.toISOString() ?? null,
  attempts: row.attempts,
  counts: row.counts,
  error: row.error,
  watching_since: row.watching_since?.toISOString() ?? null,
});
