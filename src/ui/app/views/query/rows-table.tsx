import type { QueryRow } from '../../lib/api-shapes';
import { dateTime, scalar } from '../../lib/format';
import { Link } from '../../lib/router';

/** Columns holding moments: shown in the page's time zone, exact. */
const MOMENTS = new Set(['created_at', 'updated_at', 'status_updated_at', 'last_seen']);

type Change = NonNullable<QueryRow['changes']>[number];

/** A cell's text: moments in the page's zone, JSON values on one line, a missing value as a dash. */
function cellText(column: string, value: unknown): string {
  if (value === null || value === undefined) return '—';
  if (MOMENTS.has(column) && typeof value === 'string') return dateTime(value);
  return scalar(value);
}

/** The CI's name (or, without a name column, its id) leads to it, at the moment the query read. */
function Cell({ column, row, linked, asOf }: { column: string; row: QueryRow; linked: boolean; asOf?: string }) {
  const text = cellText(column, row.fields[column]);
  if (!linked) return <>{text}</>;
  return <Link href={`/ci/${row.ci_id}${asOf ? `?as_of=${encodeURIComponent(asOf)}` : ''}`}>{text}</Link>;
}

function Changes({ changes }: { changes: Change[] }) {
  if (changes.length === 0) return <span class="meta">none</span>;
  return (
    <details>
      <summary>
        {changes.length} change{changes.length === 1 ? '' : 's'}
      </summary>
      <ul class="query-changes">
        {changes.map((change) => (
          <li key={change.id}>
            <span class={`badge ${change.change_type.toLowerCase()}`}>{change.change_type}</span>{' '}
            {dateTime(change.changed_at)}{' '}
            <span class="meta">
              {change.changes
                .map((entry) => (typeof entry.field === 'string' ? entry.field : ''))
                .filter(Boolean)
                .join(', ')}
            </span>
          </li>
        ))}
      </ul>
    </details>
  );
}

/** The answer's CIs, one column per column of the query (`| fields`, or the defaults), changes beside. */
export function RowsTable({ columns, rows, asOf }: { columns: string[]; rows: QueryRow[]; asOf?: string }) {
  const linkColumn = columns.includes('name') ? 'name' : columns.includes('ci_id') ? 'ci_id' : columns[0];
  const withChanges = rows.some((row) => row.changes !== undefined);
  return (
    <div class="table-wrap">
      <table class="grid query-rows" aria-label="Query answer">
        <thead>
          <tr>
            {columns.map((column) => (
              <th key={column} scope="col">
                <code>{column}</code>
              </th>
            ))}
            {withChanges ? <th scope="col">Changes</th> : null}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.ci_id}>
              {columns.map((column) => (
                <td key={column} class={column === 'ci_id' ? 'value' : undefined}>
                  <Cell column={column} row={row} linked={column === linkColumn} asOf={asOf} />
                </td>
              ))}
              {withChanges ? (
                <td>
                  <Changes changes={row.changes ?? []} />
                </td>
              ) : null}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
