import { isoTime } from '../../platform/http/schemas.js';
import type { CiAsOf } from './service.js';
import type { CiRow } from './page-store.js';

export function presentCi(row: CiRow) {
  return {
    ci_id: row.ci_id,
    name: row.name,
    namespace: row.namespace,
    ci_type: row.ci_type,
    status: row.status,
    status_updated_at: isoTime(row.status_updated_at),
    last_seen: isoTime(row.last_seen),
    created_at: isoTime(row.created_at),
    updated_at: isoTime(row.updated_at),
    raw_data: row.raw_data,
  };
}

/** A list row: the spec's fields, and where the CI comes from. */
export function presentListedCi(row: CiRow) {
  return { ...presentCi(row), source_id: Number(row.source_id), scope_id: row.scope_id ?? null };
}

/** A CI as it was: the detail's fields, `last_seen` null (not history), and the moment shown. */
export function presentCiAsOf(state: CiAsOf) {
  return {
    ci_id: state.ci_id,
    name: state.name,
    namespace: state.namespace,
    ci_type: state.ci_type,
    status: state.status,
    status_updated_at: state.status_updated_at,
    last_seen: null,
    created_at: state.created_at,
    updated_at: state.updated_at,
    raw_data: state.raw_data,
    type_data: state.type_data,
    source: state.source,
    scope_id: state.scope_id,
    as_of: state.as_of,
  };
}

function valueAt(document: unknown, path: readonly string[]): unknown {
  let node = document;
  for (const key of path) {
    // own keys only: `__proto__` or `constructor` in a path must not reach Object's members
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return null;
    node = (node as Record<string, unknown>)[key];
  }
  return node === undefined ? null : node;
}

/** Normalises `include_attributes`: repeated and comma-separated, with or without `raw_data.`. */
export function attributePaths(raw: readonly string[] | undefined): string[] {
  const paths = (raw ?? [])
    .flatMap((entry) => entry.split(','))
    .map((p) => p.trim())
    .filter(Boolean);
  return [...new Set(paths)];
}

export function pickAttributes(rawData: Record<string, unknown>, paths: readonly string[]): Record<string, unknown> {
  // fromEntries defines own properties, so a path named `__proto__` is a key like any other
  return Object.fromEntries(paths.map((path) => [path, valueAt(rawData, path.replace(/^raw_data\./, '').split('.'))]));
}

/**
 * The `include_type_data` item: the type-specific object is named after the kind (`k8s.pod` →
 * `pod`). A kind named like the item's own `name` or `namespace` (`k8s.namespace`) would overwrite
 * them; it takes its `<kind>_data` name instead (`namespace_data`).
 */
export function typeDataKey(ciType: string): string {
  const kind = ciType.slice(ciType.indexOf('.') + 1);
  return kind === 'name' || kind === 'namespace' ? `${kind}_data` : kind;
}

export function presentTypeData(row: CiRow) {
  const kind = typeDataKey(row.ci_type);
  return {
    id: row.ci_id,
    type: row.ci_type,
    attributes: { name: row.name, namespace: row.namespace, [kind]: row.type_data ?? {} },
  };
}
