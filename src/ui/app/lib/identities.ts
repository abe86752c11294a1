import type {
  CompetingValue,
  DependencyGraph,
  IdentityConflict,
  IdentityGraph,
  NewIdentityDecision,
  ReconciledField,
} from './api-shapes.js';
import { scalar } from './format.js';

/*
 * What the identity views compute from the API's answers: the decisions the review queue sends,
 * the words for a field's provenance and its competing values, and an identity's graph in the
 * shape the dependency graph's drawing takes.
 */

/** A source as people read it: its name where the caller may list sources, else its id. */
export const sourceLabel = (names: ReadonlyMap<number, string>, sourceId: string): string =>
  names.get(Number(sourceId)) ?? `source ${sourceId}`;

/** A reconciled value in one line; none is a dash. */
export const valueText = (value: unknown): string => (value === null || value === undefined ? '—' : scalar(value));

const REASONS: Record<ReconciledField['reason'], string> = {
  pinned: 'pinned by a person',
  precedence: 'a precedence rule names the source',
  latest: 'the most recently seen source',
  stale: 'only stale sources report it',
};

/** Why a field shows the value it shows. */
export const reasonText = (reason: ReconciledField['reason']): string => REASONS[reason] ?? reason;

/** One competing value: what another observation reports, from which source, since when, and whether it is stale. */
export function competingLine(
  competing: CompetingValue,
  names: ReadonlyMap<number, string>,
  when: (iso: string) => string,
): string {
  return (
    `${valueText(competing.value)} from ${sourceLabel(names, competing.source_id)} since ${when(competing.since)}` +
    (competing.stale ? ' (stale)' : '')
  );
}

/** What a field's competing values say on hover: one line each. */
export function competingTitle(
  field: ReconciledField,
  names: ReadonlyMap<number, string>,
  when: (iso: string) => string,
): string {
  if (field.competing.length === 0) return 'No other source reports another value';
  return [
    `Competing value${field.competing.length === 1 ? '' : 's'}:`,
    ...field.competing.map((entry) => competingLine(entry, names, when)),
  ].join('\n');
}

/** A conflict's members, every group's, each CI once. */
export function memberIds(conflict: IdentityConflict): string[] {
  return [...new Set(conflict.groups.flatMap((group) => group.map((member) => member.ci_id)))];
}

/** Merging a conflict: every member of every group is one thing. */
export function mergeDecision(conflict: IdentityConflict, reason?: string): NewIdentityDecision {
  return { action: 'merge', ci_ids: memberIds(conflict), conflict_id: conflict.id, ...(reason ? { reason } : {}) };
}

/** Keeping a conflict's groups apart: one observation of each group stands for its group. */
export function keepApartDecision(conflict: IdentityConflict, reason?: string): NewIdentityDecision {
  const ids = conflict.groups.flatMap((group) => (group[0] ? [group[0].ci_id] : []));
  return { action: 'keep_apart', ci_ids: [...new Set(ids)], conflict_id: conflict.id, ...(reason ? { reason } : {}) };
}

/** The node type the drawing gives the identity itself, so the legend names it apart from CI types. */
export const IDENTITY_NODE_TYPE = 'identity';

/**
 * An identity's graph as the dependency graph's drawing takes it: the identity at its centre, its
 * observations one step away, what they relate to two steps away. Nodes carry no status: all are
 * drawn active.
 */
export function asDependencyGraph(graph: IdentityGraph): DependencyGraph {
  const ids = new Set(graph.nodes.map((node) => node.id));
  return {
    nodes: graph.nodes.map((node) => {
      const depth = node.type === 'identity' ? 0 : node.observation ? 1 : 2;
      return {
        ci_id: node.id,
        name: node.name,
        ci_type: node.type === 'identity' ? IDENTITY_NODE_TYPE : (node.ci_type ?? 'unknown'),
        depth,
        namespace: null,
        paths_count: 1,
        status: 'active' as const,
      };
    }),
    // an edge to a node not drawn would stop the drawing
    edges: graph.edges
      .filter((edge) => ids.has(edge.from) && ids.has(edge.to))
      .map((edge) => ({ from: edge.from, to: edge.to, relationship_type: edge.type })),
    hidden: 0,
    truncated: false,
  };
}
