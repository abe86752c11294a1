import { useId, useState } from 'preact/hooks';
import { Link } from '../lib/router';
import { dateTime } from '../lib/format';
import type { ChangeRecord, FoundChange } from '../lib/api-shapes';
import { DiffView } from './diff-view';

/** A change record, with where the query matched when a search found it. */
type ShownChange = ChangeRecord & Partial<Pick<FoundChange, 'matched'>>;

const ENTITIES: Record<string, string> = {
  '&amp;': '&',
  '&lt;': '<',
  '&gt;': '>',
  '&quot;': '"',
  '&#39;': "'",
  '&#x27;': "'",
};
const unescape = (text: string) => text.replace(/&(amp|lt|gt|quot|#39|#x27);/g, (entity) => ENTITIES[entity] ?? entity);

/** A search excerpt (HTML-escaped, matches in `<em>`) as text with highlighted marks, never as HTML. */
export function Excerpt({ text }: { text: string }) {
  const parts = text.split(/(<em>.*?<\/em>)/g);
  return (
    <span class="excerpt">
      {parts.map((part, index) =>
        part.startsWith('<em>') ? (
          <mark key={index}>{unescape(part.slice(4, -5))}</mark>
        ) : (
          <span key={index}>{unescape(part)}</span>
        ),
      )}
    </span>
  );
}

/**
 * One change record: a line that opens into the diff of each field it changed. `asOf`: where the
 * CI is shown as it was right after this change.
 */
export function ChangeItem({
  record,
  showCi,
  mode,
  asOf,
}: {
  record: ShownChange;
  showCi: boolean;
  mode: 'inline' | 'split';
  asOf?: string;
}) {
  const [open, setOpen] = useState(false);
  const fields = record.changes.map((change) => change.field);
  return (
    <article class={`change change-${record.change_type.toLowerCase()}`}>
      <header>
        <button type="button" class="disclose" aria-expanded={open} onClick={() => setOpen(!open)}>
          <span aria-hidden="true">{open ? '▾' : '▸'}</span>
          <span class="sr-only">{open ? 'Hide' : 'Show'} the diff of </span>
          <span class={`badge ${record.change_type.toLowerCase()}`}>{record.change_type}</span>
          <time dateTime={record.changed_at}>{dateTime(record.changed_at)}</time>
          <span class="fields">
            {fields.slice(0, 4).join(', ')}
            {fields.length > 4 ? ` +${fields.length - 4} more` : ''}
          </span>
        </button>
        {asOf ? (
          <Link
            href={asOf}
            class="as-of"
            aria-label={`As of then: the item right after the change of ${dateTime(record.changed_at)}`}
          >
            As of then
          </Link>
        ) : null}
        {showCi ? (
          <span class="ci">
            <Link href={`/ci/${record.ci_id}`}>{record.ci_name}</Link>
            <span class="meta">
              {' '}
              {record.ci_type}
              {record.ci_namespace ? ` · ${record.ci_namespace}` : ''}
            </span>
          </span>
        ) : null}
      </header>
      {record.matched && record.matched.length > 0 ? (
        <ul class="matches" aria-label="Where the query matched">
          {record.matched.map((match, index) => (
            <li key={index}>
              <span class="meta">{match.field ? `${match.in} ${match.field}` : match.in}: </span>
              <Excerpt text={match.excerpt} />
            </li>
          ))}
        </ul>
      ) : null}
      {open ? (
        <div class="diffs">
          {record.changes.map((change) => (
            <section key={change.field} class="field-diff">
              <h4>
                <code>{change.field}</code>
              </h4>
              {/* a new CI's fields had no value before, not a null one */}
              <DiffView
                field={change.field}
                before={record.change_type === 'CREATED' ? undefined : change.old_value}
                after={change.new_value}
                mode={mode}
              />
            </section>
          ))}
        </div>
      ) : null}
    </article>
  );
}

export function DiffModePicker({
  mode,
  setMode,
}: {
  mode: 'inline' | 'split';
  setMode: (mode: 'inline' | 'split') => void;
}) {
  // a page may hold several pickers (a CI's timeline and the changes around it): radios of one name are one group
  const name = `diff-mode-${useId()}`;
  return (
    <fieldset class="segmented">
      <legend class="sr-only">Diff layout</legend>
      {(['inline', 'split'] as const).map((value) => (
        <label key={value}>
          <input type="radio" name={name} value={value} checked={mode === value} onChange={() => setMode(value)} />
          {value === 'inline' ? 'Inline' : 'Side by side'}
        </label>
      ))}
    </fieldset>
  );
}
