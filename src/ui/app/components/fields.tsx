import { useRef, useState } from 'preact/hooks';
import { setParams } from '../lib/router';

/** An option as `[value, label]`, or a value that is its own label. */
export type Choice = string | readonly [value: string, label: string];

/** A select inside its label, so the label's text names it. */
export function SelectField({
  label,
  value,
  onValue,
  choices,
}: {
  label: string;
  value: string;
  onValue: (value: string) => void;
  choices: readonly Choice[];
}) {
  return (
    <label>
      {label}{' '}
      <select value={value} onChange={(event) => onValue((event.currentTarget as HTMLSelectElement).value)}>
        {choices.map((choice) => {
          const [optionValue, optionLabel] = typeof choice === 'string' ? [choice, choice] : choice;
          return (
            <option key={optionValue} value={optionValue}>
              {optionLabel}
            </option>
          );
        })}
      </select>
    </label>
  );
}

/** A text input inside its label, so the label's text names it. */
export function TextField(props: {
  label: string;
  value: string;
  onValue: (value: string) => void;
  type?: string;
  required?: boolean;
  placeholder?: string;
}) {
  const { label, value, onValue, type, required, placeholder } = props;
  return (
    <label>
      {label}{' '}
      <input
        type={type}
        required={required}
        value={value}
        placeholder={placeholder}
        onInput={(event) => onValue((event.currentTarget as HTMLInputElement).value)}
      />
    </label>
  );
}

/**
 * What is typed over a URL parameter stays a draft until the form applies it; when the URL's value
 * changes (back, forward, a link), the draft gives way to it.
 */
export function useDraft(current: string): [string, (value: string) => void] {
  // A draft belongs to the URL value it was typed over and is dropped in the same render that value
  // changes. Resetting it from an effect instead ran after the first paint, and so swallowed the
  // keys typed into a box in the moment after it appeared.
  const over = useRef({ value: current, changes: 0 });
  if (over.current.value !== current) over.current = { value: current, changes: over.current.changes + 1 };
  const changes = over.current.changes;
  const [draft, setDraft] = useState<{ value: string; changes: number }>();
  return [
    draft !== undefined && draft.changes === changes ? draft.value : current,
    (value) => setDraft({ value, changes }),
  ];
}

/**
 * A search box over the URL's `q`: what is typed reaches the URL (and so the view's query) only when
 * submitted, and starts the view on its first page.
 */
export function SearchBox(props: {
  q: string;
  label: string;
  id: string;
  formClass: string;
  placeholder?: string;
  maxLength?: number;
}) {
  const { q, label, id, formClass, placeholder, maxLength } = props;
  const [draft, setDraft] = useDraft(q);
  return (
    <form
      class={formClass}
      role="search"
      onSubmit={(event) => {
        event.preventDefault();
        setParams({ q: draft.trim() || undefined, offset: undefined });
      }}
    >
      <label for={id}>{label}</label>
      <input
        id={id}
        type="search"
        value={draft}
        placeholder={placeholder}
        maxLength={maxLength}
        onInput={(event) => setDraft((event.currentTarget as HTMLInputElement).value)}
      />
      <button type="submit" class="primary">
        Search
      </button>
    </form>
  );
}
