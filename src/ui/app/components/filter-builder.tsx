import { useState } from 'preact/hooks';

export const OPERATORS = [
  'eq',
  'ne',
  'gt',
  'gte',
  'lt',
  'lte',
  'like',
  'ilike',
  'startswith',
  'in',
  'nin',
  'null',
  'notnull',
] as const;
const VALUELESS = new Set(['null', 'notnull']);
const OPERATOR_LABELS: Record<string, string> = {
  eq: '= equals',
  ne: '≠ not equal',
  gt: '> greater',
  gte: '≥ at least',
  lt: '< less',
  lte: '≤ at most',
  like: 'contains (same case)',
  ilike: 'contains (any case)',
  startswith: 'starts with',
  in: 'in (comma list)',
  nin: 'not in (comma list)',
  null: 'is empty',
  notnull: 'is set',
};

/** `field:operator:value`, as the API's `filter` parameter takes it. */
export function describeFilter(filter: string): { field: string; op: string; value: string } {
  const first = filter.indexOf(':');
  const second = filter.indexOf(':', first + 1);
  if (first < 0) return { field: filter, op: '', value: '' };
  if (second < 0) return { field: filter.slice(0, first), op: filter.slice(first + 1), value: '' };
  return { field: filter.slice(0, first), op: filter.slice(first + 1, second), value: filter.slice(second + 1) };
}

interface FilterBuilderProps {
  fields: readonly string[];
  jsonPrefixes?: readonly string[];
  suggestions?: readonly string[];
  filters: readonly string[];
  onChange: (filters: string[]) => void;
  id: string;
}

/** The filter being composed: field (with a path for JSON fields), operator and value, until added. */
function useFilterDraft(fields: readonly string[], jsonPrefixes: readonly string[], add: (filter: string) => void) {
  const [field, setField] = useState(fields[0] ?? '');
  const [path, setPath] = useState('');
  const [op, setOp] = useState<string>('eq');
  const [value, setValue] = useState('');
  const isJson = jsonPrefixes.includes(field);
  const submit = (event: Event) => {
    event.preventDefault();
    const name = isJson ? `${field}.${path.replace(new RegExp(`^${field}\\.`), '')}` : field;
    if (isJson && !path.trim()) return;
    add(VALUELESS.has(op) ? `${name}:${op}` : `${name}:${op}:${value}`);
    setValue('');
  };
  return { field, setField, path, setPath, op, setOp, value, setValue, isJson, submit };
}

/**
 * Builds one filter at a time over every field and operator the API takes; JSON fields take a
 * path, suggested from the rows on screen. Filters already applied show as removable chips.
 */
export function FilterBuilder(props: FilterBuilderProps) {
  const { fields, jsonPrefixes = [], suggestions = [], filters, onChange, id } = props;
  const draft = useFilterDraft(fields, jsonPrefixes, (filter) => onChange([...filters, filter]));
  const { field, op } = draft;
  return (
    <div class="filters">
      <form class="filter-builder" onSubmit={draft.submit} aria-label="Add a filter">
        <label>
          <span>Field</span>
          <select value={field} onChange={(event) => draft.setField((event.currentTarget as HTMLSelectElement).value)}>
            {fields.map((name) => (
              <option key={name} value={name}>
                {name}
              </option>
            ))}
            {jsonPrefixes.map((prefix) => (
              <option key={prefix} value={prefix}>
                {prefix}.…
              </option>
            ))}
          </select>
        </label>
        {draft.isJson ? (
          <PathField
            listId={`${id}-paths`}
            field={field}
            path={draft.path}
            setPath={draft.setPath}
            suggestions={suggestions}
          />
        ) : null}
        <label>
          <span>Operator</span>
          <select value={op} onChange={(event) => draft.setOp((event.currentTarget as HTMLSelectElement).value)}>
            {OPERATORS.map((name) => (
              <option key={name} value={name}>
                {OPERATOR_LABELS[name]}
              </option>
            ))}
          </select>
        </label>
        {VALUELESS.has(op) ? null : (
          <label>
            <span>Value</span>
            <input
              value={draft.value}
              onInput={(event) => draft.setValue((event.currentTarget as HTMLInputElement).value)}
            />
          </label>
        )}
        <button type="submit">Add filter</button>
      </form>
      {filters.length > 0 ? <FilterChips filters={filters} onChange={onChange} /> : null}
    </div>
  );
}

/** A path inside a JSON field, offered the paths of that field seen in the rows on screen. */
function PathField(props: {
  listId: string;
  field: string;
  path: string;
  setPath: (path: string) => void;
  suggestions: readonly string[];
}) {
  const { listId, field, path, setPath, suggestions } = props;
  return (
    <label>
      <span>Path</span>
      <input
        list={listId}
        value={path}
        placeholder="spec.replicas"
        onInput={(event) => setPath((event.currentTarget as HTMLInputElement).value)}
      />
      <datalist id={listId}>
        {suggestions
          .filter((suggestion) => suggestion.startsWith(`${field}.`))
          .map((suggestion) => (
            <option key={suggestion} value={suggestion.slice(field.length + 1)} />
          ))}
      </datalist>
    </label>
  );
}

function FilterChips({ filters, onChange }: { filters: readonly string[]; onChange: (filters: string[]) => void }) {
  return (
    <ul class="chips" aria-label="Applied filters">
      {filters.map((filter, index) => (
        <li key={`${filter}-${index}`}>
          <code>{filter}</code>
          <button
            type="button"
            aria-label={`Remove filter ${filter}`}
            onClick={() => onChange(filters.filter((_, i) => i !== index))}
          >
            ×
          </button>
        </li>
      ))}
      <li>
        <button type="button" class="link" onClick={() => onChange([])}>
          Clear all
        </button>
      </li>
    </ul>
  );
}
