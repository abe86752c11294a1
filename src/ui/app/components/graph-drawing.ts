import type cytoscape from 'cytoscape';
import type { DependencyGraph, GraphNode } from '../lib/api-shapes';
import { dateTime } from '../lib/format';

/*
 * How the dependency graph is drawn: the colours and shapes of CI types, the scheme's resolved
 * colours, the elements, their layout and stylesheet, what pointing at one says, where labels may
 * go without overlapping, and the fit.
 */

/** Distinct colours for CI types, readable on light and dark backgrounds. */
export const PALETTE = [
  '#2563eb',
  '#16a34a',
  '#d97706',
  '#9333ea',
  '#0891b2',
  '#dc2626',
  '#65a30d',
  '#db2777',
  '#4f46e5',
  '#0d9488',
];
/** With more types than colours, the next ten take the next shape. */
export const SHAPES = ['ellipse', 'round-rectangle', 'diamond', 'triangle', 'hexagon'] as const;
export type Shape = (typeof SHAPES)[number];
/**
 * The relationship types whose `to` end depends on their `from` end (a deployment manages its
 * replica sets, which depend on it), as the API reads them (`DEPENDENT_END` beside the graph's
 * schema); every other type reads "from depends on to".
 */
export const TO_DEPENDS = new Set(['manages']);

/** Model sizes: a node, the label font, the space between two neighbours of a layer. */
export const NODE = 10;
export const CENTRE = 18;
export const FONT = 10;
export const ROW = 8;
/** Labels drawn smaller than this many pixels are left out: nobody reads them. */
export const READABLE_PX = 7;
/** The fit never zooms in further than this: ten items do not need labels of 30 pixels. */
export const FIT_ZOOM = 1.6;
/** Network simplex ranks best but grows fast; above this many items the layers are the longest paths. */
export const SIMPLEX_NODES = 200;
/** Room kept free around a label, in pixels, so two labels never touch. */
export const LABEL_GAP = 2;
export const MAX_LABEL = 32;

export interface TypeStyle {
  colour: string;
  shape: Shape;
}

/** A colour and shape per CI type of the drawing: types in name order, so a type keeps its look as the radius changes. */
export function typeStyles(nodes: readonly GraphNode[]): Map<string, TypeStyle> {
  const types = [...new Set(nodes.map((node) => node.ci_type))].sort();
  return new Map(
    types.map((type, index) => [
      type,
      { colour: PALETTE[index % PALETTE.length]!, shape: SHAPES[Math.floor(index / PALETTE.length) % SHAPES.length]! },
    ]),
  );
}

/** The colours of the page as the current scheme resolves them (a canvas takes no CSS variable nor light-dark()). */
export interface Colours {
  text: string;
  panel: string;
  muted: string;
  accent: string;
  font: string;
}

export function resolveColours(probe: HTMLElement): Colours {
  const resolve = (variable: string) => {
    probe.style.color = `var(${variable})`;
    return getComputedStyle(probe).color;
  };
  const colours = {
    text: resolve('--text'),
    panel: resolve('--panel'),
    muted: resolve('--muted'),
    accent: resolve('--accent'),
    font: getComputedStyle(probe).fontFamily,
  };
  probe.style.removeProperty('color');
  return colours;
}

/** Calls back when the colour scheme changes: the theme toggle (data-theme) or the system's preference. */
export function onSchemeChange(callback: () => void): () => void {
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
export const shortName = (name: string) =>
  name.length > MAX_LABEL ? `${name.slice(0, MAX_LABEL / 2 - 1)}…${name.slice(-(MAX_LABEL / 2))}` : name;

export function stylesheet(colours: Colours): cytoscape.StylesheetJson {
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
    {
      selector: 'node.centre',
      style: { width: CENTRE, height: CENTRE, 'border-width': 3, 'border-color': colours.text },
    },
    {
      selector: 'node.inactive',
      style: { opacity: 0.6, 'border-width': 2, 'border-style': 'dashed', 'border-color': colours.muted },
    },
    { selector: 'node.archived', style: { opacity: 0.45, 'background-color': colours.muted } },
    {
      selector: 'node.hover',
      style: { 'border-width': 3, 'border-color': colours.accent, 'border-style': 'solid', opacity: 1 },
    },
    {
      selector: 'edge',
      style: {
        width: 1,
        'line-color': colours.muted,
        'target-arrow-color': colours.muted,
        'target-arrow-shape': 'triangle',
        'arrow-scale': 0.7,
        'curve-style': 'straight',
        opacity: 0.7,
      },
    },
    // what a CI had when it left the active inventory: walkable, and drawn as past
    { selector: 'edge.ended', style: { 'line-style': 'dashed', opacity: 0.5 } },
    {
      selector: 'edge.hover',
      style: {
        width: 2,
        'line-color': colours.accent,
        'target-arrow-color': colours.accent,
        opacity: 1,
        'z-index': 10,
      },
    },
  ];
}

/**
 * The drawing's elements: a node per CI, coloured and shaped by type, and each relationship from
 * the CI that depends to the one it depends on, so that the layers follow the dependencies.
 */
export function graphElements(
  graph: DependencyGraph,
  centre: string,
  styles: Map<string, TypeStyle>,
): cytoscape.ElementDefinition[] {
  return [
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
  ];
}

/** Layers from left to right (dagre); `widest`: the longest label, which stands in the space before the next layer. */
export function graphLayout(nodes: number, widest: number): cytoscape.LayoutOptions {
  return {
    name: 'dagre',
    rankDir: 'LR',
    ranker: nodes <= SIMPLEX_NODES ? 'network-simplex' : 'longest-path',
    nodeSep: ROW,
    rankSep: Math.min(Math.max(widest + 40, 80), MAX_LABEL * FONT),
    edgeSep: 4,
    animate: false,
    fit: false,
  } as cytoscape.LayoutOptions;
}

/** What pointing at a CI says of it, below its name. */
export function nodeDetail(ci: GraphNode): string {
  return [
    ci.ci_type,
    ci.namespace,
    ci.status !== 'active' ? ci.status : null,
    ci.depth === 0 ? 'this item' : `${ci.depth} step${ci.depth === 1 ? '' : 's'} away`,
  ]
    .filter(Boolean)
    .join(' · ');
}

/** What pointing at a relationship says: its two CIs by name, which depends on which, and when it ended. */
export function edgeTooltip(
  edge: cytoscape.EdgeSingular,
  names: ReadonlyMap<string, GraphNode>,
): { title: string; detail: string } {
  const nameOf = (id: string) => names.get(id)?.name ?? '';
  const ended = edge.data('ended') as string;
  return {
    title: `${nameOf(edge.data('from') as string)} ${edge.data('type') as string} ${nameOf(edge.data('to') as string)}`,
    detail: `${nameOf(edge.source().id())} depends on ${nameOf(edge.target().id())}${ended ? `; ended ${dateTime(ended)}, when one of them left the active inventory` : ''}`,
  };
}

export interface Box {
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
export function placeLabels(view: cytoscape.Core, measure: (text: string) => number, first: string | null): void {
  const zoom = view.zoom();
  const fontPx = FONT * zoom;
  const width = view.width();
  const height = view.height();
  const cell = 64;
  const grid = new Map<string, Box[]>();
  const cells = (box: Box) => {
    const keys: string[] = [];
    for (let x = Math.floor(box.x1 / cell); x <= Math.floor(box.x2 / cell); x++)
      for (let y = Math.floor(box.y1 / cell); y <= Math.floor(box.y2 / cell); y++) keys.push(`${x},${y}`);
    return keys;
  };
  const overlaps = (a: Box, b: Box) => a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2;
  const ordered = view
    .nodes()
    .toArray()
    .sort((a, b) => rank(a) - rank(b));
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
      const box = {
        x1,
        x2: x1 + measure(node.data('label') as string) * zoom + 2 * LABEL_GAP + 2 * zoom,
        y1: at.y - half,
        y2: at.y + half,
      };
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
export function fit(view: cytoscape.Core): void {
  view.fit(undefined, 24);
  if (view.zoom() > FIT_ZOOM)
    view.zoom({ level: FIT_ZOOM, renderedPosition: { x: view.width() / 2, y: view.height() / 2 } });
}

declare global {
  interface Window {
    /** Set by a browser test before the page loads: the drawing then hands it its cytoscape instance. */
    __cinvTestHooks?: boolean;
    __cinvGraph?: cytoscape.Core;
  }
}
