import { api, download } from '../../lib/api';
import { allPages, csvText, exportName, saveCsv } from '../../lib/csv';
import { pageOf } from '../../lib/router';
import { windowOf } from '../../lib/window';
import type { ChangeList, ChangeSearch } from '../../lib/api-shapes';
import { useAction, useLoad } from '../../components/states';

/** A page of the list or, when there is a query, of the search. */
type ChangePage = ChangeList | ChangeSearch;

type ChangeQuery = ReturnType<typeof changeQuery>['query'];

/** Search results reach at most this far (the API's result window). */
export const SEARCH_WINDOW = 10_000;

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

/** The view as its URL holds it: a query searches (ranked), no query lists the window newest first. */
function changeQuery(params: URLSearchParams, at: number) {
  const q = (params.get('q') ?? '').trim();
  const { limit, offset } = pageOf(params);
  const window = windowOf(params, at);
  const searching = q.length > 0;
  const query = {
    query: searching ? q : undefined,
    filter: filtersOf(params),
    start_date: window.start,
    end_date: window.end,
    limit,
    offset,
  };
  const path = searching ? '/api/v1/changes/search' : '/api/v1/changes';
  return { q, limit, offset, searching, query, path };
}

export function useChangeQuery(params: URLSearchParams, at: number) {
  const view = changeQuery(params, at);
  const { path, query } = view;
  const loaded = useLoad(path + JSON.stringify(query), (signal) => api<ChangePage>(path, { query, signal }));
  return { ...view, loaded };
}

/** Every change of the view as a CSV download. */
export function useChangeExport({ searching, path, query }: { searching: boolean; path: string; query: ChangeQuery }) {
  const action = useAction();
  const start = () =>
    void action.run(async () => {
      if (!searching) {
        await download(
          '/api/v1/changes',
          { accept: 'text/csv', query: { ...query, limit: undefined, offset: undefined } },
          exportName('changes'),
        );
        return;
      }
      // search results are ranked and capped at the result window: the browser walks them
      const records = await allPages(
        async (offset, limit) => (await api<ChangePage>(path, { query: { ...query, offset, limit } })).items,
        500,
        SEARCH_WINDOW,
      );
      const header = [
        'change_id',
        'changed_at',
        'change_type',
        'ci_id',
        'ci_name',
        'ci_namespace',
        'ci_type',
        'field',
        'old_value',
        'new_value',
      ];
      const rows = records.flatMap((record) =>
        record.changes.map((change) => [
          record.id,
          record.changed_at,
          record.change_type,
          record.ci_id,
          record.ci_name,
          record.ci_namespace,
          record.ci_type,
          change.field,
          change.old_value,
          change.new_value,
        ]),
      );
      saveCsv(csvText(header, rows), exportName('change-search'));
    });
  return { busy: action.busy, error: action.error, start };
}
