import { useMemo, useState } from 'preact/hooks';
import { api } from '../lib/api';
import type { DependencyGraph, GraphNode } from '../lib/api-shapes';
import { count } from '../lib/format';
import { Link } from '../lib/router';
import { SelectField } from './fields';
import { Drawing } from './graph-canvas';
import { type TypeStyle, typeStyles } from './graph-drawing';
import { Empty, Show, useLoad } from './states';

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
/**
 * The CIs around one, drawn by cytoscape as layers along the dependencies (dagre): what depends on
 * something left of it, what it depends on to its right, arrows pointing at what is depended on.
 * Nodes are coloured (and past ten types shaped) by type and faded by status, as the legend says;
 * labels are placed where they overlap none; hovering an item or a relationship names it; a click
 * re-centres on the CI clicked. The same CIs are listed below the drawing by depth, as links, for
 * the keyboard and screen readers.
 */
export function GraphView({
  ciId,
  asOf,
  radius,
  onRadius,
}: {
  ciId: string;
  asOf?: string;
  radius: Radius;
  onRadius: (radius: Radius) => void;
}) {
  const [maxNodes, setMaxNodes] = useState('500');
  const [inactive, setInactive] = useState(false);
  const query = {
    depth: radius.depth,
    direction: radius.direction,
    max_nodes: Number(maxNodes),
    include_inactive: inactive,
    ...(asOf ? { as_of: asOf } : {}),
  };
  const loaded = useLoad(`${ciId} ${JSON.stringify(query)}`, (signal) =>
    api<DependencyGraph>(`/api/v1/configuration-items/${encodeURIComponent(ciId)}/graph`, { query, signal }),
  );
  const moment = asOf ? `?as_of=${encodeURIComponent(asOf)}` : '';
  return (
    <section aria-labelledby="graph-heading" class="graph-view">
      <h2 id="graph-heading">Around this item</h2>
      <GraphToolbar
        radius={radius}
        onRadius={onRadius}
        maxNodes={maxNodes}
        onMaxNodes={setMaxNodes}
        inactive={inactive}
        onInactive={setInactive}
      />
      <Show loaded={loaded} what="the items around it">
        {(graph) => (
          <>
            <GraphSummary graph={graph} depth={radius.depth} />
            {graph.nodes.length <= 1 ? (
              <Empty>Nothing around it in this direction.</Empty>
            ) : (
              <GraphBody graph={graph} centre={ciId} moment={moment} />
            )}
          </>
        )}
      </Show>
    </section>
  );
}

/** How far the walk goes: direction, depth, how many CIs at most, and whether inactive and archived ones too. */
function GraphToolbar({
  radius,
  onRadius,
  maxNodes,
  onMaxNodes,
  inactive,
  onInactive,
}: {
  radius: Radius;
  onRadius: (radius: Radius) => void;
  maxNodes: string;
  onMaxNodes: (value: string) => void;
  inactive: boolean;
  onInactive: (value: boolean) => void;
}) {
  return (
    <div class="toolbar">
      <fieldset class="segmented">
        <legend class="sr-only">Direction</legend>
        {DIRECTIONS.map(([value, label]) => (
          <label key={value}>
            <input
              type="radio"
              name="graph-direction"
              checked={radius.direction === value}
              onChange={() => onRadius({ ...radius, direction: value })}
            />
            {label}
          </label>
        ))}
      </fieldset>
      <SelectField
        label="Depth"
        value={String(radius.depth)}
        onValue={(value) => onRadius({ ...radius, depth: Number(value) })}
        choices={['1', '2', '3', '4', '5', '6']}
      />
      <SelectField
        label="At most"
        value={maxNodes}
        onValue={onMaxNodes}
        choices={SIZES.map((size) => [size, `${count(Number(size))} items`] as const)}
      />
      <label>
        <input
          type="checkbox"
          checked={inactive}
          onChange={(event) => onInactive((event.currentTarget as HTMLInputElement).checked)}
        />{' '}
        Inactive and archived too
      </label>
    </div>
  );
}

/** How many CIs the walk found, whether the limit cut it short, and how many relationships lead out of sight. */
function GraphSummary({ graph, depth }: { graph: DependencyGraph; depth: number }) {
  return (
    <p class="meta" role="status">
      {count(graph.nodes.length - 1)} item{graph.nodes.length === 2 ? '' : 's'} within {depth} step
      {depth === 1 ? '' : 's'}
      {graph.truncated
        ? `, the nearest ${count(graph.nodes.length)} shown (raise the limit or walk less deep to see more)`
        : ''}
      {graph.hidden > 0
        ? `; ${count(graph.hidden)} relationship${graph.hidden === 1 ? '' : 's'} lead outside the data you may see`
        : ''}
      .
    </p>
  );
}

function GraphBody({ graph, centre, moment }: { graph: DependencyGraph; centre: string; moment: string }) {
  const styles = useMemo(() => typeStyles(graph.nodes), [graph]);
  return (
    <>
      <Drawing graph={graph} centre={centre} moment={moment} styles={styles} />
      <Legend graph={graph} styles={styles} />
      <NodeList graph={graph} moment={moment} styles={styles} />
    </>
  );
}

function Legend({ graph, styles }: { graph: DependencyGraph; styles: Map<string, TypeStyle> }) {
  const counts = useMemo(() => {
    const byType = new Map<string, number>();
    for (const node of graph.nodes) byType.set(node.ci_type, (byType.get(node.ci_type) ?? 0) + 1);
    return byType;
  }, [graph]);
  const statuses = new Set(graph.nodes.map((node) => node.status));
  return (
    <div class="graph-legend" aria-label="Legend of the drawing" role="group">
      <ul>
        {[...styles.entries()].map(([type, look]) => (
          <li key={type}>
            <span class={`swatch shape-${look.shape}`} style={{ background: look.colour }} aria-hidden="true" />
            {type} <span class="meta">({count(counts.get(type) ?? 0)})</span>
          </li>
        ))}
      </ul>
      <ul class="meta">
        <li>
          <span class="swatch shape-ellipse centre" aria-hidden="true" /> ringed and larger: this item
        </li>
        {statuses.has('inactive') ? (
          <li>
            <span class="swatch shape-ellipse inactive" aria-hidden="true" /> dashed and faded: inactive
          </li>
        ) : null}
        {statuses.has('archived') ? (
          <li>
            <span class="swatch shape-ellipse archived" aria-hidden="true" /> grey and faded: archived
          </li>
        ) : null}
        {graph.edges.some((edge) => edge.ended_at) ? (
          <li>dashed lines: what an item had when it left the active inventory</li>
        ) : null}
        <li>left depends on right; an arrow points at what is depended on</li>
        <li>names that would overlap are left out: zoom in (wheel, +) or hover an item; drag to pan</li>
      </ul>
    </div>
  );
}

function NodeList({
  graph,
  moment,
  styles,
}: {
  graph: DependencyGraph;
  moment: string;
  styles: Map<string, TypeStyle>;
}) {
  const byDepth = useMemo(() => {
    const depths = new Map<number, GraphNode[]>();
    for (const node of graph.nodes)
      if (node.depth > 0) depths.set(node.depth, [...(depths.get(node.depth) ?? []), node]);
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
            {nodes.map((node) => {
              const look = styles.get(node.ci_type);
              return (
                <li key={node.ci_id}>
                  <span
                    class={`swatch shape-${look?.shape ?? 'ellipse'}`}
                    style={{ background: look?.colour }}
                    aria-hidden="true"
                  />
                  <Link href={`/ci/${node.ci_id}${moment}`}>{node.name}</Link>{' '}
                  <span class="meta">
                    {node.ci_type}
                    {node.status !== 'active' ? ` · ${node.status}` : ''}
                    {node.paths_count > 1 ? ` · ${count(node.paths_count)} paths` : ''}
                  </span>
                </li>
              );
            })}
          </ul>
        </details>
      ))}
    </div>
  );
}
