import type { DeliveryLogRow } from './batch-store.js';
import type { SubscriptionRow } from './store.js';

/**
 * A URL as it may be shown: the values of its query (often a token) replaced by `***`, and any
 * credentials (refused since, but perhaps stored before) too.
 */
function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.username) parsed.username = '***';
    if (parsed.password) parsed.password = '***';
    for (const name of new Set(parsed.searchParams.keys())) parsed.searchParams.set(name, '***');
    return parsed.href;
  } catch {
    return url;
  }
}

/** A subscription as answers show it: neither its secrets nor its header values. */
export function presentSubscription(row: SubscriptionRow, now: Date) {
  return {
    id: row.id,
    name: row.name,
    sink: {
      type: row.sink.type,
      url: shownUrl(row.sink.url),
      ...(row.sink.type === 'nats' ? { subject: row.sink.subject } : { header_names: row.sink.header_names ?? [] }),
    },
    filter: row.filters,
    search: row.search,
    quality_alerts: row.quality_alerts,
    enabled: row.enabled,
    state: row.state,
    state_reason: row.state_reason,
    owner: { kind: row.owner_kind, id: row.owner_id, name: row.owner_name },
    secret_rotating_until: row.previous_until && row.previous_until > now ? row.previous_until.toISOString() : null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function presentDelivery(row: DeliveryLogRow) {
  return {
    id: row.id,
    sequence: Number(row.sequence),
    message_id: row.message_id,
    records: row.records,
    status: row.status,
    attempts: row.attempts,
    response_status: row.response_status,
    response_ms: row.response_ms,
    error: row.error,
    last_attempt_at: row.last_attempt_at?.toISOString() ?? null,
    next_attempt_at: row.status === 'pending' ? (row.next_attempt_at?.toISOString() ?? null) : null,
    created_at: row.created_at.toISOString(),
    delivered_at: row.delivered_at?.toISOString() ?? null,
  };
}
