import { useMemo, useState } from 'preact/hooks';
import { api } from '../../lib/api';
import type { InventoryItem, InventoryPage } from '../../lib/api-shapes';
import { csvText, exportName, saveCsv } from '../../lib/csv';
import { leafPaths } from '../../lib/paths';
import { pageOf } from '../../lib/router';
import { useAction, useLoad } from '../../components/states';

export type SortOrder = 'asc' | 'desc';
type CiQuery = ReturnType<typeof inventoryQuery>['query'];

/** The CSV download walks the view page by page, up to this many rows; larger exports belong to the API. */
const CSV_ROWS = 10_000;

function columnsOf(params: URLSearchParams): string[] {
  return (params.get('cols') ?? '')
    .split(',')
    .map((path) => path.trim())
    .filter(Boolean);
}

/** The inventory view as its URL holds it, and the API query for the page it shows. */
function inventoryQuery(params: URLSearchParams) {
  const status = params.get('status') ?? 'active';
  const filters = params.getAll('filter');
  const sortBy = params.get('sort_by') ?? 'created_at';
  const sortOrder: SortOrder = params.get('sort_order') === 'asc' ? 'asc' : 'desc';
  const { limit, offset } = pageOf(params);
  const columns = columnsOf(params);
  const q = params.get('q') ?? '';
  const sourceId = params.get('source_id') ?? '';
  // a page reached by "Next" carries the cursor of the page before: the API starts at its position
  // (cheap at any depth) and echoes `offset`, which keeps the row numbers
  const cursor = params.get('cursor') || undefined;
  // the past has no last_seen to sort by (the API refuses it): its lists keep the default order
  const asOf = params.get('as_of') || undefined;
  const sorted = asOf && sortBy === 'last_seen' ? 'created_at' : sortBy;
  const query = {
    status,
    filter: filters,
    q: q || undefined,
    source_id: sourceId || undefined,
    sort_by: sorted,
    sort_order: sortOrder,
    as_of: asOf,
    limit,
    offset,
    cursor,
    include_attributes: columns.length ? columns.join(',') : undefined,
  };
  return { status, filters, q, sourceId, sortBy: sorted, sortOrder, limit, offset, columns, query, asOf };
}

const fetchCis = (query: CiQuery, signal?: AbortSignal) =>
  api<InventoryPage>('/api/v1/configuration-items', { query, signal });

/** The page the URL asks for, and the raw_data paths of its first rows for the filter and column pickers. */
export function useInventoryQuery(params: URLSearchParams) {
  const view = inventoryQuery(params);
  const loaded = useLoad(JSON.stringify(view.query), (signal) => fetchCis(view.query, signal));
  const suggestions = useMemo(
    () =>
      leafPaths(
        (loaded.data?.items ?? []).slice(0, 50).map((ci) => ci.raw_data),
        'raw_data',
      ),
    [loaded.data],
  );
  return { ...view, loaded, suggestions };
}

/** The whole view (every page, not only the one shown) as a CSV download, with its added columns; `progress` counts the rows fetched. */
export function useInventoryExport(query: CiQuery, columns: string[], sources: ReadonlyMap<number, string>) {
  const action = useAction();
  const [progress, setProgress] = useState<string>();
  const start = () =>
    void action.run(async () => {
      setProgress('0 rows…');
      const cis: InventoryItem[] = [];
      let cursor: string | undefined;
      do {
        const page = await fetchCis({ ...query, offset: 0, cursor, limit: Math.min(1000, CSV_ROWS - cis.length) });
        cis.push(...page.items);
        setProgress(`${cis.length.toLocaleString('en')} rows…`);
        cursor = page.next_cursor ?? undefined;
      } while (cursor && cis.length < CSV_ROWS);
      // the columns the table shows, Source and Instance included, then the added ones
      const header = [
        'ci_id',
        'name',
        'namespace',
        'ci_type',
        'status',
        'source_id',
        'source',
        'instance',
        'last_seen',
        'created_at',
        'updated_at',
        ...columns,
      ];
      const rows = cis.map((ci) => [
        ci.ci_id,
        ci.name,
        ci.namespace,
        ci.ci_type,
        ci.status,
        ci.source_id,
        sources.get(ci.source_id) ?? null,
        ci.scope_id,
        ci.last_seen,
        ci.created_at,
        ci.updated_at,
        ...columns.map((path) => ci.attributes?.[path]),
      ]);
      saveCsv(csvText(header, rows), exportName('inventory'));
    });
  return { progress: action.busy ? progress : undefined, error: action.error, start };
}
