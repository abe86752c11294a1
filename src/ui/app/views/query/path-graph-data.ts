import type { Hop, Query } from '../../../../platform/query-language/ast.js';
import { parseQuery } from '../../../../platform/query-language/parse.js';
import { api } from '../../lib/api';
import type { DependencyGraph, GraphNode, QueryAnswer, RelationshipPage } from '../../lib/api-shapes';
import { bodyOf, type Asked } from './asked';

/** CIs drawn per stage of the path, relationships asked per hop, and how many requests at once. */
const PER_STAGE = 100;
const ASKED_PER_HOP = 25;
const AT_ONCE = 4;

export interface PathDrawing {
  graph: DependencyGraph;
  /** The CIs of each stage: the first match's, then what each hop reached that held the next match. */
  stages: GraphNode[][];
  /** Whether a stage had more CIs than were drawn, or a hop more CIs than were asked for their relationships. */
  cut: boolean;
}

/** The text of the path up to each match: `A`, `A -[r]-> B`, … (a hop without a match ends at the hop). */
export function stageTexts(text: string, query: Query): string[] {
  return query.path.filter((_, index) => index % 2 === 0).map((match) => text.slice(0, match.at.end));
}

type Row = { ci_id: string; fields: Record<string, unknown> };

const nodeOf = (row: Row, depth: number): GraphNode => ({
  ci_id: row.ci_id,
  name: String(row.fields.name ?? row.ci_id),
  ci_type: String(row.fields.ci_type ?? ''),
  namespace: (row.fields.namespace as string | null) ?? null,
  status: (row.fields.status as GraphNode['status']) ?? 'active',
  depth,
  paths_count: 1,
});

/** Each stage's CIs, by a query of the path up to its match (the last with `compare_to`, as the answer is). */
async function stagesOf(
  asked: Asked,
  texts: string[],
  signal: AbortSignal,
): Promise<{ stages: GraphNode[][]; cut: boolean }> {
  let cut = false;
  const stages = await Promise.all(
    texts.map(async (text, depth) => {
      const last = depth === texts.length - 1;
      const body = bodyOf(
        {
          ...asked,
          q: `${text} | fields ci_id, name, ci_type, namespace, status`,
          compareTo: last ? asked.compareTo : undefined,
        },
        { limit: PER_STAGE },
      );
      const answer = await api<QueryAnswer>('/api/v1/query', { method: 'POST', body, signal });
      if (answer.kind !== 'rows') return [];
      if (answer.next_cursor) cut = true;
      return answer.items.map((row) => nodeOf(row, depth));
    }),
  );
  return { stages, cut };
}

/** Runs `work` over `items`, a few at a time. */
async function inTurns<T, R>(items: readonly T[], work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < items.length; i += AT_ONCE)
    results.push(...(await Promise.all(items.slice(i, i + AT_ONCE).map(work))));
  return results;
}

type Edge = DependencyGraph['edges'][number];

/** The relationships of a one-step hop between the CIs before it and those it reached, asked from its nearer side. */
async function hopEdges(
  asked: Asked,
  hop: Hop,
  near: GraphNode[],
  far: GraphNode[],
  signal: AbortSignal,
): Promise<Edge[]> {
  const farIds = new Set(far.map((node) => node.ci_id));
  const query = {
    limit: 500,
    ...(hop.types ? { relationship_types: hop.types.map((t) => t.name).join(',') } : {}),
    ...(hop.direction === 'out' ? { direction: 'outgoing' } : hop.direction === 'in' ? { direction: 'incoming' } : {}),
    ...(asked.asOf ? { as_of: asked.asOf } : {}),
  };
  const pages = await inTurns(near.slice(0, ASKED_PER_HOP), (node) =>
    api<RelationshipPage>(`/api/v1/configuration-items/${node.ci_id}/relationships`, { query, signal }).then((page) =>
      page.items
        .filter((item) => farIds.has(item.related_ci_id))
        .map((item) => ({
          from: item.direction === 'outgoing' ? node.ci_id : item.related_ci_id,
          to: item.direction === 'outgoing' ? item.related_ci_id : node.ci_id,
          relationship_type: item.relationship_type,
        })),
    ),
  );
  return pages.flat();
}

/**
 * The path drawn as a graph: each stage's CIs, and the relationships of each one-step hop between
 * the CIs it joins (a hop of more steps passes through CIs no stage holds: its ends stand apart).
 * Bounded: a hundred CIs per stage, the relationships of 25 per hop.
 */
export async function pathDrawing(asked: Asked, signal: AbortSignal): Promise<PathDrawing> {
  const query = parseQuery(asked.q);
  const { stages, cut } = await stagesOf(asked, stageTexts(asked.q, query), signal);
  const hops = query.path.filter((step): step is Hop => step.kind === 'hop');
  const edges = await Promise.all(
    hops.map((hop, i) =>
      hop.min === 1 && hop.max === 1 ? hopEdges(asked, hop, stages[i]!, stages[i + 1]!, signal) : Promise.resolve([]),
    ),
  );
  const nodes = new Map<string, GraphNode>();
  for (const node of stages.flat()) if (!nodes.has(node.ci_id)) nodes.set(node.ci_id, node);
  const unique = new Map(edges.flat().map((edge) => [`${edge.from} ${edge.to} ${edge.relationship_type}`, edge]));
  return {
    graph: { nodes: [...nodes.values()], edges: [...unique.values()], hidden: 0, truncated: cut },
    stages,
    cut: cut || hops.some((_, i) => (stages[i]?.length ?? 0) > ASKED_PER_HOP),
  };
}
