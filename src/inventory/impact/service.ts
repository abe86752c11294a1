import { can, type Principal } from '../../platform/auth/principal.js';
import { latestChangesOf } from '../../history/changes/service.js';
import type { AppContext } from '../../context.js';
import { forbidden } from '../../platform/errors.js';
import { dependencyGraph, RADIUS_LIMIT, type GraphNode } from '../relationships/graph.js';
import type { ImpactQuery } from './schema.js';

type Status = GraphNode['status'];

interface StatusCounts {
  active: number;
  inactive: number;
  archived: number;
  total: number;
}

const none = (): StatusCounts => ({ active: 0, inactive: 0, archived: 0, total: 0 });
const count = (counts: StatusCounts, status: Status) => {
  counts[status]++;
  counts.total++;
};

/** The reached CIs by depth, each depth by type, each counted by status. */
function byDepth(nodes: readonly GraphNode[]) {
  const depths = new Map<number, { counts: StatusCounts; types: Map<string, StatusCounts> }>();
  for (const node of nodes) {
    if (node.depth === 0) continue;
    const entry = depths.get(node.depth) ?? { counts: none(), types: new Map<string, StatusCounts>() };
    depths.set(node.depth, entry);
    count(entry.counts, node.status);
    const type = entry.types.get(node.ci_type) ?? none();
    entry.types.set(node.ci_type, type);
    count(type, node.status);
  }
  return [...depths.entries()]
    .sort(([a], [b]) => a - b)
    .map(([depth, { counts, types }]) => ({
      depth,
      ...counts,
      by_type: [...types.entries()]
        .map(([ci_type, typeCounts]) => ({ ci_type, ...typeCounts }))
        .sort((a, b) => b.total - a.total || a.ci_type.localeCompare(b.ci_type)),
    }));
}

/**
 * The on-call summary of a CI: what depends on it, counted by depth, type and status, and the
 * latest changes of what it depends on (itself included). Both walks are the dependency graph's,
 * with inactive and archived CIs (they count, and they may be why), at most RADIUS_LIMIT CIs each.
 */
export async function impactOf(app: AppContext, principal: Principal, ciId: string, query: ImpactQuery) {
  // the route asks for relationships:read; the summary reads the change history too
  if (!can(principal, 'changes', 'read'))
    throw forbidden('This key may not read changes', { resource: 'changes', action: 'read' });
  const walk = (direction: 'downstream' | 'upstream') =>
    dependencyGraph(app, principal, ciId, {
      depth: query.depth,
      direction,
      through: 'matching',
      include_inactive: true,
      max_nodes: RADIUS_LIMIT,
      as_of: query.as_of,
    });
  const [down, up] = await Promise.all([walk('downstream'), walk('upstream')]);
  const depthOf = new Map(up.nodes.map((node) => [node.ci_id, node.depth]));
  const latest = await latestChangesOf(app, principal, [...depthOf.keys()], query.changes, down.as_of);
  return {
    ci_id: ciId,
    depth: query.depth,
    downstream: {
      total: down.nodes.length - 1,
      truncated: down.truncated,
      hidden: down.hidden,
      by_depth: byDepth(down.nodes),
    },
    upstream: {
      total: up.nodes.length - 1,
      truncated: up.truncated,
      hidden: up.hidden,
      latest: latest.map((row) => ({ row, depth: depthOf.get(row.ci_id) ?? 0 })),
    },
    ...(down.as_of ? { as_of: down.as_of } : {}),
  };
}
