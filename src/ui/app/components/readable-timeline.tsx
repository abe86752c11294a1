import { useState } from 'preact/hooks';
import { api, ApiError } from '../lib/api';
import type { ChangeRecord, CiChangePage } from '../lib/api-shapes';
import { dateTime, timeOfDay } from '../lib/format';
import { ChangeItem } from './change';
import { Empty, ErrorBox, Loading } from './states';

/** A line of a rolled-up, folded timeline as the API answers it (`rollup=true&fold=true`). */
export type Line = ChangeRecord & {
  fold?: { records: number; last_at: string };
  rollup?: {
    owner_id: string;
    first_at?: string;
    sets?: number;
    cis?: { ci_type: string; cis: number }[];
    record_ids?: string[];
  };
};

const SEVERITY_WORDS: Record<string, string> = { high: 'High', medium: 'Medium', low: 'Low', info: 'Info' };

/** The day a line falls on, as its heading reads. */
const dayOf = (at: string) => dateTime(at).slice(0, 10);

/** What a line says in words: its kind, whose change, how often, on how many CIs. */
export function describeLine(line: Line): string {
  const fields = line.changes.map((c) => c.field);
  const what =
    line.change_type === 'CREATED'
      ? 'created'
      : line.change_type === 'DELETED'
        ? 'archived'
        : `${fields.slice(0, 2).join(', ')}${fields.length > 2 ? ` +${fields.length - 2} more` : ''}`;
  const sets = line.rollup?.sets ?? 1;
  const byType = line.rollup?.cis ?? [];
  // a line over several CIs of the lead's type names them by their number ("5 k8s.pod"), not by the first
  const lead = byType.find((c) => c.ci_type === line.ci_type);
  const who = lead && lead.cis > 1 ? `${lead.cis} ${line.ci_type}` : line.ci_name;
  const beside = byType
    .filter((c) => c.ci_type !== line.ci_type)
    .map((c) => `${c.cis} ${c.ci_type}`)
    .join(', ');
  return [`${who}: ${what}`, sets > 1 ? `×${sets}` : '', beside ? `(with ${beside})` : ''].filter(Boolean).join(' ');
}

/**
 * A readable timeline: lines newest first, grouped by day, each coloured by its severity, and each
 * opening into its exact records (read on the owner's exact timeline for the line's span).
 */
export function ReadableLines({
  lines,
  mode,
  label,
}: {
  lines: readonly Line[];
  mode: 'inline' | 'split';
  label: string;
}) {
  const days: { day: string; lines: Line[] }[] = [];
  for (const line of lines) {
    const day = dayOf(line.rollup?.first_at ?? line.changed_at);
    const last = days[days.length - 1];
    if (last?.day === day) last.lines.push(line);
    else days.push({ day, lines: [line] });
  }
  return (
    <ol class="readable" aria-label={label}>
      {days.map((group) => (
        <li key={group.day} class="day">
          <h3 class="day-head">{group.day}</h3>
          <ul class="lines">
            {group.lines.map((line) => (
              <li key={line.id}>
                <LineItem line={line} mode={mode} />
              </li>
            ))}
          </ul>
        </li>
      ))}
    </ol>
  );
}

function LineItem({ line, mode }: { line: Line; mode: 'inline' | 'split' }) {
  const [records, setRecords] = useState<ChangeRecord[] | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  // the records load when the line is first opened; a closed line shows no loading state
  const [opened, setOpened] = useState(false);
  const first = line.rollup?.first_at ?? line.changed_at;
  const last = line.fold?.last_at ?? line.changed_at;
  const span = first === last ? dateTime(first) : `${dateTime(first)} – ${timeOfDay(last)}`;
  const severity = line.severity ?? 'info';
  const ids = new Set(line.rollup?.record_ids ?? [line.id]);
  const open = () => {
    setOpened(true);
    if (records) return;
    if (!line.rollup) return setRecords([line]);
    // the line's exact records: its owner's exact timeline over the line's span, narrowed to the line's ids
    const end = new Date(Date.parse(last) + 1).toISOString();
    api<CiChangePage>(`/api/v1/ci-changes/${line.rollup.owner_id}`, {
      query: { rollup: 'true', include_ignored: 'true', start_date: first, end_date: end, limit: 5000 },
    })
      .then((page) => setRecords(page.items.filter((r) => ids.has(r.id)).reverse()))
      .catch((failure: unknown) =>
        setError(failure instanceof ApiError ? failure : new ApiError(0, 'NETWORK', String(failure), undefined)),
      );
  };
  const what = describeLine(line);
  return (
    <details
      class={`line severity-${severity}`}
      onToggle={(event) => (event.currentTarget as HTMLDetailsElement).open && open()}
    >
      <summary>
        <span class={`badge severity-${severity}`}>{SEVERITY_WORDS[severity] ?? severity}</span>{' '}
        <span class="kind">{line.kind ?? 'other'}</span> <time dateTime={first}>{span}</time>{' '}
        <span class="line-what">{what}</span>
        <span class="meta">
          {' '}
          · {line.fold?.records ?? 1} record{(line.fold?.records ?? 1) === 1 ? '' : 's'}
        </span>
      </summary>
      {error ? <ErrorBox error={error} /> : null}
      {opened && !records && !error ? <Loading what="the records" /> : null}
      {records && records.length === 0 ? <Empty>The records are no longer readable.</Empty> : null}
      {records && records.length > 0 ? (
        <ul class="changes" aria-label={`The records of: ${what}`}>
          {records.map((record) => (
            <li key={record.id}>
              <ChangeItem record={record} showCi mode={mode} />
            </li>
          ))}
        </ul>
      ) : null}
    </details>
  );
}

/** The two readings of a timeline: lines (rolled up and folded) or the exact records. */
export function ReadingPicker({
  name,
  reading,
  setReading,
}: {
  name: string;
  reading: 'lines' | 'exact';
  setReading: (r: 'lines' | 'exact') => void;
}) {
  return (
    <fieldset class="segmented">
      <legend class="sr-only">Reading of {name}</legend>
      {(['lines', 'exact'] as const).map((value) => (
        <label key={value}>
          <input
            type="radio"
            name={name}
            value={value}
            checked={reading === value}
            onChange={() => setReading(value)}
          />
          {value === 'lines' ? 'Readable' : 'Exact records'}
        </label>
      ))}
    </fieldset>
  );
}
