import { apiTimeOfUtcText } from '../../platform/query/exact-time.js';
import type { Direction } from './schema.js';
import type { RelationshipRow } from './store.js';

const DIRECTION_OF_RANK: Record<0 | 1, Direction> = { 0: 'outgoing', 1: 'incoming' };

/** A relationship seen from the CI it was listed for. */
export function presentRelationship(row: RelationshipRow) {
  return {
    id: row.id,
    relationship_type: row.relationship_type,
    direction: DIRECTION_OF_RANK[row.direction_rank],
    related_ci_id: row.related_ci_id,
    related_ci_name: row.related_ci_name,
    related_ci_type: row.related_ci_type,
    related_ci_status: row.related_ci_status,
    created_at: apiTimeOfUtcText(row.created_at),
    last_seen: apiTimeOfUtcText(row.last_seen),
    ended_at: row.ended_at === null ? null : apiTimeOfUtcText(row.ended_at),
  };
}
