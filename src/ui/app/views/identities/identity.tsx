import { useMemo } from 'preact/hooks';
import { api } from '../../lib/api';
import type { IdentityChange, IdentityDetail, IdentityGraph, ReconciledField } from '../../lib/api-shapes';
import { count, dateTime, relative } from '../../lib/format';
import {
  asDependencyGraph,
  competingLine,
  competingTitle,
  reasonText,
  sourceLabel,
  valueText,
} from '../../lib/identities';
import { Link } from '../../lib/router';
import { DataTable } from '../../components/data-table';
import { Drawing } from '../../components/graph-canvas';
import { typeStyles } from '../../components/graph-drawing';
import { useSourceNames } from '../../components/source-names';
import { Empty, Show, useLoad } from '../../components/states';

type Names = ReadonlyMap<number, string>;

/** One identity: its reconciled fields with their provenance, observations, changes, graph and open conflicts. */
export function IdentityView({ id }: { id: string }) {
  const loaded = useLoad(id, (signal) =>
    api<IdentityDetail>(`/api/v1/identities/${encodeURIComponent(id)}`, { signal }),
  );
  const names = useSourceNames();
  return (
    <Show loaded={loaded} what="the identity">
      {(identity) => (
        <article class="identity-detail">
          <IdentityHeader identity={identity} />
          <Fields fields={identity.fields} names={names} />
          <Observations identity={identity} names={names} />
          <Changes changes={identity.changes} names={names} />
          <IdentityGraphSection id={identity.id} />
        </article>
      )}
    </Show>
  );
}

function IdentityHeader({ identity }: { identity: IdentityDetail }) {
  const open = identity.conflicts.length;
  return (
    <header class="ci-header">
      <p class="meta">
        <Link href="/identities">Identities</Link> / {identity.kind}
      </p>
      <h1>{identity.name}</h1>
      <dl class="facts">
        <div>
          <dt>Kind</dt>
          <dd>{identity.kind}</dd>
        </div>
        <div>
          <dt>Observations</dt>
          <dd>{count(identity.observations.length)}</dd>
        </div>
        <div>
          <dt>First seen</dt>
          <dd>{dateTime(identity.created_at)}</dd>
        </div>
        <div>
          <dt>Updated</dt>
          <dd title={dateTime(identity.updated_at)}>{relative(identity.updated_at)}</dd>
        </div>
        {identity.retired_at ? (
          <div>
            <dt>Retired</dt>
            <dd>{dateTime(identity.retired_at)}</dd>
          </div>
        ) : null}
      </dl>
      {open > 0 ? (
        <p class="notice" role="status">
          {open === 1 ? 'A conflict is' : `${count(open)} conflicts are`} open over its observations:{' '}
          {identity.conflicts.map((conflictId, index) => (
            <span key={conflictId}>
              {index > 0 ? ', ' : ''}
              <Link href={`/identities/review?conflict=${conflictId}`}>
                {open === 1 ? 'review it' : `conflict ${index + 1}`}
              </Link>
            </span>
          ))}
          .
        </p>
      ) : null}
    </header>
  );
}

/** Each field's value with its source, since when and why; the values other sources report on hover or when opened. */
function Fields({ fields, names }: { fields: IdentityDetail['fields']; names: Names }) {
  const rows = Object.entries(fields).sort(([a], [b]) => a.localeCompare(b));
  return (
    <section aria-labelledby="fields-heading">
      <h2 id="fields-heading">Reconciled record</h2>
      {rows.length === 0 ? (
        <Empty>No source reports a field of it.</Empty>
      ) : (
        <DataTable
          label="Reconciled fields"
          rows={rows}
          rowKey={([name]) => name}
          columns={[
            { header: 'Field', cell: ([name]) => <code>{name}</code> },
            {
              header: 'Value',
              class: 'value',
              cell: ([, field]) => (
                <>
                  {valueText(field.value)}
                  <Competing field={field} names={names} />
                </>
              ),
            },
            {
              header: 'Source',
              cell: ([, field]) => <Link href={`/ci/${field.ci_id}`}>{sourceLabel(names, field.source_id)}</Link>,
            },
            { header: 'Since', cell: ([, field]) => dateTime(field.since) },
            {
              header: 'Reason',
              cell: ([, field]) => (
                <span class={field.reason === 'stale' ? 'stale' : undefined}>{reasonText(field.reason)}</span>
              ),
            },
          ]}
        />
      )}
    </section>
  );
}

/** The values other observations report: a title on hover, a list when opened (by keyboard too). */
function Competing({ field, names }: { field: ReconciledField; names: Names }) {
  if (field.competing.length === 0) return null;
  const stale = field.competing.filter((entry) => entry.stale).length;
  return (
    <details class="competing">
      <summary title={competingTitle(field, names, dateTime)}>
        {field.competing.length} other value{field.competing.length === 1 ? '' : 's'}
        {stale ? ` (${stale} stale)` : ''}
      </summary>
      <ul aria-label="Competing values">
        {field.competing.map((entry) => (
          <li key={`${entry.ci_id} ${entry.source_id}`} class={entry.stale ? 'stale' : undefined}>
            <Link href={`/ci/${entry.ci_id}`}>{competingLine(entry, names, dateTime)}</Link>
          </li>
        ))}
      </ul>
    </details>
  );
}

function Observations({ identity, names }: { identity: IdentityDetail; names: Names }) {
  return (
    <section aria-labelledby="observations-heading">
      <h2 id="observations-heading">
        Observations <span class="meta">({count(identity.observations.length)})</span>
      </h2>
      <DataTable
        label="Observations"
        rows={identity.observations}
        rowKey={(observation) => observation.ci_id}
        columns={[
          { header: 'CI', cell: (observation) => <Link href={`/ci/${observation.ci_id}`}>{observation.name}</Link> },
          { header: 'Type', cell: (observation) => observation.ci_type },
          { header: 'Role', cell: (observation) => (observation.role === 'self' ? 'the host' : 'runs on it') },
          {
            header: 'Source',
            cell: (observation) =>
              `${sourceLabel(names, observation.source_id)}${observation.scope_id ? ` · ${observation.scope_id}` : ''}`,
          },
          {
            header: 'Last seen',
            cell: (observation) => (
              <span title={dateTime(observation.last_seen)}>
                {observation.last_seen ? relative(observation.last_seen) : '—'}
              </span>
            ),
          },
        ]}
      />
    </section>
  );
}

/** The changes of every observation, merged, newest first. */
function Changes({ changes, names }: { changes: IdentityChange[]; names: Names }) {
  return (
    <section aria-labelledby="identity-changes-heading" class="timeline">
      <h2 id="identity-changes-heading">Changes across sources</h2>
      {changes.length === 0 ? (
        <Empty>No changes recorded.</Empty>
      ) : (
        <ul class="changes" aria-label="Changes of its observations, newest first">
          {changes.map((change) => (
            <li key={change.id}>
              <article class={`change change-${change.change_type.toLowerCase()}`}>
                <header>
                  <span class={`badge ${change.change_type.toLowerCase()}`}>{change.change_type}</span>
                  <time dateTime={change.changed_at}>{dateTime(change.changed_at)}</time>
                  <span class="fields">
                    {change.changed_fields.slice(0, 4).join(', ')}
                    {change.changed_fields.length > 4 ? ` +${change.changed_fields.length - 4} more` : ''}
                  </span>
                  <span class="ci">
                    <Link href={`/ci/${change.ci_id}`}>{change.ci_name}</Link>
                    <span class="meta">
                      {' '}
                      {change.ci_type} · {sourceLabel(names, change.source_id)}
                    </span>
                  </span>
                </header>
              </article>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** The identity, its observations and what they relate to: drawn, and listed for the keyboard. */
function IdentityGraphSection({ id }: { id: string }) {
  const loaded = useLoad(id, (signal) =>
    api<IdentityGraph>(`/api/v1/identities/${encodeURIComponent(id)}/graph`, { signal }),
  );
  return (
    <section aria-labelledby="identity-graph-heading" class="graph-view">
      <h2 id="identity-graph-heading">Graph</h2>
      <Show loaded={loaded} what="the graph">
        {(graph) =>
          graph.nodes.length <= 1 ? <Empty>Nothing to draw.</Empty> : <GraphBody graph={graph} centre={id} />
        }
      </Show>
    </section>
  );
}

function GraphBody({ graph, centre }: { graph: IdentityGraph; centre: string }) {
  const drawn = useMemo(() => asDependencyGraph(graph), [graph]);
  const styles = useMemo(() => typeStyles(drawn.nodes), [drawn]);
  const names = useMemo(() => new Map(graph.nodes.map((node) => [node.id, node])), [graph]);
  const link = (nodeId: string) => {
    const node = names.get(nodeId);
    if (!node) return nodeId;
    return node.type === 'identity' ? node.name : <Link href={`/ci/${node.id}`}>{node.name}</Link>;
  };
  return (
    <>
      <Drawing graph={drawn} centre={centre} moment="" styles={styles} />
      <ul class="neighbours graph-edges" aria-label="Relationships of the graph">
        {graph.edges.map((edge) => (
          <li key={`${edge.from} ${edge.to} ${edge.type}`}>
            {link(edge.from)} <span class="meta">{edge.type}</span> {link(edge.to)}
          </li>
        ))}
      </ul>
    </>
  );
}
