import type { Principal } from '../../platform/auth/principal.js';
import { checkedAsOf } from '../configuration-items/service.js';
import type { AppContext } from '../../context.js';
import { notFound, unprocessable } from '../../platform/errors.js';
import { cisForWalk, edgesFrom, type WalkedCi, type WalkedEdge } from './graph-store.js';
import type { GraphQuery } from './schema.js';

export interface GraphNode {
  ci_id: string;
  name: string;
  namespace: string | null;
  ci_type: string;
  status: 'active' | 'inactive' | 'archived';
  depth: number;
  paths_count: number;
}

export interface DependencyGraph {
  nodes: GraphNode[];
  /** `ended_at` only on a relationship a CI left behind when it left the active inventory. */
  edges: { from: string; to: string; relationship_type: string; ended_at?: string }[];
  truncated: boolean;
  hidden: number;
  as_of?: string;
}

/**
 * With `through=all`, the CIs walked through without being returned are bounded too, so that a
 * narrow `ci_types` over a dense graph cannot walk the whole inventory.
 */
const WALKED_THROUGH_LIMIT = 50_000;

/** Splits a comma list; sorted and de-duplicated so that equal filters bind cursors equally; null when empty. */
export const commaList = (raw: string | undefined): string[] | null => {
  const items = [
    ...new Set(
      (raw ?? '')
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean),
    ),
  ].sort();
  return items.length > 0 ? items : null;
};

/** Code-unit order: stable across locales, and far cheaper than localeCompare over thousands of CIs. */
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

const byNearness = (a: WalkedCi, b: WalkedCi) =>
  compare(a.ci_type, b.ci_type) || compare(a.name, b.name) || compare(a.ci_id, b.ci_id);

/** A walk under way: what it has met, returned and walked through so far. */
interface Walk {
  query: GraphQuery;
  /** Whether a CI is of the types asked for (returned, not only walked through). */
  kept: (ci: WalkedCi) => boolean;
  returned: Map<string, GraphNode>;
  /** Each way on its own: the CIs it reached, and how many shortest walks of that way reach each. */
  paths: { down: Map<string, number>; up: Map<string, number> };
  frontier: { down: string[]; up: string[] };
  known: Map<string, WalkedCi>;
  walkedEdges: WalkedEdge[];
  hidden: Set<string>;
  walkedThrough: Set<string>;
  truncated: boolean;
}

/** The walk before its first step: the centre alone. */
function startWalk(ciId: string, centre: WalkedCi, query: GraphQuery): Walk {
  const ciTypes = commaList(query.ci_types);
  const { ci_id: _id, visible: _visible, ...centreFields } = centre;
  return {
    query,
    kept: (ci) => ciTypes === null || ciTypes.includes(ci.ci_type),
    returned: new Map<string, GraphNode>([[ciId, { ci_id: ciId, ...centreFields, depth: 0, paths_count: 1 }]]),
    paths: { down: new Map([[ciId, 1]]), up: new Map([[ciId, 1]]) },
    frontier: {
      down: query.direction === 'upstream' ? [] : [ciId],
      up: query.direction === 'downstream' ? [] : [ciId],
    },
    known: new Map<string, WalkedCi>([[ciId, centre]]),
    walkedEdges: [],
    hidden: new Set<string>(),
    walkedThrough: new Set<string>(),
    truncated: false,
  };
}

type Gained = { down: Map<string, number>; up: Map<string, number> };

/** The relationships met in one step that may be walked, and the CIs they reach first, by way, with their walks' counts. */
function gainedBy(walk: Walk, met: readonly WalkedEdge[]): Gained {
  const { query, paths } = walk;
  const gained: Gained = { down: new Map<string, number>(), up: new Map<string, number>() };
  for (const edge of met) {
    const far = walk.known.get(edge.far);
    // a neighbour removed for good leaves a dangling relationship: nothing to walk to
    if (!far) continue;
    if (!far.visible) {
      walk.hidden.add(edge.id);
      continue;
    }
    if (far.status !== 'active' && !query.include_inactive) continue;
    if (!walk.kept(far) && query.through === 'matching') continue;
    walk.walkedEdges.push(edge);
    if (paths[edge.way].has(edge.far)) continue;
    gained[edge.way].set(edge.far, (gained[edge.way].get(edge.far) ?? 0) + paths[edge.way].get(edge.near)!);
  }
  return gained;
}

/** Admits a step's arrivals, nearest first in a stable order, until the budget is spent; they are the next frontier. */
function admitStep(walk: Walk, depth: number, gained: Gained): void {
  const arrivals = [...new Set([...gained.down.keys(), ...gained.up.keys()])]
    .map((id) => walk.known.get(id)!)
    .sort(byNearness);
  const admitted = new Set<string>();
  for (const ci of arrivals) {
    if (walk.kept(ci) && !walk.returned.has(ci.ci_id)) {
      if (walk.returned.size >= walk.query.max_nodes) {
        walk.truncated = true;
        continue;
      }
      const { ci_id: id, visible: _v, ...fields } = ci;
      walk.returned.set(id, {
        ci_id: id,
        ...fields,
        depth,
        paths_count: (gained.down.get(id) ?? 0) + (gained.up.get(id) ?? 0),
      });
    } else if (!walk.kept(ci) && !walk.walkedThrough.has(ci.ci_id)) {
      if (walk.walkedThrough.size >= WALKED_THROUGH_LIMIT) {
        walk.truncated = true;
        continue;
      }
      walk.walkedThrough.add(ci.ci_id);
    }
    admitted.add(ci.ci_id);
  }
  for (const way of ['down', 'up'] as const) {
    for (const [id, count] of gained[way]) if (admitted.has(id)) walk.paths[way].set(id, count);
  }
  walk.frontier = {
    down: [...gained.down.keys()].filter((id) => admitted.has(id)),
    up: [...gained.up.keys()].filter((id) => admitted.has(id)),
  };
}

/** The graph a finished walk found: its returned CIs and the relationships between them, in a stable order. */
function graphOf(walk: Walk, asOf: string | undefined): DependencyGraph {
  const edgeSet = new Map<string, DependencyGraph['edges'][number]>();
  for (const edge of walk.walkedEdges) {
    if (walk.returned.has(edge.from_ci_id) && walk.returned.has(edge.to_ci_id)) {
      edgeSet.set(edge.id, {
        from: edge.from_ci_id,
        to: edge.to_ci_id,
        relationship_type: edge.relationship_type,
        ...(edge.ended_at ? { ended_at: edge.ended_at.toISOString() } : {}),
      });
    }
  }
  const nodes = [...walk.returned.values()].sort(
    (a, b) =>
      a.depth - b.depth || compare(a.ci_type, b.ci_type) || compare(a.name, b.name) || compare(a.ci_id, b.ci_id),
  );
  const edgesOut = [...edgeSet.values()].sort(
    (a, b) => compare(a.from, b.from) || compare(a.to, b.to) || compare(a.relationship_type, b.relationship_type),
  );
  return {
    nodes,
    edges: edgesOut,
    truncated: walk.truncated,
    hidden: walk.hidden.size,
    ...(asOf ? { as_of: asOf } : {}),
  };
}

/**
 * The CIs within `depth` relationships of one CI, breadth first, one statement per step for every
 * CI of the step at once. Downstream and upstream are walked apart (a walk that went down from a
 * node to its pods does not come back up to every other node of those pods), a CI met twice keeps
 * its nearest depth, and the CIs outside the principal's data scopes are neither returned nor
 * walked through: the relationships that lead to them are counted as `hidden`.
 */
export async function dependencyGraph(
  app: AppContext,
  principal: Principal,
  ciId: string,
  query: GraphQuery,
): Promise<DependencyGraph> {
  const asOf = query.as_of === undefined ? undefined : await checkedAsOf(app, query.as_of);
  const [centre] = await cisForWalk(app.sql, principal, [ciId], asOf);
  if (!centre?.visible)
    throw notFound(asOf ? 'Configuration item not found at that moment' : 'Configuration item not found', {
      ci_id: ciId,
      ...(asOf ? { as_of: asOf } : {}),
    });
  const types = commaList(query.relationship_types);
  const walk = startWalk(ciId, centre, query);
  for (
    let depth = 1;
    depth <= query.depth && walk.frontier.down.length + walk.frontier.up.length > 0 && !walk.truncated;
    depth++
  ) {
    const met = await edgesFrom(app.sql, principal, {
      ...walk.frontier,
      types,
      asOf,
      leftBehind: query.include_inactive && asOf === undefined,
    });
    const unknown = [...new Set(met.map((edge) => edge.far))].filter((id) => !walk.known.has(id));
    for (const ci of await cisForWalk(app.sql, principal, unknown, asOf)) walk.known.set(ci.ci_id, ci);
    admitStep(walk, depth, gainedBy(walk, met));
  }
  return graphOf(walk, asOf);
}

/** The most CIs a radius for the change history may hold. */
export const RADIUS_LIMIT = 5000;

/**
 * The CIs around a CI, itself included, as the graph walks them now (inactive and archived ones
 * too: what was around when something broke may have gone quiet since), for reads that narrow to
 * them. A radius beyond RADIUS_LIMIT is refused rather than cut: a cut radius would silently leave
 * changes out.
 */
export async function radiusOf(
  app: AppContext,
  principal: Principal,
  ciId: string,
  walk: { depth?: number; direction?: GraphQuery['direction'] },
): Promise<string[]> {
  const graph = await dependencyGraph(app, principal, ciId, {
    depth: walk.depth ?? 2,
    direction: walk.direction ?? 'both',
    through: 'matching',
    include_inactive: true,
    max_nodes: RADIUS_LIMIT,
  });
  if (graph.truncated) {
    throw unprocessable(`More than ${RADIUS_LIMIT} CIs lie within that radius; walk less deep or in one direction`, {
      field: 'related_to',
      limit: RADIUS_LIMIT,
    });
  }
  return graph.nodes.map((node) => node.ci_id);
}
