import cytoscape from 'cytoscape';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../lib/api';
import { count } from '../lib/format';
import { Link, navigate } from '../lib/router';
import { SelectField } from './fields';
import { Empty, Show, useLoad } from './states';

export interface GraphNode {
  ci_id: string;
  name: string;
  namespace: string | null;
  ci_type: string;
  status: 'active' | 'inactive' | 'archived';
  depth: number;
  paths_count: number;
}

interface Graph {
  nodes: GraphNode[];
  edges: { from: string; to: string; relationship_type: string }[];
  truncated: boolean;
  hidden: number;
}

export type Direction = 'downstream' | 'upstream' | 'both';

export interface Radius {
  depth: number;
  direction: Direction;
}

const DIRECTIONS: readonly (readonly [Direction, string])[] = [
  ['downstream', 'What depends on it'],
  ['upstream', 'What it depends on'],
  ['both', 'Both'],
];
const SIZES = ['100', '500', '2000', '5000'];
/** Above this many edges their labels are left out: the drawing stays readable and quick. */
const LABELLED_EDGES = 300;
/** Distinct colours for CI types, readable on light and dark backgrounds. */
const PALETTE = ['#2563eb', '#16a34a', '#d97706', '#9333ea', '#0891b2', '#dc2626', '#65a30d', '#db2777', '#4f46e5', '#0d9488'];

const colourOf = (type: string) => {
  let hash = 0;
  for (const char of type) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return PALETTE[hash % PALETTE.length]!;
};

/** A CSS custom property of the page, so the drawing follows the light or dark scheme. */
const cssVar = (name: string, fallback: string) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;

/**
 * The CIs around one, drawn by cytoscape in rings by depth (its concentric layout, linear in the
 * CIs, so 5 000 of them lay out without a pause), coloured by type and faded by status, edges
 * labelled while there are few enough; a click re-centres on the CI clicked. The same CIs are
 * listed beside the drawing by depth, as links, for the keyboard and screen readers.
 */
export function GraphView({ ciId, asOf, radius, onRadius }: { ciId: string; asOf?: string; radius: Radius; onRadius: (radius: Radius) => void }) {
  const [maxNodes, setMaxNodes] = useState('500');
  const [inactive, setInactive] = useState(false);
  const query = { depth: radius.depth, direction: radius.direction, max_nodes: Number(maxNodes), include_inactive: inactive, ...(asOf ? { as_of: asOf } : {}) };
  const loaded = useLoad(`${ciId} ${JSON.stringify(query)}`, (signal) => api<Graph>(`/api/v1/configuration-items/${encodeURIComponent(ciId)}/graph`, { query, signal }));
  const moment = asOf ? `?as_of=${encodeURIComponent(asOf)}` : '';
  return (
    <section aria-labelledby="graph-heading" class="graph-view">
      <h2 id="graph-heading">Around this item</h2>
      <div class="toolbar">
        <fieldset class="segmented">
          <legend class="sr-only">Direction</legend>
          {DIRECTIONS.map(([value, label]) => (
            <label key={value}>
              <input type="radio" name="graph-direction" checked={radius.direction === value} onChange={() => onRadius({ ...radius, direction: value })} />
              {label}
            </label>
          ))}
        </fieldset>
        <SelectField label="Depth" value={String(radius.depth)} onValue={(value) => onRadius({ ...radius, depth: Number(value) })} choices={['1', '2', '3', '4', '5', '6']} />
        <SelectField label="At most" value={maxNodes} onValue={setMaxNodes} choices={SIZES.map((size) => [size, `${count(Number(size))} items`] as const)} />
        <label>
          <input type="checkbox" checked={inactive} onChange={(event) => setInactive((event.currentTarget as HTMLInputElement).checked)} /> Inactive and archived too
        </label>
      </div>
      <Show loaded={loaded} what="the items around it">
        {(graph) => (
          <>
            <p class="meta" role="status">
              {count(graph.nodes.length - 1)} item{graph.nodes.length === 2 ? '' : 's'} within {radius.depth} step{radius.depth === 1 ? '' : 's'}
              {graph.truncated ? `, the nearest ${count(graph.nodes.length)} shown (raise the limit or walk less deep to see more)` : ''}
              {graph.hidden > 0 ? `; ${count(graph.hidden)} relationship${graph.hidden === 1 ? '' : 's'} lead outside the data you may see` : ''}.
            </p>
            {graph.nodes.length <= 1 ? (
              <Empty>Nothing around it in this direction.</Empty>
            ) : (
              <div class="graph-columns">
                <Drawing graph={graph} centre={ciId} moment={moment} />
                <NodeList graph={graph} moment={moment} />
              </div>
            )}
          </>
        )}
      </Show>
    </section>
  );
}

function Drawing({ graph, centre, moment }: { graph: Graph; centre: string; moment: string }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!box.current) return undefined;
    const text = cssVar('--text', '#1f2937');
    const line = cssVar('--muted', '#6b7280');
    const labelled = graph.edges.length <= LABELLED_EDGES;
    const view = cytoscape({
      container: box.current,
      elements: [
        ...graph.nodes.map((node) => ({
          data: { id: node.ci_id, label: node.name, colour: colourOf(node.ci_type), depth: node.depth },
          classes: [node.status, node.ci_id === centre ? 'centre' : ''].filter(Boolean).join(' '),
        })),
        ...graph.edges.map((edge, index) => ({ data: { id: `e${index}`, source: edge.from, target: edge.to, label: edge.relationship_type } })),
      ],
      style: [
        { selector: 'node', style: { 'background-color': 'data(colour)', label: 'data(label)', color: text, 'font-size': 9, 'text-valign': 'bottom', 'text-margin-y': 3, width: 14, height: 14 } },
        { selector: 'node.centre', style: { width: 24, height: 24, 'border-width': 3, 'border-color': text } },
        { selector: 'node.inactive', style: { opacity: 0.55, 'border-width': 2, 'border-style': 'dashed', 'border-color': line } },
        { selector: 'node.archived', style: { opacity: 0.35, 'background-color': line } },
        {
          selector: 'edge',
          style: {
            width: 1,
            'line-color': line,
            'target-arrow-color': line,
            'target-arrow-shape': 'triangle',
            'curve-style': 'straight',
            ...(labelled ? { label: 'data(label)', 'font-size': 7, color: line, 'text-rotation': 'autorotate' } : {}),
          },
        },
      ],
      layout: {
        name: 'concentric',
        concentric: (node: cytoscape.NodeSingular) => 10 - Number(node.data('depth')),
        levelWidth: () => 1,
        minNodeSpacing: 12,
        animate: false,
      },
      wheelSensitivity: 0.3,
      // the drawing is for the pointer; the list beside it serves the keyboard
      boxSelectionEnabled: false,
    });
    view.on('tap', 'node', (event) => {
      const id = event.target.id() as string;
      if (id !== centre) navigate(`/ci/${id}${moment}`);
    });
    return () => view.destroy();
  }, [graph, centre, moment]);
  return <div ref={box} class="graph-canvas" role="img" aria-label={`Drawing of ${graph.nodes.length} items and ${graph.edges.length} relationships; the list beside it holds the same items`} />;
}

function NodeList({ graph, moment }: { graph: Graph; moment: string }) {
  const byDepth = useMemo(() => {
    const depths = new Map<number, GraphNode[]>();
    for (const node of graph.nodes) if (node.depth > 0) depths.set(node.depth, [...(depths.get(node.depth) ?? []), node]);
    return [...depths.entries()].sort(([a], [b]) => a - b);
  }, [graph]);
  return (
    <div class="graph-list">
      {byDepth.map(([depth, nodes]) => (
        <details key={depth} open={depth === 1 || nodes.length <= 20}>
          <summary>
            {depth} step{depth === 1 ? '' : 's'} away <span class="meta">({count(nodes.length)})</span>
          </summary>
          <ul class="neighbours" aria-label={`${depth} step${depth === 1 ? '' : 's'} away`}>
            {nodes.map((node) => (
              <li key={node.ci_id}>
                <span class="swatch" style={{ background: colourOf(node.ci_type) }} aria-hidden="true" />
                <Link href={`/ci/${node.ci_id}${moment}`}>{node.name}</Link>{' '}
                <span class="meta">
                  {node.ci_type}
                  {node.status !== 'active' ? ` · ${node.status}` : ''}
                  {node.paths_count > 1 ? ` · ${count(node.paths_count)} paths` : ''}
                </span>
              </li>
            ))}
          </ul>
        </details>
      ))}
    </div>
  );
}
