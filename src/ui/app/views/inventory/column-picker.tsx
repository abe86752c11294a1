import { useState } from 'preact/hooks';
import { setParams } from '../../lib/router';

/** Extra columns from raw_data paths, fetched by the API through `include_attributes`. */
export function ColumnPicker({ columns, suggestions }: { columns: string[]; suggestions: readonly string[] }) {
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
        <input
          list="column-paths"
          value={path}
          placeholder="spec.nodeName"
          onInput={(event) => setPath((event.currentTarget as HTMLInputElement).value)}
        />
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
