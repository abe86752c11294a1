import type { Sql } from 'postgres';
import type { Principal } from '../auth/principal.js';
import { columnsOf, visibleTo } from '../auth/scope.js';

/**
 * One step back (sql/0019_time_machine.sql, cinv_record_undo): `v` is put back at the path `p`
 * (top-level column, then keys into raw_data or type_data); without `v` the key did not exist.
 */
export interface UndoOp {
  p: string[];
  v?: unknown;
}

/** A CI row as it was stored at a moment. */
export interface CiState {
  ci_id: string;
  tenant_id: string;
  source_id: string;
  scope_id: string | null;
  external_id: string;
  ci_type: string;
  name: string;
  namespace: string | null;
  status: 'active' | 'inactive' | 'archived';
  status_updated_at: Date | null;
  raw_data: Record<string, unknown>;
  type_data: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

const TIMES = new Set(['status_updated_at', 'updated_at']);

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Applies one write's way back to a row, in place. Paths only ever lead through objects (see cinv_jsonb_undo). */
export function applyUndo(state: Record<string, unknown>, ops: readonly UndoOp[]): void {
  for (const op of ops) {
    const path = op.p;
    let node: Record<string, unknown> = state;
    for (const key of path.slice(0, -1)) {
      const next = Object.hasOwn(node, key) ? node[key] : undefined;
      if (!isObject(next)) throw new Error(`undo path ${JSON.stringify(path)} does not lead through objects`);
      node = next;
    }
    const last = path[path.length - 1]!;
    if (!('v' in op)) {
      delete node[last];
    } else if (path.length === 1 && TIMES.has(last)) {
      node[last] = op.v === null ? null : new Date(op.v as string);
    } else {
      // defineProperty: a key named __proto__ is data like any other
      Object.defineProperty(node, last, { value: op.v, enumerable: true, writable: true, configurable: true });
    }
  }
}

interface Found extends CiState {
  removed_at: Date | null;
  undo: UndoOp[][];
}

/**
 * The CI as it was stored at `at` (ISO 8601): its row now, or its last row if it was removed since,
 * taken back through every write after the moment, newest first. Undefined when it did not exist
 * then, or lies outside the principal's data scopes now or then.
 */
export async function ciStateAt(sql: Sql, principal: Principal, ciId: string, at: string): Promise<CiState | undefined> {
  const columns = sql`ci_id, tenant_id, source_id::text as source_id, scope_id, external_id, ci_type, name, namespace, status,
                      status_updated_at, raw_data, type_data, created_at, updated_at`;
  const [found] = await sql<Found[]>`
    with base as (
      select ${columns}, null::timestamptz as removed_at from configuration_items c
      where c.ci_id = ${ciId} and ${visibleTo(sql, principal, columnsOf('c'))}
      union all
      select ${columns}, removed_at from ci_tombstones c
      where c.ci_id = ${ciId} and ${visibleTo(sql, principal, columnsOf('c'))}
    )
    select base.*, coalesce((
      select json_agg(u.undo order by u.at desc, u.id desc) from ci_undo u
      where u.tenant_id = base.tenant_id and u.ci_id = base.ci_id and u.at > ${at}::text::timestamptz), '[]') as undo
    from base
    where base.created_at <= ${at}::text::timestamptz and (base.removed_at is null or base.removed_at > ${at}::text::timestamptz)`;
  if (!found) return undefined;
  const { removed_at: _removed, undo, ...state } = found;
  for (const ops of undo) applyUndo(state as unknown as Record<string, unknown>, ops);
  if (!sees(principal, state.source_id, state.scope_id)) return undefined;
  return state;
}

/** visibleTo for a row rebuilt in memory: its instance then must be one the principal may see too. */
function sees(principal: Principal, sourceId: string, scopeId: string | null): boolean {
  if (principal.superadmin || principal.scopes === 'all') return true;
  return principal.scopes.some((scope) => scope.sourceId === sourceId && (scope.scopeId === null || scope.scopeId === scopeId));
}

/** The moment from which the inventory can be read as it was (sql/0019: an installation's upgrade). */
export async function exactSince(sql: Sql): Promise<Date | null> {
  const [row] = await sql<{ exact_since: Date | null }[]>`
    select case when exact_since = '-infinity' then null else exact_since end as exact_since from time_machine`;
  return row?.exact_since ?? null;
}
