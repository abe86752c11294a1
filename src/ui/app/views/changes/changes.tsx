import { useState } from 'preact/hooks';
import { SavedViews } from '../../components/saved-views';
import type { ViewProps } from '../view';
import { goToOffset } from '../../lib/router';
import { ChangeItem, DiffModePicker } from '../../components/change';
import { Empty, ErrorBox, Pager, Show } from '../../components/states';
import { WindowPicker } from '../../components/window-picker';
import { SEARCH_WINDOW, useChangeExport, useChangeQuery } from './query';
import { ChangeFilters, SearchForm, SearchHelp } from './search';

export default function Changes({ place }: ViewProps) {
  const { params } = place;
  const view = useChangeQuery(params, place.at);
  const { q, searching, limit, offset } = view;
  const [mode, setMode] = useState<'inline' | 'split'>('inline');
  const csv = useChangeExport(view);
  return (
    <section class="changes">
      <h1>Change search</h1>
      <SavedViews view="changes" params={params} />
      <SearchForm q={q} />
      <SearchHelp />
      <ChangeFilters params={params} />
      <WindowPicker params={params} />
      <div class="toolbar">
        <DiffModePicker mode={mode} setMode={setMode} />
        <button type="button" onClick={csv.start} disabled={csv.busy}>
          {csv.busy ? 'Exporting…' : 'Download CSV'}
        </button>
      </div>
      {csv.error ? <ErrorBox error={csv.error} /> : null}
      <Show loaded={view.loaded} what="changes">
        {(page) =>
          page.items.length === 0 ? (
            <Empty>{searching ? `Nothing matches “${q}” in this window.` : 'No changes in this window.'}</Empty>
          ) : (
            <>
              {'took_ms' in page ? <p class="meta">Searched in {page.took_ms} ms</p> : null}
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
                go={goToOffset}
              />
            </>
          )
        }
      </Show>
    </section>
  );
}
