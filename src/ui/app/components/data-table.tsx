import type { ComponentChildren } from 'preact';

export interface Column<T> {
  header: ComponentChildren;
  cell: (row: T) => ComponentChildren;
  /** A class for the column's cells (`value`, `error-text`). */
  class?: string;
}

/** A labelled table of rows, one column definition per header and cell. */
export function DataTable<T>({
  label,
  columns,
  rows,
  rowKey,
}: {
  label: string;
  columns: readonly (Column<T> | false)[];
  rows: readonly T[];
  rowKey: (row: T) => string | number;
}) {
  const shown = columns.filter((column): column is Column<T> => column !== false);
  return (
    <div class="table-wrap">
      <table class="grid" aria-label={label}>
        <thead>
          <tr>
            {shown.map((column, index) => (
              <th key={index} scope="col">
                {column.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={rowKey(row)}>
              {shown.map((column, index) => (
                <td key={index} class={column.class}>
                  {column.cell(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
