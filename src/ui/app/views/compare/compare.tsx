import { useState } from 'preact/hooks';
import type { ViewProps } from '../view';
import { api, can } from '../../lib/api';
import type { Answer, Baseline } from '../../lib/api-shapes';
import { dateTime } from '../../lib/format';
import { setParams } from '../../lib/router';
import { TimeInput } from '../../components/time-input';
import { TextField } from '../../components/fields';
import { Empty, ErrorBox, useAction, useLoad } from '../../components/states';
import { Differences } from './differences';

const HOUR = 3_600_000;
const SPANS: readonly (readonly [label: string, ms: number])[] = [
  ['Last hour', HOUR],
  ['Last 24 hours', 24 * HOUR],
  ['Last 7 days', 7 * 24 * HOUR],
];

/** A moment in the URL is a timestamp or a baseline's name; the API resolves both. */
const isTimestamp = (moment: string) => !Number.isNaN(Date.parse(moment)) && /^\d{4}-\d{2}-\d{2}/.test(moment);

/**
 * Two moments of the inventory side by side: what appeared, disappeared and changed between them
 * (counted by type, walked page by page), and for one CI its structural diff. The moments and the
 * CI shown are in the URL, so a comparison is a link.
 */
export default function Compare({ me, place }: ViewProps) {
  const { params } = place;
  const from = params.get('from') || undefined;
  const to = params.get('to') || undefined;
  const ciType = params.get('ci_type') || undefined;
  const selected = params.get('ci') || undefined;
  const baselines = useLoad('baselines', (signal) =>
    api<Answer<'listBaselines'>>('/api/v1/baselines', { query: { limit: 1000 }, signal }),
  );
  const names = baselines.data?.items ?? [];
  return (
    <section class="compare">
      <h1>Compare two moments</h1>
      <div class="toolbar">
        <MomentField
          label="From"
          value={from}
          baselines={names}
          onValue={(value) => setParams({ from: value, ci: undefined })}
        />
        <MomentField
          label="To"
          value={to}
          baselines={names}
          allowNow
          onValue={(value) => setParams({ to: value, ci: undefined })}
        />
      </div>
      <div class="segmented" role="group" aria-label="Compare a span up to now">
        {SPANS.map(([label, ms]) => (
          <button
            key={label}
            type="button"
            onClick={() => setParams({ from: new Date(Date.now() - ms).toISOString(), to: undefined, ci: undefined })}
          >
            {label}
          </button>
        ))}
      </div>
      {can(me, 'configuration_items:write') ? <NameBaseline at={to} onNamed={baselines.reload} /> : null}
      {from ? (
        <Differences from={from} to={to} ciType={ciType} selected={selected} params={params} />
      ) : (
        <Empty>
          Pick the earlier moment (a time or a baseline) to see what changed since, or one of the spans above.
        </Empty>
      )}
    </section>
  );
}

/** One side of the comparison: a baseline by name, or any moment (`allowNow`: none means now). */
function MomentField({
  label,
  value,
  baselines,
  allowNow,
  onValue,
}: {
  label: string;
  value?: string;
  baselines: Baseline[];
  allowNow?: boolean;
  onValue: (value: string | undefined) => void;
}) {
  const named = value !== undefined && !isTimestamp(value) ? value : '';
  return (
    <fieldset class="window moment">
      <legend>{label}</legend>
      <label>
        Baseline{' '}
        <select
          value={named}
          onChange={(event) => onValue((event.currentTarget as HTMLSelectElement).value || undefined)}
        >
          <option value="">{allowNow ? '— (now or a moment)' : '— (a moment)'}</option>
          {baselines.map((baseline) => (
            <option key={baseline.id} value={baseline.name}>
              {baseline.name} ({dateTime(baseline.at)})
            </option>
          ))}
          {named && !baselines.some((baseline) => baseline.name === named) ? (
            <option value={named}>{named}</option>
          ) : null}
        </select>
      </label>
      <label>
        Moment <TimeInput seconds value={named ? undefined : value} onValue={onValue} />
      </label>
      {allowNow && value === undefined ? <span class="meta">now</span> : null}
    </fieldset>
  );
}

/** Names the later moment (or now) as a baseline, so that a later comparison can start from it. */
function NameBaseline({ at, onNamed }: { at?: string; onNamed: () => void }) {
  const [name, setName] = useState('');
  const [named, setNamed] = useState<string>();
  const action = useAction();
  return (
    <form
      class="inline"
      onSubmit={(event) => {
        event.preventDefault();
        void action.run(async () => {
          const body = at && isTimestamp(at) ? { name: name.trim(), at } : { name: name.trim() };
          const created = await api<Baseline>('/api/v1/baselines', { method: 'POST', body });
          setNamed(`${created.name} (${dateTime(created.at)})`);
          setName('');
          onNamed();
        });
      }}
    >
      <TextField
        label={at && isTimestamp(at) ? 'Name the later moment' : 'Name this moment'}
        value={name}
        onValue={setName}
        required
        placeholder="release 4.2"
      />
      <button type="submit" disabled={action.busy || name.trim() === ''}>
        Save baseline
      </button>
      {named ? (
        <span role="status" class="meta">
          Saved baseline {named}.
        </span>
      ) : null}
      {action.error ? <ErrorBox error={action.error} /> : null}
    </form>
  );
}
