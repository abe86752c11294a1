import { createHash } from 'node:crypto';
import type { UniversalRecord } from './records.js';
import { stripVolatile, volatileRules } from './volatile.js';

/** A record reduced to what counts as its content: volatile paths removed. */
export interface Content {
  ci_type: string;
  name: string;
  namespace: string | null;
  raw: Record<string, unknown>;
  typeData: Record<string, unknown>;
}

export function contentOf(record: Pick<UniversalRecord, 'ci_type' | 'name' | 'namespace' | 'raw_data' | 'type_data'>): Content {
  const rules = volatileRules(record.ci_type);
  return {
    ci_type: record.ci_type,
    name: record.name,
    namespace: record.namespace ?? null,
    raw: stripVolatile(record.raw_data, rules.raw),
    typeData: record.type_data ?? {},
  };
}

/**
 * Digest of everything the reconciler stores for a record (volatile paths excepted): equal digests
 * mean the stored row is already right and only `last_seen` moves. Relationships are part of it
 * so that an unchanged object skips relationship work too.
 *
 * The digest is only a gate in front of the field diff, which ignores key order. Plain
 * JSON.stringify is several times faster than a key-sorting serialiser; a source that reorders
 * keys costs an extra row write with an empty diff (no change record), never a wrong result.
 */
export function contentHash(record: UniversalRecord): string {
  const content = contentOf(record);
  const relationships = record.relationships ? record.relationships.map((r) => `${r.type}\u0000${r.target_external_id}`).sort() : null;
  return createHash('sha256').update(JSON.stringify([content.ci_type, content.name, content.namespace, content.raw, content.typeData, relationships])).digest('hex');
}
