import type { ViewProps } from '../view';
import { SavedViews } from '../../components/saved-views';
import { goToOffset, setParams, withParams } from '../../lib/router';
import { FilterBuilder } from '../../components/filter-builder';
import { MomentPicker, PastNotice } from '../../components/moment-picker';
import { SearchBox, SelectField } from '../../components/fields';
import { Empty, ErrorBox, Pager, Show } from '../../components/states';
import { ColumnPicker } from './column-picker';
import { useSourceNames } from '../../components/source-names';
import { useInventoryExport, useInventoryQuery } from './query';
import { CiTable } from './table';

const STATUSES = ['active', 'inactive', 'archived', 'all'] as const;
const FIELDS = ['name', 'namespace', 'ci_type', 'status', 'created_at', 'updated_at', 'last_seen'];
/** last_seen is not history: the past is neither filtered nor sorted by it. */
const PAST_FIELDS = FIELDS.filter((field) => field !== 'last_seen');
const PAGE_SIZES = ['25', '50', '100', '250'];

export default function Inventory({ place }: ViewProps) {
  const { params } = place;
  const view = useInventoryQuery(params);
  const { filters, columns, limit } = view;
  const sources = useSourceNames();
  const csv = useInventoryExport(view.query, columns, sources);
  return (
    <section class="inventory">
      <h1>Inventory</h1>
      {view.asOf ? (
        <PastNotice
          asOf={view.asOf}
          what="the inventory"
          now={`/inventory${withParams(params, { as_of: undefined, offset: undefined })}`}
          compare={`/compare?from=${encodeURIComponent(view.asOf)}`}
        />
      ) : null}
      <SavedViews view="inventory" params={params} />
      <MomentPicker asOf={view.asOf} />
      <StatusTabs status={view.status} />
      <div class="toolbar">
        <SearchBox
          q={view.q}
          label="Search names, namespaces and types"
          id="ci-query"
          formClass="inline"
          maxLength={200}
        />
        <SelectField
          label="Source"
          value={view.sourceId}
          onValue={(value) => setParams({ source_id: value || undefined, offset: undefined })}
          choices={[['', 'All sources'], ...[...sources].map(([id, name]) => [String(id), name] as const)]}
        />
      </div>
      <FilterBuilder
        id="ci-filter"
        fields={view.asOf ? PAST_FIELDS : FIELDS}
        jsonPrefixes={['raw_data', 'type_data']}
        suggestions={view.suggestions}
        filters={filters}
        onChange={(next) => setParams({ filter: next, offset: undefined })}
      />
      <ColumnPicker columns={columns} suggestions={view.suggestions} />
      <div class="toolbar">
        <button type="button" onClick={csv.start} disabled={csv.progress !== undefined}>
          {csv.progress ? `Exporting ${csv.progress}` : 'Download CSV'}
        </button>
        <SelectField
          label="Rows per page"
          value={String(limit)}
          onValue={(value) => setParams({ limit: value, offset: undefined })}
          choices={PAGE_SIZES}
        />
      </div>
      {csv.error ? <ErrorBox error={csv.error} /> : null}
      <Results view={view} sources={sources} params={params} />
    </section>
  );
}

/** The page of CIs the view asks for, with its pager; or why there is none. */
function Results({
  view,
  sources,
  params,
}: {
  view: ReturnType<typeof useInventoryQuery>;
  sources: ReadonlyMap<number, string>;
  params: URLSearchParams;
}) {
  const { filters, columns, limit, offset } = view;
  return (
    <Show loaded={view.loaded} what="configuration items">
      {(page) =>
        page.items.length === 0 ? (
          <Empty>
            No configuration items match this view
            {filters.length ? ': remove a filter or change the status tab.' : '.'}
          </Empty>
        ) : (
          <>
            <CiTable
              items={page.items}
              columns={columns}
              sources={sources}
              sort={{ params, sortBy: view.sortBy, sortOrder: view.sortOrder }}
              asOf={view.asOf}
            />
            <Pager
              label="Configuration items"
              offset={offset}
              limit={limit}
              shown={page.items.length}
              total={page.total}
              exact={page.total_exact}
              hasMore={page.has_more}
              go={goToOffset}
              next={() =>
                setParams({ offset: String(offset + page.items.length), cursor: page.next_cursor ?? undefined })
              }
            />
          </>
        )
      }
    </Show>
  );
}

function StatusTabs({ status }: { status: string }) {
  return (
    <div role="tablist" aria-label="Status" class="tabs">
      {STATUSES.map((name) => (
        <button
          key={name}
          type="button"
          role="tab"
          aria-selected={status === name}
          onClick={() => setParams({ status: name === 'active' ? undefined : name, offset: undefined })}
        >
          {name[0]!.toUpperCase() + name.slice(1)}
        </button>
      ))}
    </div>
  );
}
