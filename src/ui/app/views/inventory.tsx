import { useMemo, useState } from 'preact/hooks';
import type { ViewProps } from '../main';
import { api } from '../lib/api';
import { allPages, csvText, exportName, saveCsv } from '../lib/csv';
import { dateTime, relative, scalar } from '../lib/format';
import { leafPaths } from '../lib/paths';
import { Link, setParams, withParams } from '../lib/router';
import { FilterBuilder } from '../components/filter-builder';
import { asApiError, Empty, ErrorBox, Pager, Show, useLoad } from '../components/states';

interface Ci {
  ci_id: string;
  name: string;
  namespace: string | null;
  ci_type: string;
  status: 'active' | 'inactive' | 'archived';
  status_updated_at: string | null;
  last_seen: string;
  created_at: string;
  updated_at: string;
  raw_data: Record<string, unknown>;
  attributes?: Record<string, unknown>;
}

interface CiPage {
  items: Ci[];
  total: number;
  total_exact: boolean;
  offset: number;
  limit: number;
}

const STATUSES = ['active', 'inactive', 'archived', 'all'] as const;
const FIELDS = ['name', 'namespace', 'ci_type', 'status', 'created_at', 'updated_at', 'last_seen'];
const SORTABLE: [string, string][] = [
  ['name', 'Name'],
  ['namespace', 'Namespace'],
  ['ci_type', 'Type'],
  ['status', 'Status'],
  ['last_seen', 'Last seen'],
  ['updated_at', 'Updated'],
  ['created_at', 'Created'],
];
/** The CSV download walks the view page by page, up to this many rows; larger exports belong to the API. */
const CSV_ROWS = 10_000;

function columnsOf(params: URLSearchParams): string[] {
  return (params.get('cols') ?? '')
    .split(',')
    .map((path) => path.trim())
    .filter(Boolean);
}

export default function Inventory({ place }: ViewProps) {
  const { params } = place;
  const status = params.get('status') ?? 'active';
  const filters = params.getAll('filter');
  const sortBy = params.get('sort_by') ?? 'created_at';
  const sortOrder = params.get('sort_order') === 'asc' ? 'asc' : 'desc';
  const limit = Number(params.get('limit') ?? 50) || 50;
  const offset = Number(params.get('offset') ?? 0) || 0;
  const columns = columnsOf(params);
  const query = { status, filter: filters, sort_by: sortBy, sort_order: sortOrder, limit, offset, include_attributes: columns.length ? columns.join(',') : undefined };
  const loaded = useLoad(JSON.stringify(query), (signal) => api<CiPage>('/api/v1/configuration-items', { query, signal }));
  const suggestions = useMemo(() => leafPaths((loaded.data?.items ?? []).slice(0, 50).map((ci) => ci.raw_data), 'raw_data'), [loaded.data]);
  const [exporting, setExporting] = useState<string>();
  const [exportError, setExportError] = useState<ReturnType<typeof asApiError>>();

  const sortLink = (field: string) => withParams(params, { sort_by: field, sort_order: sortBy === field && sortOrder === 'desc' ? 'asc' : 'desc', offset: undefined });

  const exportCsv = async () => {
    setExportError(undefined);
    setExporting('0 rows…');
    try {
      const cis = await allPages(
        async (offset, limit) => (await api<CiPage>('/api/v1/configuration-items', { query: { ...query, offset, limit } })).items,
        1000,
        CSV_ROWS,
        (n) => setExporting(`${n.toLocaleString('en')} rows…`),
      );
      const header = ['ci_id', 'name', 'namespace', 'ci_type', 'status', 'last_seen', 'created_at', 'updated_at', ...columns];
      const rows = cis.map((ci) => [ci.ci_id, ci.name, ci.namespace, ci.ci_type, ci.status, ci.last_seen, ci.created_at, ci.updated_at, ...columns.map((path) => ci.attributes?.[path])]);
      saveCsv(csvText(header, rows), exportName('inventory'));
    } catch (error) {
      setExportError(asApiError(error));
    } finally {
      setExporting(undefined);
    }
  };

  return (
    <section class="inventory">
      <h1>Inventory</h1>
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
      <FilterBuilder
        id="ci-filter"
        fields={FIELDS}
        jsonPrefixes={['raw_data', 'type_data']}
        suggestions={suggestions}
        filters={filters}
        onChange={(next) => setParams({ filter: next, offset: undefined })}
      />
      <ColumnPicker columns={columns} suggestions={suggestions} />
      <div class="toolbar">
        <button type="button" onClick={() => void exportCsv()} disabled={exporting !== undefined}>
          {exporting ? `Exporting ${exporting}` : 'Download CSV'}
        </button>
        <label>
          Rows per page{' '}
          <select value={String(limit)} onChange={(event) => setParams({ limit: (event.currentTarget as HTMLSelectElement).value, offset: undefined })}>
            {[25, 50, 100, 250].map((n) => (
              <option key={n} value={String(n)}>
                {n}
              </option>
            ))}
          </select>
        </label>
      </div>
      {exportError ? <ErrorBox error={exportError} /> : null}
      <Show loaded={loaded} what="configuration items">
        {(page) =>
          page.items.length === 0 ? (
            <Empty>No configuration items match this view{filters.length ? ': remove a filter or change the status tab.' : '.'}</Empty>
          ) : (
            <>
              <div class="table-wrap">
                <table class="grid" aria-label="Configuration items">
                  <thead>
                    <tr>
                      {SORTABLE.slice(0, 5).map(([field, label]) => (
                        <SortHeader key={field} field={field} label={label} sortBy={sortBy} sortOrder={sortOrder} href={sortLink(field)} />
                      ))}
                      {columns.map((path) => (
                        <th key={path} scope="col">
                          <code>{path}</code>
                        </th>
                      ))}
                      {SORTABLE.slice(5).map(([field, label]) => (
                        <SortHeader key={field} field={field} label={label} sortBy={sortBy} sortOrder={sortOrder} href={sortLink(field)} />
                      ))}
                    </tr>
                  </thead>
                  <tbody>
                    {page.items.map((ci) => (
                      <tr key={ci.ci_id}>
                        <td>
                          <Link href={`/ci/${ci.ci_id}`}>{ci.name}</Link>
                        </td>
                        <td>{ci.namespace ?? <span class="meta">—</span>}</td>
                        <td>{ci.ci_type}</td>
                        <td>
                          <span class={`status ${ci.status}`}>{ci.status}</span>
                        </td>
                        <td title={dateTime(ci.last_seen)}>{relative(ci.last_seen)}</td>
                        {columns.map((path) => (
                          <td key={path} class="value">
                            {scalar(ci.attributes?.[path] ?? null)}
                          </td>
                        ))}
                        <td>{dateTime(ci.updated_at)}</td>
                        <td>{dateTime(ci.created_at)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
              <Pager
                label="Configuration items"
                offset={offset}
                limit={limit}
                shown={page.items.length}
                total={page.total}
                exact={page.total_exact}
                go={(next) => setParams({ offset: next ? String(next) : undefined })}
              />
            </>
          )
        }
      </Show>
    </section>
  );
}

function SortHeader(props: { field: string; label: string; sortBy: string; sortOrder: string; href: string }) {
  const active = props.sortBy === props.field;
  return (
    <th scope="col" aria-sort={active ? (props.sortOrder === 'asc' ? 'ascending' : 'descending') : 'none'}>
      <Link href={`/inventory${props.href}`} class="sort">
        {props.label}
        <span aria-hidden="true">{active ? (props.sortOrder === 'asc' ? ' ▲' : ' ▼') : ''}</span>
      </Link>
    </th>
  );
}

/** Extra columns from raw_data paths, fetched by the API through `include_attributes`. */
function ColumnPicker({ columns, suggestions }: { columns: string[]; suggestions: readonly string[] }) {
  const [path, setPath] = useState('');
  return (
    <form
      class="column-picker"
      aria-label="Columns"
      onSubmit={(event) => {
        event.preventDefault();
        const clean = path.trim().replace(/^raw_data\./, '');
        if (clean && !columns.includes(clean)) setParams({ cols: [...columns, clean].join(','), offset: undefined });
        setPath('');
      }}
    >
      <label>
        <span>Add a column from raw_data</span>
        <input list="column-paths" value={path} placeholder="spec.nodeName" onInput={(event) => setPath((event.currentTarget as HTMLInputElement).value)} />
      </label>
      <datalist id="column-paths">
        {suggestions.map((suggestion) => (
          <option key={suggestion} value={suggestion.replace(/^raw_data\./, '')} />
        ))}
      </datalist>
      <button type="submit">Add column</button>
      {columns.map((column) => (
        <span key={column} class="chip">
          <code>{column}</code>
          <button
            type="button"
            aria-label={`Remove column ${column}`}
            onClick={() => setParams({ cols: columns.filter((c) => c !== column).join(',') || undefined })}
          >
            ×
          </button>
        </span>
      ))}
    </form>
  );
}
