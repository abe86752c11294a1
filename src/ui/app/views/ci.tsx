import { useMemo, useState } from 'preact/hooks';
import type { ViewProps } from './view';
import { api } from '../lib/api';
import { dateTime, relative } from '../lib/format';
import { Link } from '../lib/router';
import { ChangeItem, DiffModePicker, type ChangeRecord } from '../components/change';
import { JsonTree } from '../components/json-tree';
import { MomentPicker, PastNotice } from '../components/moment-picker';
import { Empty, ErrorBox, Loading, Show, useLoad } from '../components/states';
import { VirtualList } from '../components/virtual-list';
import { useCursorWalk, type CursorPage } from '../components/cursor-walk';

interface CiDetail {
  ci_id: string;
  name: string;
  namespace: string | null;
  ci_type: string;
  status: string;
  status_updated_at: string | null;
  last_seen: string | null;
  created_at: string;
  updated_at: string;
  raw_data: Record<string, unknown>;
  type_data: Record<string, unknown>;
  source: { id: number; name: string; collector_type: string } | null;
  scope_id: string | null;
  as_of?: string;
}

interface Relationship {
  id: string;
  relationship_type: string;
  direction: 'outgoing' | 'incoming';
  related_ci_id: string;
  related_ci_name: string;
  related_ci_type: string;
  related_ci_status: string;
}

export default function CiView({ place }: ViewProps) {
  const id = place.path.split('/')[2] ?? '';
  const asOf = place.params.get('as_of') || undefined;
  const loaded = useLoad(`${id} ${asOf ?? ''}`, (signal) =>
    api<CiDetail>(`/api/v1/configuration-items/${encodeURIComponent(id)}`, { query: asOf ? { as_of: asOf } : {}, signal }),
  );
  return (
    <>
      {asOf ? <PastNotice asOf={asOf} what="this configuration item" now={`/ci/${id}`} compare={`/compare?from=${encodeURIComponent(asOf)}&ci=${encodeURIComponent(id)}`} /> : null}
      <MomentPicker asOf={asOf} />
      <Show loaded={loaded} what="the configuration item">
        {(ci) => <Detail ci={ci} asOf={asOf} />}
      </Show>
    </>
  );
}

function Detail({ ci, asOf }: { ci: CiDetail; asOf?: string }) {
  const { metrics, ...typeData } = ci.type_data as { metrics?: Record<string, unknown> };
  return (
    <article class="ci-detail">
      <header class="ci-header">
        <p class="meta">
          <Link href={asOf ? `/inventory?as_of=${encodeURIComponent(asOf)}` : '/inventory'}>Inventory</Link> / {ci.ci_type}
        </p>
        <h1>{ci.name}</h1>
        <dl class="facts">
          <div>
            <dt>Type</dt>
            <dd>{ci.ci_type}</dd>
          </div>
          <div>
            <dt>Namespace</dt>
            <dd>{ci.namespace ?? '—'}</dd>
          </div>
          <div>
            <dt>Status</dt>
            <dd>
              <span class={`status ${ci.status}`}>{ci.status}</span>
              {ci.status_updated_at ? <span class="meta"> since {dateTime(ci.status_updated_at)}</span> : null}
            </dd>
          </div>
          <div>
            <dt>Source</dt>
            <dd>
              {ci.source ? (
                <>
                  {ci.source.name} <span class="meta">({ci.source.collector_type})</span>
                </>
              ) : (
                '—'
              )}
            </dd>
          </div>
          <div>
            <dt>Instance</dt>
            <dd>{ci.scope_id ?? '—'}</dd>
          </div>
          <div>
            <dt>First seen</dt>
            <dd>{dateTime(ci.created_at)}</dd>
          </div>
          <div>
            <dt>Last seen</dt>
            <dd title={dateTime(ci.last_seen)}>{ci.last_seen ? relative(ci.last_seen) : '— (not history)'}</dd>
          </div>
        </dl>
      </header>
      <div class="ci-columns">
        <div>
          <section aria-labelledby="raw-heading">
            <h2 id="raw-heading">Raw data</h2>
            <JsonTree value={ci.raw_data} root="raw_data" />
          </section>
          <section aria-labelledby="type-heading">
            <h2 id="type-heading">Type data</h2>
            {Object.keys(typeData).length ? <JsonTree value={typeData} root="type_data" /> : <Empty>This type has no type data.</Empty>}
            {metrics ? (
              <>
                <h3>Metrics</h3>
                <JsonTree value={metrics} root="type_data.metrics" />
              </>
            ) : null}
          </section>
          <Relationships ci={ci} asOf={asOf} />
        </div>
        <Timeline ci={ci} />
      </div>
    </article>
  );
}

function Relationships({ ci, asOf }: { ci: CiDetail; asOf?: string }) {
  const moment = asOf ? { as_of: asOf } : {};
  const walk = useCursorWalk<Relationship>(`${ci.ci_id} ${asOf ?? ''}`, (cursor, signal) =>
    api<CursorPage<Relationship>>(`/api/v1/configuration-items/${ci.ci_id}/relationships`, { query: cursor ? { cursor, ...moment } : { limit: 200, ...moment }, signal }),
  );
  const groups = useMemo(() => {
    const byKey = new Map<string, Relationship[]>();
    for (const relationship of walk.items) {
      const key = `${relationship.direction === 'outgoing' ? '' : '← '}${relationship.relationship_type}${relationship.direction === 'outgoing' ? ' →' : ''}`;
      byKey.set(key, [...(byKey.get(key) ?? []), relationship]);
    }
    return [...byKey.entries()].sort(([a], [b]) => a.localeCompare(b));
  }, [walk.items]);
  return (
    <section aria-labelledby="relationships-heading">
      <h2 id="relationships-heading">
        Relationships {walk.total !== undefined ? <span class="meta">({walk.total.toLocaleString('en')})</span> : null}
      </h2>
      {walk.error ? <ErrorBox error={walk.error} /> : null}
      {walk.items.length === 0 && walk.busy ? <Loading what="relationships" /> : null}
      {walk.items.length === 0 && !walk.busy && !walk.error ? <Empty>No relationships.</Empty> : null}
      {walk.items.length > 0 ? <Neighbourhood ci={ci} relationships={walk.items.slice(0, 24)} /> : null}
      {groups.map(([label, items]) => (
        <details key={label} open={groups.length <= 4}>
          <summary>
            {label} <span class="meta">({items.length})</span>
          </summary>
          <ul class="neighbours">
            {items.map((relationship) => (
              <li key={relationship.id}>
                <Link href={`/ci/${relationship.related_ci_id}${asOf ? `?as_of=${encodeURIComponent(asOf)}` : ''}`}>{relationship.related_ci_name}</Link>{' '}
                <span class="meta">
                  {relationship.related_ci_type} · {relationship.related_ci_status}
                </span>
              </li>
            ))}
          </ul>
        </details>
      ))}
      {walk.next ? (
        <button type="button" onClick={walk.more} disabled={walk.busy}>
          {walk.busy ? 'Loading…' : 'Load more relationships'}
        </button>
      ) : null}
    </section>
  );
}

/** The CI in the middle, up to 24 neighbours around it, each a link; arrows show the direction. */
function Neighbourhood({ ci, relationships }: { ci: CiDetail; relationships: Relationship[] }) {
  const size = 360;
  const centre = size / 2;
  const radius = 140;
  return (
    <svg class="graph" viewBox={`0 0 ${size} ${size}`} role="group" aria-label={`Neighbourhood of ${ci.name}: ${relationships.length} related items`}>
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" class="arrow" />
        </marker>
      </defs>
      {relationships.map((relationship, index) => {
        const angle = (2 * Math.PI * index) / relationships.length - Math.PI / 2;
        const x = centre + radius * Math.cos(angle);
        const y = centre + radius * Math.sin(angle);
        const outgoing = relationship.direction === 'outgoing';
        return (
          <g key={relationship.id}>
            <line
              x1={centre}
              y1={centre}
              x2={centre + (radius - 14) * Math.cos(angle)}
              y2={centre + (radius - 14) * Math.sin(angle)}
              class="edge"
              marker-end={outgoing ? 'url(#arrow)' : undefined}
              marker-start={outgoing ? undefined : 'url(#arrow)'}
            >
              <title>{relationship.relationship_type}</title>
            </line>
            <a href={`/ui/ci/${relationship.related_ci_id}`} aria-label={`${relationship.relationship_type} ${relationship.related_ci_name}`}>
              <circle cx={x} cy={y} r="9" class={`node ${relationship.related_ci_status}`} />
              <text x={x} y={y + 22} text-anchor="middle" class="label">
                {relationship.related_ci_name.length > 18 ? `${relationship.related_ci_name.slice(0, 17)}…` : relationship.related_ci_name}
              </text>
            </a>
          </g>
        );
      })}
      <circle cx={centre} cy={centre} r="14" class="node centre" />
    </svg>
  );
}

function Timeline({ ci }: { ci: CiDetail }) {
  const [mode, setMode] = useState<'inline' | 'split'>('inline');
  const walk = useCursorWalk<ChangeRecord>(ci.ci_id, (cursor, signal) =>
    api<CursorPage<ChangeRecord>>(`/api/v1/ci-changes/${ci.ci_id}`, { query: cursor ? { cursor } : { limit: 500 }, signal }),
  );
  return (
    <section aria-labelledby="timeline-heading" class="timeline">
      <div class="section-head">
        <h2 id="timeline-heading">
          Changes {walk.total !== undefined ? <span class="meta">({walk.total.toLocaleString('en')})</span> : null}
        </h2>
        <DiffModePicker mode={mode} setMode={setMode} />
      </div>
      {walk.error ? <ErrorBox error={walk.error} /> : null}
      {walk.items.length === 0 && walk.busy ? <Loading what="changes" /> : null}
      {walk.items.length === 0 && !walk.busy && !walk.error ? <Empty>No changes recorded.</Empty> : null}
      {walk.items.length > 0 ? (
        <VirtualList
          label="Change timeline, newest first"
          count={walk.items.length}
          estimate={44}
          onNearEnd={walk.next ? walk.more : undefined}
          row={(index) => {
            const record = walk.items[index]!;
            return <ChangeItem record={record} showCi={false} mode={mode} asOf={`/ci/${ci.ci_id}?as_of=${encodeURIComponent(record.changed_at)}`} />;
          }}
        />
      ) : null}
    </section>
  );
}
