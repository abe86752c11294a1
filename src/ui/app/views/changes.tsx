import { useEffect, useState } from 'preact/hooks';
import type { ViewProps } from '../main';
import { api, download } from '../lib/api';
import { allPages, csvText, exportName, saveCsv } from '../lib/csv';
import { setParams } from '../lib/router';
import { windowOf } from '../lib/window';
import { ChangeItem, DiffModePicker, type ChangeRecord } from '../components/change';
import { asApiError, Empty, ErrorBox, Pager, Show, useLoad } from '../components/states';
import { WindowPicker } from '../components/window-picker';

interface ChangePage {
  items: ChangeRecord[];
  total: number;
  total_exact: boolean;
  took_ms?: number;
}

const CHANGE_TYPES = ['CREATED', 'UPDATED', 'DELETED'];
/** Search results reach at most this far (the API's result window). */
const SEARCH_WINDOW = 10_000;

/** The API's filters from the view's: change type, CI type and changed field. */
function filtersOf(params: URLSearchParams): string[] {
  const filters: string[] = [];
  const changeType = params.get('change_type');
  if (changeType) filters.push(`change_type:eq:${changeType}`);
  const ciType = params.get('ci_type');
  if (ciType) filters.push(`ci_type:eq:${ciType}`);
  const field = params.get('field');
  if (field) filters.push(`changed_field:startswith:${field}`);
  return filters;
}

export default function Changes({ place }: ViewProps) {
  const { params } = place;
  const q = (params.get('q') ?? '').trim();
  const limit = Number(params.get('limit') ?? 50) || 50;
  const offset = Number(params.get('offset') ?? 0) || 0;
  const window = windowOf(params);
  const searching = q.length > 0;
  const query = { query: searching ? q : undefined, filter: filtersOf(params), start_date: window.start, end_date: window.end, limit, offset };
  const path = searching ? '/api/v1/changes/search' : '/api/v1/changes';
  const loaded = useLoad(path + JSON.stringify(query), (signal) => api<ChangePage>(path, { query, signal }));
  const [mode, setMode] = useState<'inline' | 'split'>('inline');
  const [draft, setDraft] = useState<string>();
  useEffect(() => setDraft(undefined), [q]);
  const [exporting, setExporting] = useState(false);
  const [exportError, setExportError] = useState<ReturnType<typeof asApiError>>();

  const exportCsv = async () => {
    setExporting(true);
    setExportError(undefined);
    try {
      if (!searching) {
        await download('/api/v1/changes', { accept: 'text/csv', query: { ...query, limit: undefined, offset: undefined } }, exportName('changes'));
        return;
      }
      // search results are ranked and capped at the result window: the browser walks them
      const records = await allPages(async (offset, limit) => (await api<ChangePage>(path, { query: { ...query, offset, limit } })).items, 500, SEARCH_WINDOW);
      const header = ['change_id', 'changed_at', 'change_type', 'ci_id', 'ci_name', 'ci_namespace', 'ci_type', 'field', 'old_value', 'new_value'];
      const rows = records.flatMap((record) =>
        record.changes.map((change) => [record.id, record.changed_at, record.change_type, record.ci_id, record.ci_name, record.ci_namespace, record.ci_type, change.field, change.old_value, change.new_value]),
      );
      saveCsv(csvText(header, rows), exportName('change-search'));
    } catch (error) {
      setExportError(asApiError(error));
    } finally {
      setExporting(false);
    }
  };

  return (
    <section class="changes">
      <h1>Change search</h1>
      <form
        class="search"
        role="search"
        onSubmit={(event) => {
          event.preventDefault();
          setParams({ q: (draft ?? q).trim() || undefined, offset: undefined });
        }}
      >
        <label for="change-query">Search changes</label>
        <input
          id="change-query"
          type="search"
          value={draft ?? q}
          placeholder='nginx:1.25 replicas -staging "db-1.prod"'
          onInput={(event) => setDraft((event.currentTarget as HTMLInputElement).value)}
        />
        <button type="submit" class="primary">
          Search
        </button>
      </form>
      <details class="help">
        <summary>Search syntax</summary>
        <ul>
          <li>
            Words are combined: <code>nginx web</code> finds records matching both; <code>alpha or beta</code> either.
          </li>
          <li>
            <code>-word</code> excludes; <code>"quoted text"</code> matches whole tokens exactly.
          </li>
          <li>
            Unquoted words match by prefix (<code>web-7f</code> finds <code>web-7f9c4</code>); case does not matter.
          </li>
          <li>Searched: CI name, namespace, CI type, changed field paths and the old and new values.</li>
          <li>Without a query, the view lists every change in the window, newest first.</li>
        </ul>
      </details>
      <div class="filter-row">
        <label>
          Change type{' '}
          <select value={params.get('change_type') ?? ''} onChange={(event) => setParams({ change_type: (event.currentTarget as HTMLSelectElement).value || undefined, offset: undefined })}>
            <option value="">Any</option>
            {CHANGE_TYPES.map((type) => (
              <option key={type} value={type}>
                {type}
              </option>
            ))}
          </select>
        </label>
        <FilterInput name="ci_type" label="CI type" placeholder="k8s.pod" params={params} />
        <FilterInput name="field" label="Changed field" placeholder="raw_data.spec" params={params} />
      </div>
      <WindowPicker params={params} />
      <div class="toolbar">
        <DiffModePicker mode={mode} setMode={setMode} />
        <button type="button" onClick={() => void exportCsv()} disabled={exporting}>
          {exporting ? 'Exporting…' : 'Download CSV'}
        </button>
      </div>
      {exportError ? <ErrorBox error={exportError} /> : null}
      <Show loaded={loaded} what="changes">
        {(page) =>
          page.items.length === 0 ? (
            <Empty>{searching ? `Nothing matches “${q}” in this window.` : 'No changes in this window.'}</Empty>
          ) : (
            <>
              {page.took_ms !== undefined ? <p class="meta">Searched in {page.took_ms} ms</p> : null}
              <ol class="results" aria-label="Changes">
                {page.items.map((record) => (
                  <li key={record.id}>
                    <ChangeItem record={record} showCi mode={mode} />
                  </li>
                ))}
              </ol>
              <Pager
                label="Changes"
                offset={offset}
                limit={limit}
                shown={page.items.length}
                total={Math.min(page.total, searching ? SEARCH_WINDOW : page.total)}
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

function FilterInput({ name, label, placeholder, params }: { name: string; label: string; placeholder: string; params: URLSearchParams }) {
  const [value, setValue] = useState<string>();
  const current = params.get(name) ?? '';
  useEffect(() => setValue(undefined), [current]);
  return (
    <form
      class="inline-filter"
      onSubmit={(event) => {
        event.preventDefault();
        setParams({ [name]: (value ?? current).trim() || undefined, offset: undefined });
      }}
    >
      <label>
        {label}{' '}
        <input value={value ?? current} placeholder={placeholder} onInput={(event) => setValue((event.currentTarget as HTMLInputElement).value)} />
      </label>
      <button type="submit">Apply</button>
    </form>
  );
}
