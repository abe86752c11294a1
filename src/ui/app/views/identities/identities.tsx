import type { ViewProps } from '../view';
import { api } from '../../lib/api';
import type { IdentityPage } from '../../lib/api-shapes';
import { count, dateTime, relative } from '../../lib/format';
import { Link, setParams } from '../../lib/router';
import { DataTable } from '../../components/data-table';
import { SelectField, useDraft } from '../../components/fields';
import { Empty, Show, useLoad } from '../../components/states';
import { IdentityView } from './identity';
import { ReviewQueue } from './review';

const SORTS = [
  ['name', 'Name'],
  ['updated_at', 'Recently updated'],
  ['created_at', 'Recently created'],
] as const;

/** `/identities` lists them, `/identities/review` is the review queue, `/identities/{id}` one identity. */
export default function Identities({ me, place }: ViewProps) {
  const segment = place.path.split('/')[2];
  if (segment === 'review') return <ReviewQueue me={me} params={place.params} />;
  if (segment) return <IdentityView id={segment} />;
  return <IdentityList params={place.params} />;
}

/** The URL's filters as the list route takes them: a name contains, a kind equals. */
function listQuery(params: URLSearchParams) {
  const name = params.get('name') ?? '';
  const kind = params.get('kind') ?? '';
  const sortBy = params.get('sort_by') ?? 'name';
  return {
    name,
    kind,
    sortBy,
    query: {
      filter: [...(name ? [`name:ilike:${name}`] : []), ...(kind ? [`kind:eq:${kind}`] : [])],
      sort_by: sortBy,
      sort_order: sortBy === 'name' ? 'asc' : 'desc',
      cursor: params.get('cursor') ?? undefined,
      limit: 50,
    },
  };
}

function IdentityList({ params }: { params: URLSearchParams }) {
  const { name, kind, sortBy, query } = listQuery(params);
  const loaded = useLoad(JSON.stringify(query), (signal) => api<IdentityPage>('/api/v1/identities', { query, signal }));
  return (
    <section class="identities" aria-labelledby="identities-heading">
      <h1 id="identities-heading">Identities</h1>
      <p class="meta">
        The hosts that CIs of several sources describe, each reconciled from its observations.{' '}
        <Link href="/identities/review">Review queue</Link>
      </p>
      <div class="toolbar">
        <NameFilter name={name} />
        <SelectField
          label="Kind"
          value={kind}
          onValue={(value) => setParams({ kind: value || undefined, cursor: undefined })}
          choices={[['', 'Any'], 'host', 'database-server']}
        />
        <SelectField
          label="Sort"
          value={sortBy}
          onValue={(value) => setParams({ sort_by: value === 'name' ? undefined : value, cursor: undefined })}
          choices={SORTS}
        />
      </div>
      <Show loaded={loaded} what="identities">
        {(page) =>
          page.items.length === 0 ? (
            <Empty>{name || kind ? 'No identities match these filters.' : 'No identities yet.'}</Empty>
          ) : (
            <>
              <DataTable
                label="Identities"
                rows={page.items}
                rowKey={(identity) => identity.id}
                columns={[
                  {
                    header: 'Name',
                    cell: (identity) => <Link href={`/identities/${identity.id}`}>{identity.name}</Link>,
                  },
                  { header: 'Kind', cell: (identity) => identity.kind },
                  { header: 'Observations', cell: (identity) => count(identity.observation_count) },
                  {
                    header: 'Updated',
                    cell: (identity) => (
                      <span title={dateTime(identity.updated_at)}>{relative(identity.updated_at)}</span>
                    ),
                  },
                ]}
              />
              <CursorPager label="Identities" page={page} later={Boolean(query.cursor)} />
            </>
          )
        }
      </Show>
    </section>
  );
}

/** A name filter over the URL's `name`: applied when submitted, from the first page. */
function NameFilter({ name }: { name: string }) {
  const [draft, setDraft] = useDraft(name);
  return (
    <form
      class="inline"
      role="search"
      onSubmit={(event) => {
        event.preventDefault();
        setParams({ name: draft.trim() || undefined, cursor: undefined });
      }}
    >
      <label for="identity-name">Name contains</label>
      <input
        id="identity-name"
        type="search"
        value={draft}
        maxLength={200}
        onInput={(event) => setDraft((event.currentTarget as HTMLInputElement).value)}
      />
      <button type="submit" class="primary">
        Filter
      </button>
    </form>
  );
}

/** Cursor paging: the next page by the cursor in the URL; the previous one is the history entry before. */
function CursorPager({
  label,
  page,
  later,
}: {
  label: string;
  page: { has_more: boolean; next_cursor: string | null };
  later: boolean;
}) {
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      {later ? (
        <button type="button" onClick={() => history.back()}>
          ← Previous
        </button>
      ) : null}
      <button
        type="button"
        disabled={!page.has_more || !page.next_cursor}
        onClick={() => setParams({ cursor: page.next_cursor ?? undefined })}
      >
        Next →
      </button>
    </nav>
  );
}
