import { setParams } from '../../lib/router';
import { SearchBox, SelectField, TextField, useDraft } from '../../components/fields';

const CHANGE_TYPES = ['CREATED', 'UPDATED', 'DELETED'];

/** The search box of the change search. */
export function SearchForm({ q }: { q: string }) {
  return (
    <SearchBox
      q={q}
      label="Search changes"
      id="change-query"
      formClass="search"
      placeholder='nginx:1.25 replicas -staging "db-1.prod"'
    />
  );
}

export function SearchHelp() {
  return (
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
  );
}

export function ChangeFilters({ params }: { params: URLSearchParams }) {
  return (
    <div class="filter-row">
      <SelectField
        label="Change type"
        value={params.get('change_type') ?? ''}
        onValue={(value) => setParams({ change_type: value || undefined, offset: undefined })}
        choices={[['', 'Any'], ...CHANGE_TYPES]}
      />
      <FilterInput name="ci_type" label="CI type" placeholder="k8s.pod" params={params} />
      <FilterInput name="field" label="Changed field" placeholder="raw_data.spec" params={params} />
    </div>
  );
}

function FilterInput({
  name,
  label,
  placeholder,
  params,
}: {
  name: string;
  label: string;
  placeholder: string;
  params: URLSearchParams;
}) {
  const [value, setValue] = useDraft(params.get(name) ?? '');
  return (
    <form
      class="inline-filter"
      onSubmit={(event) => {
        event.preventDefault();
        setParams({ [name]: value.trim() || undefined, offset: undefined });
      }}
    >
      <TextField label={label} value={value} onValue={setValue} placeholder={placeholder} />
      <button type="submit">Apply</button>
    </form>
  );
}
