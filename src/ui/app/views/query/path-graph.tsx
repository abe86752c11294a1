import { useMemo } from 'preact/hooks';
import { Drawing } from '../../components/graph-canvas';
import { typeStyles, type TypeStyle } from '../../components/graph-drawing';
import { Empty, Show, useLoad } from '../../components/states';
import type { GraphNode } from '../../lib/api-shapes';
import { count } from '../../lib/format';
import { Link } from '../../lib/router';
import type { Asked } from './asked';
import { pathDrawing, type PathDrawing } from './path-graph-data';

function Swatch({ look }: { look: TypeStyle | undefined }) {
  return (
    <span class={`swatch shape-${look?.shape ?? 'ellipse'}`} style={{ background: look?.colour }} aria-hidden="true" />
  );
}

/** The same CIs as the drawing, stage by stage, as links: for the keyboard and screen readers. */
function StageList({
  stages,
  styles,
  moment,
}: {
  stages: GraphNode[][];
  styles: Map<string, TypeStyle>;
  moment: string;
}) {
  return (
    <div class="graph-list">
      {stages.map((nodes, index) => (
        <details key={index} open={nodes.length <= 20}>
          <summary>
            {index === 0 ? 'Start' : `After hop ${index}`} <span class="meta">({count(nodes.length)})</span>
          </summary>
          <ul class="neighbours" aria-label={index === 0 ? 'Start' : `After hop ${index}`}>
            {nodes.map((node) => (
              <li key={node.ci_id}>
                <Swatch look={styles.get(node.ci_type)} />
                <Link href={`/ci/${node.ci_id}${moment}`}>{node.name}</Link> <span class="meta">{node.ci_type}</span>
              </li>
            ))}
          </ul>
        </details>
      ))}
    </div>
  );
}

function Legend({ styles }: { styles: Map<string, TypeStyle> }) {
  return (
    <div class="graph-legend" aria-label="Legend of the drawing" role="group">
      <ul>
        {[...styles.entries()].map(([type, look]) => (
          <li key={type}>
            <Swatch look={look} /> {type}
          </li>
        ))}
      </ul>
      <ul class="meta">
        <li>left depends on right; an arrow points at what is depended on</li>
        <li>relationships are drawn for hops of one step; a click opens an item</li>
      </ul>
    </div>
  );
}

function Drawn({ drawing, asOf }: { drawing: PathDrawing; asOf: string | undefined }) {
  const styles = useMemo(() => typeStyles(drawing.graph.nodes), [drawing]);
  const moment = asOf ? `?as_of=${encodeURIComponent(asOf)}` : '';
  return (
    <>
      <p class="meta">
        {count(drawing.graph.nodes.length)} items and {count(drawing.graph.edges.length)} relationships along the path
        {drawing.cut ? ' (a stage held more than is drawn)' : ''}.
      </p>
      <Drawing graph={drawing.graph} centre="" moment={moment} styles={styles} />
      <Legend styles={styles} />
      <StageList stages={drawing.stages} styles={styles} moment={moment} />
    </>
  );
}

/** The path of a query that hops, drawn: what each match held and the relationships between them. */
export function PathGraph({ asked }: { asked: Asked }) {
  const loaded = useLoad(JSON.stringify(asked), (signal) => pathDrawing(asked, signal));
  return (
    <section aria-label="The path as a graph" class="graph-view">
      <Show loaded={loaded} what="the graph">
        {(drawing) =>
          drawing.graph.nodes.length === 0 ? (
            <Empty>Nothing to draw.</Empty>
          ) : (
            <Drawn drawing={drawing} asOf={asked.asOf} />
          )
        }
      </Show>
    </section>
  );
}
