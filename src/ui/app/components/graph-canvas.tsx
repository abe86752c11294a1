import cytoscape from 'cytoscape';
import dagre from 'cytoscape-dagre';
import { useEffect, useRef, useState } from 'preact/hooks';
import type { DependencyGraph, GraphNode } from '../lib/api-shapes';
import { navigate } from '../lib/router';
import {
  type Colours,
  edgeTooltip,
  fit,
  FONT,
  graphElements,
  graphLayout,
  nodeDetail,
  onSchemeChange,
  placeLabels,
  resolveColours,
  shortName,
  stylesheet,
  type TypeStyle,
} from './graph-drawing';

cytoscape.use(dagre);

interface Hovered {
  x: number;
  y: number;
  title: string;
  detail: string;
}

/** A label's width in the page's font as the scheme has it now (a rough one without a canvas). */
function labelMeasure(colours: () => Colours): (text: string) => number {
  const context = document.createElement('canvas').getContext('2d');
  return (text) => {
    if (!context) return text.length * FONT * 0.6;
    context.font = `${FONT}px ${colours().font}`;
    return context.measureText(text).width;
  };
}

/** Places the labels again, once a frame while the view moves; the CI pointed at (`favour`) is labelled first. */
function labelPlacer(view: cytoscape.Core, measure: (text: string) => number) {
  let first: string | null = null;
  let frame = 0;
  return {
    favour: (id: string | null) => {
      first = id;
    },
    relabel: () => {
      if (frame) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        placeLabels(view, measure, first);
      });
    },
    cancel: () => {
      if (frame) cancelAnimationFrame(frame);
    },
  };
}

interface Pointer {
  names: ReadonlyMap<string, GraphNode>;
  labels: ReturnType<typeof labelPlacer>;
  onHover: (hovered: Hovered | null) => void;
  onPick: (ciId: string) => void;
}

/** Pointing at a CI or a relationship rings it with what it touches and names it; a tap picks a CI. */
function followPointer(view: cytoscape.Core, { names, labels, onHover, onPick }: Pointer): void {
  view.on('mouseover', 'node', (event) => {
    const node = event.target as cytoscape.NodeSingular;
    const ci = names.get(node.id());
    node.addClass('hover');
    node.connectedEdges().addClass('hover');
    labels.favour(node.id());
    labels.relabel();
    if (ci) {
      const at = node.renderedPosition();
      onHover({ x: at.x, y: at.y, title: ci.name, detail: nodeDetail(ci) });
    }
  });
  view.on('mouseout', 'node', (event) => {
    const node = event.target as cytoscape.NodeSingular;
    node.removeClass('hover');
    node.connectedEdges().removeClass('hover');
    labels.favour(null);
    onHover(null);
  });
  view.on('mouseover', 'edge', (event) => {
    const edge = event.target as cytoscape.EdgeSingular;
    edge.addClass('hover');
    const at = edge.renderedMidpoint();
    onHover({ x: at.x, y: at.y, ...edgeTooltip(edge, names) });
  });
  view.on('mouseout', 'edge', (event) => {
    (event.target as cytoscape.EdgeSingular).removeClass('hover');
    onHover(null);
  });
  view.on('pan zoom', () => onHover(null));
  view.on('tap', 'node', (event) => onPick((event.target as cytoscape.NodeSingular).id()));
}

interface Mount extends Omit<Pointer, 'names' | 'labels'> {
  container: HTMLElement;
  /** An element whose computed colour resolves the scheme's CSS variables. */
  probe: HTMLElement;
  graph: DependencyGraph;
  centre: string;
  styles: Map<string, TypeStyle>;
}

/** Draws the graph into `container` and keeps it drawn (labels, pointer, colour scheme) until `destroy`. */
function mountDrawing({ container, probe, graph, centre, styles, onHover, onPick }: Mount) {
  let colours = resolveColours(probe);
  const measure = labelMeasure(() => colours);
  const names = new Map(graph.nodes.map((node) => [node.ci_id, node]));
  const widest = Math.max(...graph.nodes.map((node) => measure(shortName(node.name))));
  const view = cytoscape({
    container,
    elements: graphElements(graph, centre, styles),
    style: stylesheet(colours),
    layout: graphLayout(graph.nodes.length, widest),
    minZoom: 0.02,
    maxZoom: 6,
    userZoomingEnabled: true,
    userPanningEnabled: true,
    // the drawing is for the pointer; the list below it serves the keyboard
    boxSelectionEnabled: false,
    autoungrabify: true,
  });
  if (window.__cinvTestHooks) window.__cinvGraph = view;
  const labels = labelPlacer(view, measure);
  fit(view);
  placeLabels(view, measure, null);
  view.on('viewport resize', labels.relabel);
  followPointer(view, { names, labels, onHover, onPick });
  const stopWatching = onSchemeChange(() => {
    colours = resolveColours(probe);
    view.style(stylesheet(colours));
  });
  const destroy = () => {
    stopWatching();
    labels.cancel();
    if (window.__cinvGraph === view) delete window.__cinvGraph;
    view.destroy();
  };
  return { view, destroy };
}

function ZoomControls({ cy }: { cy: { current: cytoscape.Core | null } }) {
  const zoomBy = (factor: number) => {
    const view = cy.current;
    if (view)
      view.zoom({ level: view.zoom() * factor, renderedPosition: { x: view.width() / 2, y: view.height() / 2 } });
  };
  return (
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
  );
}

/**
 * The graph drawn by cytoscape as layers along the dependencies (dagre), with zoom buttons and a
 * tooltip naming what the pointer is on; a tap on a CI other than the centre re-centres on it.
 */
export function Drawing({
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
    const onPick = (id: string) => {
      if (id !== centre) navigate(`/ci/${id}${moment}`);
    };
    const drawing = mountDrawing({
      container: box.current,
      probe: probe.current,
      graph,
      centre,
      styles,
      onHover: setHovered,
      onPick,
    });
    cy.current = drawing.view;
    return () => {
      cy.current = null;
      drawing.destroy();
    };
  }, [graph, centre, moment, styles]);
  return (
    <div class="graph-frame">
      <div
        ref={box}
        class="graph-canvas"
        role="img"
        aria-label={`Drawing of ${graph.nodes.length} items and ${graph.edges.length} relationships; the list below it holds the same items`}
      />
      <span ref={probe} class="graph-probe" aria-hidden="true" />
      <ZoomControls cy={cy} />
      {hovered ? (
        <div class="graph-tooltip" style={{ left: `${hovered.x}px`, top: `${hovered.y}px` }} role="tooltip">
          <strong>{hovered.title}</strong>
          <span class="meta">{hovered.detail}</span>
        </div>
      ) : null}
    </div>
  );
}
