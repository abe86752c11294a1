import { createHash } from 'node:crypto';
import { stringify } from 'safe-stable-stringify';
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
 */
export function contentHash(record: UniversalRecord): Buffer {
  const content = contentOf(record);
  const relationships = (record.relationships ?? []).map((r) => `${r.type}\u0000${r.target_external_id}`).sort();
  const document = stringify({ ...content, relationships: record.relationships ? relationships : null }) ?? '';
  return createHash('sha256').update(document).digest();
}
