import { capabilitiesOf } from '../types/registry.js';
import type { RunRow } from './runs/runs.js';
import type { CollectorRow } from './store.js';

export const presentCollector = (row: CollectorRow) => ({
  id: Number(row.id),
  name: row.name,
  collector_type: row.collector_type,
  status: row.status,
  capabilities: capabilitiesOf(row.collector_type),
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
