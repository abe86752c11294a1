import { hash } from 'node:crypto';
import type { UniversalRecord } from './records.js';
import { stripVolatile, volatileRules, withoutVolatile } from './volatile.js';

/** A record reduced to what counts as its content: volatile paths removed. */
export interface Content {
  ci_type: string;
  name: string;
  namespace: string | null;
  raw: Record<string, unknown>;
  typeData: Record<string, unknown>;
}

export function contentOf(
  record: Pick<UniversalRecord, 'ci_type' | 'name' | 'namespace' | 'raw_data' | 'type_data'>,
): Content {
  const rules = volatileRules(record.ci_type);
  return {
    ci_type: record.ci_type,
    name: record.name,
    namespace: record.namespace ?? null,
    raw: stripVolatile(record.raw_data, rules.raw),
    typeData: stripVolatile(record.type_data ?? {}, rules.type),
  };
}

/**
 * The record's `type_data.metrics`, as JSON text, or null: kept beside `last_seen` rather than in
 * the CI row, and outside the digest, since it moves on every collection.
 */
export function metricsOf(record: Pick<UniversalRecord, 'type_data'>): string | null {
  const metrics = record.type_data?.metrics;
  return metrics === undefined || metrics === null ? null : JSON.stringify(metrics);
}

/**
 * Digest of everything the reconciler stores in the CI row for a record (volatile paths and
 * metrics excepted): equal digests mean the stored row is already right and only `last_seen` and
 * the metrics move. Relationships are part of it so that an unchanged object skips relationship
 * work too.
 *
 * The digest is only a gate in front of the field diff, which ignores key order. Plain
 * JSON.stringify is several times faster than a key-sorting serialiser; a source that reorders
 * keys costs an extra row write with an empty diff (no change record), never a wrong result. The
 * record is serialised once, in place, with its volatile paths masked (see withoutVolatile).
 */
export function contentHash(record: UniversalRecord): string {
  const rules = volatileRules(record.ci_type);
  const relationships = record.relationships
    ? record.relationships.map((r) => `${r.type}\u0000${r.target_external_id}`).sort()
    : null;
  const text = withoutVolatile(record.raw_data, rules.raw, (raw) =>
    withoutVolatile(record.type_data ?? {}, rules.type, (typeData) =>
      JSON.stringify([record.ci_type, record.name, record.namespace ?? null, raw, typeData, relationships]),
    ),
  );
  return hash('sha256', text);
}
