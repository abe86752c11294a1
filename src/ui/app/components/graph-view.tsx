import cytoscape from 'cytoscape';
import dagre from 'cytoscape-dagre';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from '../lib/api';
import { count } from '../lib/format';
import { Link, navigate } from '../lib/router';
import { SelectField } from './fields';
import { Empty, Show, useLoad } from './states';

cytoscape.use(dagre);

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
/** Distinct colours for CI types, readable on light and dark backgrounds. */
const PALETTE = ['#2563eb', '#16a34a', '#d97706', '#9333ea', '#0891b2', '#dc2626', '#65a30d', '#db2777', '#4f46e5', '#0d9488'];
/** With more types than colours, the next ten take the next shape. */
const SHAPES = ['ellipse', 'round-rectangle', 'diamond', 'triangle', 'hexagon'] as const;
type Shape = (typeof SHAPES)[number];
/**
 * The relationship types whose `to` end depends on their `from` end (a deployment manages its
 * replica sets, which depend on it), as the API reads them (`DEPENDENT_END` beside the graph's
 * schema); every other type reads "from depends on to".
 */
const TO_DEPENDS = new Set(['manages']);

/** Model sizes: a node, the label font, the space between two neighbours of a layer. */
const NODE = 10;
const CENTRE = 18;
const FONT = 10;
const ROW = 8;
/** Labels drawn smaller than this many pixels are left out: nobody reads them. */
const READABLE_PX = 7;
/** The fit never zooms in further than this: ten items do not need labels of 30 pixels. */
const FIT_ZOOM = 1.6;
/** Network simplex ranks best but grows fast; above this many items the layers are the longest paths. */
const SIMPLEX_NODES = 200;
/** Room kept free around a label, in pixels, so two labels never touch. */
const LABEL_GAP = 2;
const MAX_LABEL = 32;

export interface TypeStyle {
  colour: string;
  shape: Shape;
}

/** A colour and shape per CI type of the drawing: types in name order, so a type keeps its look as the radius changes. */
export function typeStyles(nodes: readonly GraphNode[]): Map<string, TypeStyle> {
  const types = [...new Set(nodes.map((node) => node.ci_type))].sort();
  return new Map(types.map((type, index) => [type, { colour: PALETTE[index % PALETTE.length]!, shape: SHAPES[Math.floor(index / PALETTE.length) % SHAPES.length]! }]));
}

/** The colours of the page as the current scheme resolves them (a canvas takes no CSS variable nor light-dark()). */
interface Colours {
  text: string;
  panel: string;
  muted: string;
  accent: string;
  font: string;
}

function resolveColours(probe: HTMLElement): Colours {
  const resolve = (variable: string) => {
    probe.style.color = `var(${variable})`;
    return getComputedStyle(probe).color;
  };
  const colours = { text: resolve('--text'), panel: resolve('--panel'), muted: resolve('--muted'), accent: resolve('--accent'), font: getComputedStyle(probe).fontFamily };
  probe.style.removeProperty('color');
  return colours;
}

/** Calls back when the colour scheme changes: the theme toggle (data-theme) or the system's preference. */
function onSchemeChange(callback: () => void): () => void {
  const observer = new MutationObserver(callback);
  observer.observe(document.documentElement, { attributes: true, attributeFilter: ['data-theme'] });
  const media = matchMedia('(prefers-color-scheme: dark)');
  media.addEventListener('change', callback);
  return () => {
    observer.disconnect();
    media.removeEventListener('change', callback);
  };
}

/** A long name cut in its middle: names of one kind tend to differ at their ends (pods by their suffix). */
const shortName = (name: string) => (name.length > MAX_LABEL ? `${name.slice(0, MAX_LABEL / 2 - 1)}…${name.slice(-(MAX_LABEL / 2))}` : name);

function stylesheet(colours: Colours): cytoscape.StylesheetJson {
  return [
    {
      selector: 'node',
      style: {
        'background-color': 'data(colour)',
        shape: 'data(shape)' as never,
        width: NODE,
        height: NODE,
        label: '',
        color: colours.text,
        'font-family': colours.font,
        'font-size': FONT,
        'text-valign': 'center',
        'text-halign': 'right',
        'text-margin-x': 3,
        'text-background-color': colours.panel,
        'text-background-opacity': 0.85,
        'text-background-padding': '1px',
      },
    },
    { selector: 'node.labelled', style: { label: 'data(label)' } },
    { selector: 'node.centre', style: { width: CENTRE, height: CENTRE, 'border-width': 3, 'border-color': colours.text } },
    { selector: 'node.inactive', style: { opacity: 0.6, 'border-width': 2, 'border-style': 'dashed', 'border-color': colours.muted } },
    { selector: 'node.archived', style: { opacity: 0.45, 'background-color': colours.muted } },
    { selector: 'node.hover', style: { 'border-width': 3, 'border-color': colours.accent, 'border-style': 'solid', opacity: 1 } },
    {
      selector: 'edge',
      style: { width: 1, 'line-color': colours.muted, 'target-arrow-color': colours.muted, 'target-arrow-shape': 'triangle', 'arrow-scale': 0.7, 'curve-style': 'straight', opacity: 0.7 },
    },
    { selector: 'edge.hover', style: { width: 2, 'line-color': colours.accent, 'target-arrow-color': colours.accent, opacity: 1, 'z-index': 10 } },
  ];
}

interface Box {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/**
 * Labels as a map places them: in order of importance (the hovered item and the centre first,
 * then by depth), each drawn only where it overlaps no label already drawn, and none while they
 * would be too small to read. A grid of cells keeps the test for overlap near-linear.
 */
function placeLabels(view: cytoscape.Core, measure: (text: string) => number, first: string | null): void {
  const zoom = view.zoom();
  const fontPx = FONT * zoom;
  const width = view.width();
  const height = view.height();
  const cell = 64;
  const grid = new Map<string, Box[]>();
  const cells = (box: Box) => {
    const keys: string[] = [];
    for (let x = Math.floor(box.x1 / cell); x <= Math.floor(box.x2 / cell); x++) for (let y = Math.floor(box.y1 / cell); y <= Math.floor(box.y2 / cell); y++) keys.push(`${x},${y}`);
    return keys;
  };
  const overlaps = (a: Box, b: Box) => a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2;
  const ordered = view.nodes().toArray().sort((a, b) => rank(a) - rank(b));
  function rank(node: cytoscape.NodeSingular) {
    if (node.id() === first) return -2;
    if (node.hasClass('centre')) return -1;
    return Number(node.data('depth'));
  }
  const shown = new Set<string>();
  if (fontPx >= READABLE_PX) {
    for (const node of ordered) {
      const at = node.renderedPosition();
      const radius = (node.hasClass('centre') ? CENTRE + 6 : NODE) / 2;
      const x1 = at.x + (radius + 3) * zoom - LABEL_GAP;
      // the label's line, its background's padding, and a pixel of room above and below
      const half = fontPx * 0.62 + zoom + 1;
      const box = { x1, x2: x1 + measure(node.data('label') as string) * zoom + 2 * LABEL_GAP + 2 * zoom, y1: at.y - half, y2: at.y + half };
      if (box.x2 < 0 || box.x1 > width || box.y2 < 0 || box.y1 > height) continue;
      const keys = cells(box);
      if (keys.some((key) => grid.get(key)?.some((other) => overlaps(box, other)))) continue;
      for (const key of keys) grid.set(key, [...(grid.get(key) ?? []), box]);
      shown.add(node.id());
    }
  }
  view.batch(() => {
    for (const node of ordered) {
      if (shown.has(node.id())) node.addClass('labelled');
      else node.removeClass('labelled');
    }
  });
}

/** Fits the drawing to its box, no closer than FIT_ZOOM. */
function fit(view: cytoscape.Core): void {
  view.fit(undefined, 24);
  if (view.zoom() > FIT_ZOOM) view.zoom({ level: FIT_ZOOM, renderedPosition: { x: view.width() / 2, y: view.height() / 2 } });
}

declare global {
  interface Window {
    /** Set by a browser test before the page loads: the drawing then hands it its cytoscape instance. */
    __cinvTestHooks?: boolean;
    __cinvGraph?: cytoscape.Core;
  }
}

/**
 * The CIs around one, drawn by cytoscape as layers along the dependencies (dagre): what depends on
 * something left of it, what it depends on to its right, arrows pointing at what is depended on.
 * Nodes are coloured (and past ten types shaped) by type and faded by status, as the legend says;
 * labels are placed where they overlap none; hovering an item or a relationship names it; a click
 * re-centres on the CI clicked. The same CIs are listed below the drawing by depth, as links, for
 * the keyboard and screen readers.
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
            {graph.nodes.length <= 1 ? <Empty>Nothing around it in this direction.</Empty> : <GraphBody graph={graph} centre={ciId} moment={moment} />}
          </>
        )}
      </Show>
    </section>
  );
}

function GraphBody({ graph, centre, moment }: { graph: Graph; centre: string; moment: string }) {
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

function Drawing({ graph, centre, moment, styles }: { graph: Graph; centre: string; moment: string; styles: Map<string, TypeStyle> }) {
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
            data: { id: node.ci_id, label: shortName(node.name), colour: look.colour, shape: look.shape, depth: node.depth },
            classes: [node.status, node.ci_id === centre ? 'centre' : ''].filter(Boolean).join(' '),
          };
        }),
        // each relationship from the CI that depends to the one it depends on: the layers follow the dependencies
        ...graph.edges.map((edge, index) => {
          const [source, target] = TO_DEPENDS.has(edge.relationship_type) ? [edge.to, edge.from] : [edge.from, edge.to];
          return { data: { id: `e${index}`, source, target, type: edge.relationship_type, from: edge.from, to: edge.to } };
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
        const detail = [ci.ci_type, ci.namespace, ci.status !== 'active' ? ci.status : null, ci.depth === 0 ? 'this item' : `${ci.depth} step${ci.depth === 1 ? '' : 's'} away`].filter(Boolean).join(' · ');
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
      setHovered({ x: at.x, y: at.y, title: `${from} ${edge.data('type') as string} ${to}`, detail: `${names.get(edge.source().id())?.name ?? ''} depends on ${names.get(edge.target().id())?.name ?? ''}` });
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
    if (view) view.zoom({ level: view.zoom() * factor, renderedPosition: { x: view.width() / 2, y: view.height() / 2 } });
  };
  return (
    <div class="graph-frame">
      <div ref={box} class="graph-canvas" role="img" aria-label={`Drawing of ${graph.nodes.length} items and ${graph.edges.length} relationships; the list below it holds the same items`} />
      <span ref={probe} class="graph-probe" aria-hidden="true" />
      <div class="graph-controls">
        <button type="button" onClick={() => zoomBy(1.4)} aria-label="Zoom in" title="Zoom in (or the mouse wheel)">
          +
        </button>
        <button type="button" onClick={() => zoomBy(1 / 1.4)} aria-label="Zoom out" title="Zoom out (or the mouse wheel)">
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

function Legend({ graph, styles }: { graph: Graph; styles: Map<string, TypeStyle> }) {
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
        <li>left depends on right; an arrow points at what is depended on</li>
        <li>names that would overlap are left out: zoom in (wheel, +) or hover an item; drag to pan</li>
      </ul>
    </div>
  );
}

function NodeList({ graph, moment, styles }: { graph: Graph; moment: string; styles: Map<string, TypeStyle> }) {
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
            {nodes.map((node) => {
              const look = styles.get(node.ci_type);
              return (
                <li key={node.ci_id}>
                  <span class={`swatch shape-${look?.shape ?? 'ellipse'}`} style={{ background: look?.colour }} aria-hidden="true" />
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
