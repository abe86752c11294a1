import { dateTime, relative, scalar } from '../../lib/format';
import { Link, withParams } from '../../lib/router';
import type { InventoryItem } from '../../lib/api-shapes';
import type { SortOrder } from './query';

const SORTABLE: [string, string][] = [
  ['name', 'Name'],
  ['namespace', 'Namespace'],
  ['ci_type', 'Type'],
  ['status', 'Status'],
  ['last_seen', 'Last seen'],
  ['updated_at', 'Updated'],
  ['created_at', 'Created'],
];
/** Added columns stand between the identifying columns and the timestamps. */
const LEADING = 4;

interface Sort {
  params: URLSearchParams;
  sortBy: string;
  sortOrder: SortOrder;
}

/** One page of configuration items; each header sorts by its column, descending first. */
export function CiTable({
  items,
  columns,
  sort,
  sources,
  asOf,
}: {
  items: InventoryItem[];
  columns: string[];
  sort: Sort;
  sources: ReadonlyMap<number, string>;
  asOf?: string;
}) {
  return (
    <div class="table-wrap">
      <table class="grid" aria-label="Configuration items">
        <thead>
          <tr>
            {SORTABLE.slice(0, LEADING).map(([field, label]) => (
              <SortHeader key={field} field={field} label={label} sort={sort} />
            ))}
            <th scope="col">Source</th>
            {columns.map((path) => (
              <th key={path} scope="col">
                <code>{path}</code>
              </th>
            ))}
            {SORTABLE.slice(LEADING).map(([field, label]) =>
              // the past has no last_seen to sort by
              asOf && field === 'last_seen' ? (
                <th key={field} scope="col">
                  {label}
                </th>
              ) : (
                <SortHeader key={field} field={field} label={label} sort={sort} />
              ),
            )}
          </tr>
        </thead>
        <tbody>
          {items.map((ci) => (
            <CiRow
              key={ci.ci_id}
              ci={ci}
              columns={columns}
              source={sources.get(ci.source_id) ?? `source ${ci.source_id}`}
              asOf={asOf}
            />
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A moment shown one way everywhere: how long ago, with the exact time on hover and for assistive technology. */
function When({ at }: { at: string | null }) {
  if (!at) return <span class="meta">—</span>;
  return (
    <time dateTime={at} title={dateTime(at)}>
      {relative(at)}
    </time>
  );
}

function CiRow({ ci, columns, source, asOf }: { ci: InventoryItem; columns: string[]; source: string; asOf?: string }) {
  return (
    <tr>
      <td>
        <Link href={`/ci/${ci.ci_id}${asOf ? `?as_of=${encodeURIComponent(asOf)}` : ''}`}>{ci.name}</Link>
      </td>
      <td>{ci.namespace ?? <span class="meta">—</span>}</td>
      <td>{ci.ci_type}</td>
      <td>
        <span class={`status ${ci.status}`}>{ci.status}</span>
      </td>
      <td>
        {source}
        {ci.scope_id ? <div class="meta">{ci.scope_id}</div> : null}
      </td>
      {columns.map((path) => (
        <td key={path} class="value">
          {scalar(ci.attributes?.[path] ?? null)}
        </td>
      ))}
      <td>
        <When at={ci.last_seen} />
      </td>
      <td>
        <When at={ci.updated_at} />
      </td>
      <td>
        <When at={ci.created_at} />
      </td>
    </tr>
  );
}

function SortHeader({ field, label, sort }: { field: string; label: string; sort: Sort }) {
  const { params, sortBy, sortOrder } = sort;
  const active = sortBy === field;
  const href = withParams(params, {
    sort_by: field,
    sort_order: active && sortOrder === 'desc' ? 'asc' : 'desc',
    offset: undefined,
  });
  return (
    <th scope="col" aria-sort={active ? (sortOrder === 'asc' ? 'ascending' : 'descending') : 'none'}>
      <Link href={`/inventory${href}`} class="sort">
        {label}
        <span aria-hidden="true">{active ? (sortOrder === 'asc' ? ' ▲' : ' ▼') : ''}</span>
      </Link>
    </th>
  );
}
