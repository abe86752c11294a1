import { useMemo, useState } from 'preact/hooks';
import type { ViewProps } from './view';
import { api } from '../lib/api';
import type { ConfigurationItem, Relationship, RelationshipPage } from '../lib/api-shapes';
import { dateTime, relative } from '../lib/format';
import { Link } from '../lib/router';
import { CiQualityPanel } from './quality/ci-panel';
import { JsonTree } from '../components/json-tree';
import { MomentPicker, PastNotice } from '../components/moment-picker';
import { Empty, ErrorBox, Loading, Show, useLoad } from '../components/states';
import { GraphView, type Radius } from '../components/graph-view';
import { ChangesAround, Timeline } from './ci-changes';
import { useCursorWalk } from '../components/cursor-walk';

/** The identities the CI observes, once the detail names them (`identities`); absent or empty: none. */
type CiWithIdentity = ConfigurationItem & { identities?: { id: string; kind: string; role: string }[] };

export default function CiView({ place }: ViewProps) {
  const id = place.path.split('/')[2] ?? '';
  const asOf = place.params.get('as_of') || undefined;
  const loaded = useLoad(`${id} ${asOf ?? ''}`, (signal) =>
    api<ConfigurationItem>(`/api/v1/configuration-items/${encodeURIComponent(id)}`, {
      query: asOf ? { as_of: asOf } : {},
      signal,
    }),
  );
  return (
    <>
      {asOf ? (
        <PastNotice
          asOf={asOf}
          what="this configuration item"
          now={`/ci/${id}`}
          compare={`/compare?from=${encodeURIComponent(asOf)}&ci=${encodeURIComponent(id)}`}
        />
      ) : null}
      <MomentPicker asOf={asOf} />
      <Show loaded={loaded} what="the configuration item">
        {(ci) => <Detail ci={ci} asOf={asOf} params={place.params} at={place.at} />}
      </Show>
    </>
  );
}

function Detail({
  ci,
  asOf,
  params,
  at,
}: {
  ci: ConfigurationItem;
  asOf?: string;
  params: URLSearchParams;
  at: number;
}) {
  const [radius, setRadius] = useState<Radius>({ depth: 2, direction: 'both' });
  return (
    <article class="ci-detail">
      <CiHeader ci={ci} asOf={asOf} />
      <div class="ci-columns">
        <div>
          {/* the verdicts are of the CI as it is now */}
          {asOf ? null : <CiQualityPanel ciId={ci.ci_id} />}
          <CiData ci={ci} />
          <Relationships ci={ci} asOf={asOf} />
        </div>
        <Timeline ci={ci} params={params} at={at} />
      </div>
      {/* a dependency graph is read like a map: across the page */}
      <GraphView ciId={ci.ci_id} asOf={asOf} radius={radius} onRadius={setRadius} />
      <ChangesAround ciId={ci.ci_id} radius={radius} params={params} at={at} />
    </article>
  );
}

/** The CI's name and facts: type, namespace, status, source, instance, first and last seen. */
function CiHeader({ ci, asOf }: { ci: ConfigurationItem; asOf?: string }) {
  return (
    <header class="ci-header">
      <p class="meta">
        <Link href={asOf ? `/inventory?as_of=${encodeURIComponent(asOf)}` : '/inventory'}>Inventory</Link> /{' '}
        {ci.ci_type}
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
        <IdentityFact ci={ci} />
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
  );
}

/** Links to the identities the CI observes: the host it is or runs on, the server it is. */
function IdentityFact({ ci }: { ci: CiWithIdentity }) {
  const identities = ci.identities ?? [];
  if (identities.length === 0) return null;
  return (
    <div>
      <dt>Identity</dt>
      {identities.map((identity) => (
        <dd key={identity.id}>
          <Link href={`/identities/${identity.id}`}>
            {identity.role === 'runs-on' ? `the ${identity.kind} it runs on` : `the ${identity.kind} it describes`}
          </Link>
        </dd>
      ))}
    </div>
  );
}

/** What the source reported (raw data) and what the type made of it, its metrics apart. */
function CiData({ ci }: { ci: ConfigurationItem }) {
  const { metrics, ...typeData } = ci.type_data as { metrics?: Record<string, unknown> };
  return (
    <>
      <section aria-labelledby="raw-heading">
        <h2 id="raw-heading">Raw data</h2>
        <JsonTree value={ci.raw_data} root="raw_data" />
      </section>
      <section aria-labelledby="type-heading">
        <h2 id="type-heading">Type data</h2>
        {Object.keys(typeData).length ? (
          <JsonTree value={typeData} root="type_data" />
        ) : (
          <Empty>This type has no type data.</Empty>
        )}
        {metrics ? (
          <>
            <h3>Metrics</h3>
            <JsonTree value={metrics} root="type_data.metrics" />
          </>
        ) : null}
      </section>
    </>
  );
}

function Relationships({ ci, asOf }: { ci: ConfigurationItem; asOf?: string }) {
  // an archived CI's neighbours are mostly gone too: show them at once
  const [inactive, setInactive] = useState(ci.status !== 'active');
  const moment = { ...(asOf ? { as_of: asOf } : {}), ...(inactive ? { include_inactive: true } : {}) };
  const walk = useCursorWalk<Relationship>(`${ci.ci_id} ${asOf ?? ''} ${inactive}`, (cursor, signal) =>
    api<RelationshipPage>(`/api/v1/configuration-items/${ci.ci_id}/relationships`, {
      query: cursor ? { cursor, ...moment } : { limit: 200, ...moment },
      signal,
    }),
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
      <label class="meta">
        <input type="checkbox" checked={inactive} onChange={() => setInactive(!inactive)} /> Inactive and archived too
      </label>
      {walk.error ? <ErrorBox error={walk.error} /> : null}
      {walk.items.length === 0 && walk.busy ? <Loading what="relationships" /> : null}
      {walk.items.length === 0 && !walk.busy && !walk.error ? <Empty>No relationships.</Empty> : null}
      {groups.map(([label, items]) => (
        <details key={label} open={groups.length <= 4}>
          <summary>
            {label} <span class="meta">({items.length})</span>
          </summary>
          <ul class="neighbours">
            {items.map((relationship) => (
              <li key={relationship.id}>
                <Link href={`/ci/${relationship.related_ci_id}${asOf ? `?as_of=${encodeURIComponent(asOf)}` : ''}`}>
                  {relationship.related_ci_name}
                </Link>{' '}
                <span class="meta">
                  {relationship.related_ci_type} · {relationship.related_ci_status}
                  {relationship.ended_at ? ` · ended ${dateTime(relationship.ended_at)}` : ''}
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
