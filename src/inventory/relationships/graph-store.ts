import type { Sql } from 'postgres';
import type { Principal } from '../../platform/auth/principal.js';
import { columnsOf, visibleTo } from '../../platform/auth/scope.js';
import { cisAt, visibleNow } from '../../history/records/as-of.js';
import { DEPENDENCY_REVERSED } from './schema.js';
import { edges } from './edges.js';

/** A relationship met on a walk: `near` is the CI walked from, `far` the one it leads to. */
export interface WalkedEdge {
  id: string;
  from_ci_id: string;
  to_ci_id: string;
  relationship_type: string;
  near: string;
  far: string;
  /** `down`: far depends on near; `up`: near depends on far. */
  way: 'down' | 'up';
  /** Set on a relationship a CI left behind when it left the active inventory. */
  ended_at: Date | null;
}

/** A CI as a walk sees it; `visible` whether the principal may see it (now and, at a moment, then). */
export interface WalkedCi {
  ci_id: string;
  name: string;
  namespace: string | null;
  ci_type: string;
  status: 'active' | 'inactive' | 'archived';
  visible: boolean;
}

export interface Frontier {
  /** CIs walked downstream from: the relationships of those they are depended on by. */
  down: readonly string[];
  /** CIs walked upstream from. */
  up: readonly string[];
  types: readonly string[] | null;
  asOf?: string;
  /** Also walk the relationships CIs left behind when they left the active inventory (see `edges`). */
  leftBehind?: boolean;
}

/**
 * Every relationship that leads one step on from a frontier, both ways at once, in one statement:
 * each arm is one index range per frontier CI (the outgoing unique key, the incoming index).
 */
export function edgesFrom(sql: Sql, principal: Principal, frontier: Frontier): Promise<WalkedEdge[]> {
  const tenant = principal.tenantId;
  const rows = edges(sql, frontier.asOf, { leftBehind: frontier.leftBehind });
  const reversed = DEPENDENCY_REVERSED as string[];
  const typed = frontier.types ? sql`and r.relationship_type = any(${frontier.types as string[]}::text[])` : sql``;
  const arm = (way: 'down' | 'up', nearEnd: 'from' | 'to', dependentIsFrom: boolean, ids: readonly string[]) => {
    const near = nearEnd === 'from' ? sql`r.from_ci_id` : sql`r.to_ci_id`;
    const far = nearEnd === 'from' ? sql`r.to_ci_id` : sql`r.from_ci_id`;
    const kind = dependentIsFrom
      ? sql`r.relationship_type <> all(${reversed}::text[])`
      : sql`r.relationship_type = any(${reversed}::text[])`;
    return sql`
      select r.id::text as id, r.from_ci_id, r.to_ci_id, r.relationship_type, ${near} as near, ${far} as far, ${way}::text as way, r.ended_at
      from ${rows} r where r.tenant_id = ${tenant} and ${near} = any(${ids as string[]}::uuid[]) and ${kind} ${typed}`;
  };
  const arms = [];
  // downstream from X: those that depend on X, the from end of X's incoming relationships (the to end for reversed types)
  if (frontier.down.length > 0)
    arms.push(arm('down', 'to', true, frontier.down), arm('down', 'from', false, frontier.down));
  if (frontier.up.length > 0) arms.push(arm('up', 'from', true, frontier.up), arm('up', 'to', false, frontier.up));
  if (arms.length === 0) return Promise.resolve([]);
  return sql<WalkedEdge[]>`${arms.reduce((union, part) => sql`${union} union all ${part}`)}`;
}

/** The CIs named, as they are or as they were at the moment, each saying whether the principal may see it. */
export function cisForWalk(sql: Sql, principal: Principal, ids: readonly string[], asOf?: string): Promise<WalkedCi[]> {
  if (ids.length === 0) return Promise.resolve([]);
  const wanted = sql`${ids as string[]}::uuid[]`;
  if (asOf === undefined) {
    return sql<WalkedCi[]>`
      select n.ci_id, n.name, n.namespace, n.ci_type, n.status, ${visibleTo(sql, principal, columnsOf('n'))} as visible
      from configuration_items n where n.tenant_id = ${principal.tenantId} and n.ci_id = any(${wanted})`;
  }
  const then = cisAt(sql, asOf, 'n', {
    visible: (row) => sql`${sql(row)}.tenant_id = ${principal.tenantId}`,
    key: (row) => sql`${sql(row)}.ci_id = any(${wanted})`,
  });
  return sql<WalkedCi[]>`
    select n.ci_id, n.name, n.namespace, n.ci_type, n.status,
           ${visibleTo(sql, principal, columnsOf('n'))} and ${visibleNow(sql, principal, sql`n.ci_id`)} as visible
    from ${then} n`;
}
