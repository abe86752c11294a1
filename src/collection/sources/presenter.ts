import type { SourceRow } from './store.js';

export function presentSource(row: SourceRow) {
  const schedule = row.schedule_config;
  return {
    id: Number(row.id),
    collector_id: Number(row.collector_id),
    name: row.name,
    endpoint: row.endpoint,
    status: row.status as 'enabled' | 'disabled',
    config: row.config,
    schedule_config: { enabled: schedule.enabled === true, interval_minutes: Number(schedule.interval_minutes ?? 60) },
    health_status: row.health_status,
    last_collection: row.last_collection?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** A source with its collector, its last error and which credentials it has (never what they are). */
export const presentDetail = (row: SourceRow) => ({
  ...presentSource(row),
  collector: { id: Number(row.collector_id), name: row.collector_name, collector_type: row.collector_type },
  last_error: row.last_error,
  credentials: row.credentials
    ? { type: row.credentials.type, updated_at: new Date(row.credentials.updated_at).toISOString() }
    : null,
});
