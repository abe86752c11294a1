import cytoscape from 'cytoscape';
import dagre from 'cytoscape-dagre';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../lib/api';
import type { DependencyGraph, GraphNode } from '../lib/api-shapes';
import { count, dateTime } from '../lib/format';
import { Link, navigate } from '../lib/router';
import { SelectField } from './fields';
import { Empty, Show, useLoad } from './states';
import {
  fit,
  FONT,
  MAX_LABEL,
  onSchemeChange,
  placeLabels,
  resolveColours,
  ROW,
  shortName,
  SIMPLEX_NODES,
  stylesheet,
  TO_DEPENDS,
  type TypeStyle,
  typeStyles,
} from './graph-drawing';

cytoscape.use(dagre);

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
          onValue={setMaxNodes}
          choices={SIZES.map((size) => [size, `${count(Number(size))} items`] as const)}
        />
        <label>
          <input
            type="checkbox"
            checked={inactive}
            onChange={(event) => setInactive((event.currentTarget as HTMLInputElement).checked)}
          />{' '}
          Inactive and archived too
        </label>
      </div>
      <Show loaded={loaded} what="the items around it">
        {(graph) => (
          <>
            <p class="meta" role="status">
              {count(graph.nodes.length - 1)} item{graph.nodes.length === 2 ? '' : 's'} within {radius.depth} step
              {radius.depth === 1 ? '' : 's'}
              {graph.truncated
                ? `, the nearest ${count(graph.nodes.length)} shown (raise the limit or walk less deep to see more)`
                : ''}
              {graph.hidden > 0
                ? `; ${count(graph.hidden)} relationship${graph.hidden === 1 ? '' : 's'} lead outside the data you may see`
                : ''}
              .
            </p>
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

interface Hovered {
  x: number;
  y: number;
  title: string;
  detail: string;
}

function Drawing({
  graph,
  centre,
  moment,
  styles,
}: {
  graph: DependencyGraph;
  centre: string;
  moment: string;
  styles: Map<string, TypeStyle>;
}) {
  const box = useRef<HTMLDivElement>(null);
  const probe = useRef<HTMLSpanElement>(null);
  const cy = useRef<cytoscape.Core | null>(null);
  const [hovered, setHovered] = useState<Hovered | null>(null);
  useEffect(() => {
    if (!box.current || !probe.current) return undefined;
    const probeElement = probe.current;
    let colours = resolveColours(probeElement);
    const context = document.createElement('canvas').getContext('2d');
    const measure = (text: string) => {
      if (!context) return text.length * FONT * 0.6;
      context.font = `${FONT}px ${colours.font}`;
      return context.measureText(text).width;
    };
    const names = new Map(graph.nodes.map((node) => [node.ci_id, node]));
    const widest = Math.max(...graph.nodes.map((node) => measure(shortName(node.name))));
    const view = cytoscape({
      container: box.current,
      elements: [
        ...graph.nodes.map((node) => {
          const look = styles.get(node.ci_type)!;
          return {
            data: {
              id: node.ci_id,
              label: shortName(node.name),
              colour: look.colour,
              shape: look.shape,
              depth: node.depth,
            },
            classes: [node.status, node.ci_id === centre ? 'centre' : ''].filter(Boolean).join(' '),
          };
        }),
        // each relationship from the CI that depends to the one it depends on: the layers follow the dependencies
        ...graph.edges.map((edge, index) => {
          const [source, target] = TO_DEPENDS.has(edge.relationship_type) ? [edge.to, edge.from] : [edge.from, edge.to];
          return {
            data: {
              id: `e${index}`,
              source,
              target,
              type: edge.relationship_type,
              from: edge.from,
              to: edge.to,
              ended: edge.ended_at ?? '',
            },
            classes: edge.ended_at ? 'ended' : '',
          };
        }),
      ],
      style: stylesheet(colours),
      layout: {
        name: 'dagre',
        rankDir: 'LR',
        ranker: graph.nodes.length <= SIMPLEX_NODES ? 'network-simplex' : 'longest-path',
        nodeSep: ROW,
        // a layer's labels stand in the space before the next layer
        rankSep: Math.min(Math.max(widest + 40, 80), MAX_LABEL * FONT),
        edgeSep: 4,
        animate: false,
        fit: false,
      } as cytoscape.LayoutOptions,
      minZoom: 0.02,
      maxZoom: 6,
      userZoomingEnabled: true,
      userPanningEnabled: true,
      // the drawing is for the pointer; the list below it serves the keyboard
      boxSelectionEnabled: false,
      autoungrabify: true,
    });
    cy.current = view;
    if (window.__cinvTestHooks) window.__cinvGraph = view;
    let first: string | null = null;
    let frame = 0;
    const relabel = () => {
      if (frame) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        placeLabels(view, measure, first);
      });
    };
    fit(view);
    placeLabels(view, measure, null);
    view.on('viewport resize', relabel);
    view.on('mouseover', 'node', (event) => {
      const node = event.target as cytoscape.NodeSingular;
      const ci = names.get(node.id());
      node.addClass('hover');
      node.connectedEdges().addClass('hover');
      first = node.id();
      relabel();
      if (ci) {
        const at = node.renderedPosition();
        const detail = [
          ci.ci_type,
          ci.namespace,
          ci.status !== 'active' ? ci.status : null,
          ci.depth === 0 ? 'this item' : `${ci.depth} step${ci.depth === 1 ? '' : 's'} away`,
        ]
          .filter(Boolean)
          .join(' · ');
        setHovered({ x: at.x, y: at.y, title: ci.name, detail });
      }
    });
    view.on('mouseout', 'node', (event) => {
      const node = event.target as cytoscape.NodeSingular;
      node.removeClass('hover');
      node.connectedEdges().removeClass('hover');
      first = null;
      setHovered(null);
    });
    view.on('mouseover', 'edge', (event) => {
      const edge = event.target as cytoscape.EdgeSingular;
      edge.addClass('hover');
      const at = edge.renderedMidpoint();
      const from = names.get(edge.data('from') as string)?.name ?? '';
      const to = names.get(edge.data('to') as string)?.name ?? '';
      const ended = edge.data('ended') as string;
      setHovered({
        x: at.x,
        y: at.y,
        title: `${from} ${edge.data('type') as string} ${to}`,
        detail: `${names.get(edge.source().id())?.name ?? ''} depends on ${names.get(edge.target().id())?.name ?? ''}${ended ? `; ended ${dateTime(ended)}, when one of them left the active inventory` : ''}`,
      });
    });
    view.on('mouseout', 'edge', (event) => {
      (event.target as cytoscape.EdgeSingular).removeClass('hover');
      setHovered(null);
    });
    view.on('pan zoom', () => setHovered(null));
    view.on('tap', 'node', (event) => {
      const id = (event.target as cytoscape.NodeSingular).id();
      if (id !== centre) navigate(`/ci/${id}${moment}`);
    });
    const stopWatching = onSchemeChange(() => {
      colours = resolveColours(probeElement);
      view.style(stylesheet(colours));
    });
    return () => {
      stopWatching();
      if (frame) cancelAnimationFrame(frame);
      if (window.__cinvGraph === view) delete window.__cinvGraph;
      cy.current = null;
      view.destroy();
    };
  }, [graph, centre, moment, styles]);
  const zoomBy = (factor: number) => {
    const view = cy.current;
    if (view)
      view.zoom({ level: view.zoom() * factor, renderedPosition: { x: view.width() / 2, y: view.height() / 2 } });
  };
  return (
    <div class="graph-frame">
      <div
        ref={box}
        class="graph-canvas"
        role="img"
        aria-label={`Drawing of ${graph.nodes.length} items and ${graph.edges.length} relationships; the list below it holds the same items`}
      />
      <span ref={probe} class="graph-probe" aria-hidden="true" />
      <div class="graph-controls">
        <button type="button" onClick={() => zoomBy(1.4)} aria-label="Zoom in" title="Zoom in (or the mouse wheel)">
          +
        </button>
        <button
          type="button"
          onClick={() => zoomBy(1 / 1.4)}
          aria-label="Zoom out"
          title="Zoom out (or the mouse wheel)"
        >
          −
        </button>
        <button type="button" onClick={() => cy.current && fit(cy.current)} title="Show the whole graph again">
          Fit
        </button>
      </div>
      {hovered ? (
        <div class="graph-tooltip" style={{ left: `${hovered.x}px`, top: `${hovered.y}px` }} role="tooltip">
          <strong>{hovered.title}</strong>
          <span class="meta">{hovered.detail}</span>
        </div>
      ) : null}
    </div>
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
