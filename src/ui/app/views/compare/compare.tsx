import { useEffect, useRef, useState } from 'preact/hooks';
import type { ViewProps } from './view';
import { api, can } from '../lib/api';
import type { Answer, Baseline, CiDiff, InventoryDifference, InventoryDiffPage } from '../lib/api-shapes';
import { count, dateTime, scalar } from '../lib/format';
import { Link, setParams, withParams } from '../lib/router';
import { TimeInput } from '../components/time-input';
import { DiffModePicker } from '../components/change';
import { useCursorWalk } from '../components/cursor-walk';
import { DiffView } from '../components/diff-view';
import { TextField } from '../components/fields';
import { Empty, ErrorBox, Loading, Show, useAction, useLoad } from '../components/states';

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

/**
 * The words for a difference. Over the active inventory (the default), an archived pod is one that
 * left it, not one whose status changed; over every status, archiving is a change of `status`.
 */
const WORDS = {
  active: { appeared: 'entered', disappeared: 'left', changed: 'changed' },
  all: { appeared: 'appeared', disappeared: 'disappeared', changed: 'changed' },
} as const;

function Differences({
  from,
  to,
  ciType,
  selected,
  params,
}: {
  from: string;
  to?: string;
  ciType?: string;
  selected?: string;
  params: URLSearchParams;
}) {
  const over = params.get('status') === 'all' ? 'all' : 'active';
  const words = WORDS[over];
  const query = { from, to, status: over, filter: ciType ? [`ci_type:eq:${ciType}`] : undefined };
  const walk = useCursorWalk<InventoryDifference, InventoryDiffPage>(JSON.stringify(query), (cursor, signal) =>
    api<InventoryDiffPage>('/api/v1/inventory/diff', {
      query: cursor ? { ...query, cursor } : { ...query, limit: 100 },
      signal,
    }),
  );
  const first = walk.first;
  if (walk.error && !first) return <ErrorBox error={walk.error} />;
  if (!first) return <Loading what="the differences" />;
  const counts = first.counts!;
  const momentOf = (kind: InventoryDifference['kind']) => (kind === 'disappeared' ? first.from : first.to);
  return (
    <div class="compare-result" aria-busy={walk.busy}>
      <fieldset class="segmented">
        <legend class="sr-only">Compare</legend>
        <label>
          <input
            type="radio"
            name="compare-over"
            checked={over === 'active'}
            onChange={() => setParams({ status: undefined, ci: undefined })}
          />
          The active inventory
        </label>
        <label>
          <input
            type="radio"
            name="compare-over"
            checked={over === 'all'}
            onChange={() => setParams({ status: 'all', ci: undefined })}
          />
          Every status (archiving is a change of status)
        </label>
      </fieldset>
      <p role="status">
        From <strong>{dateTime(first.from)}</strong> to <strong>{dateTime(first.to)}</strong>
        {over === 'active' ? (
          <>
            : {count(counts.appeared)} entered the active inventory, {count(counts.disappeared)} left it (archived,
            inactive or removed), {count(counts.changed)} changed
          </>
        ) : (
          <>
            : {count(counts.appeared)} appeared, {count(counts.disappeared)} disappeared, {count(counts.changed)}{' '}
            changed
          </>
        )}
        {ciType ? ` among ${ciType}` : ''}.
      </p>
      {counts.by_type.length > 0 ? (
        <table class="grid counts">
          <caption>By type</caption>
          <thead>
            <tr>
              <th scope="col">Type</th>
              <th scope="col">{over === 'active' ? 'Entered' : 'Appeared'}</th>
              <th scope="col">{over === 'active' ? 'Left' : 'Disappeared'}</th>
              <th scope="col">Changed</th>
            </tr>
          </thead>
          <tbody>
            {counts.by_type.map((row) => (
              <tr key={row.ci_type}>
                <th scope="row">
                  <Link
                    href={`/compare${withParams(params, { ci_type: ciType === row.ci_type ? undefined : row.ci_type, ci: undefined })}`}
                    aria-current={ciType === row.ci_type ? 'true' : undefined}
                  >
                    {row.ci_type}
                  </Link>
                </th>
                <td>{count(row.appeared)}</td>
                <td>{count(row.disappeared)}</td>
                <td>{count(row.changed)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {ciType ? (
        <p>
          <Link href={`/compare${withParams(params, { ci_type: undefined, ci: undefined })}`}>Show every type</Link>
        </p>
      ) : null}
      {walk.items.length === 0 ? (
        <Empty>Nothing differs between these moments{ciType ? ` among ${ciType}` : ''}.</Empty>
      ) : (
        <div class="compare-columns">
          <table class="grid">
            <caption>Configuration items that differ</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Type</th>
                <th scope="col">Namespace</th>
                <th scope="col">Difference</th>
              </tr>
            </thead>
            <tbody>
              {walk.items.map((item) => (
                <tr key={item.ci_id} aria-selected={item.ci_id === selected}>
                  <td>
                    <Link href={`/ci/${item.ci_id}?as_of=${encodeURIComponent(momentOf(item.kind))}`}>{item.name}</Link>
                  </td>
                  <td>{item.ci_type}</td>
                  <td>{item.namespace ?? '—'}</td>
                  <td>
                    <span class={`badge ${item.kind}`}>{words[item.kind]}</span>{' '}
                    {item.kind === 'changed' ? (
                      <span class="meta">
                        {item.changed_fields.slice(0, 3).join(', ')}
                        {item.changed_fields.length > 3 ? ` +${item.changed_fields.length - 3} more` : ''}
                      </span>
                    ) : null}{' '}
                    <Link
                      href={`/compare${withParams(params, { ci: item.ci_id })}`}
                      aria-label={`Diff of ${item.name}`}
                    >
                      Diff
                    </Link>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {walk.next ? (
            <button type="button" onClick={walk.more} disabled={walk.busy}>
              {walk.busy ? 'Loading…' : 'Load more'}
            </button>
          ) : null}
          {walk.error ? <ErrorBox error={walk.error} /> : null}
        </div>
      )}
      {selected ? (
        <CiDifference
          ciId={selected}
          from={first.from}
          to={first.to}
          name={walk.items.find((item) => item.ci_id === selected)?.name}
        />
      ) : null}
    </div>
  );
}

/** One CI between the two moments: its net field differences drawn as the timeline draws a change, and its relationships. */
function CiDifference({ ciId, from, to, name }: { ciId: string; from: string; to: string; name?: string }) {
  const [mode, setMode] = useState<'inline' | 'split'>('inline');
  const panel = useRef<HTMLElement>(null);
  // the list can be long: the chosen CI's difference is brought into view
  useEffect(() => panel.current?.scrollIntoView({ block: 'start' }), [ciId]);
  const loaded = useLoad(`${ciId} ${from} ${to}`, (signal) =>
    api<CiDiff>(`/api/v1/configuration-items/${encodeURIComponent(ciId)}/diff`, { query: { from, to }, signal }),
  );
  return (
    <section ref={panel} class="ci-difference" aria-labelledby="ci-difference-heading">
      <div class="section-head">
        <h2 id="ci-difference-heading">{name ?? 'Configuration item'} between the two moments</h2>
        <DiffModePicker mode={mode} setMode={setMode} />
      </div>
      <Show loaded={loaded} what="the difference">
        {(diff) => (
          <>
            <p class="meta">
              {diff.existed.from ? 'Existed' : 'Did not exist'} at the earlier moment,{' '}
              {diff.existed.to ? 'existed' : 'did not exist'} at the later. {count(diff.changes.total)} change record
              {diff.changes.total === 1 ? '' : 's'} in between: <Link href={`/ci/${ciId}`}>see its timeline</Link>.
            </p>
            {diff.fields.length === 0 ? <Empty>No field differs.</Empty> : null}
            {diff.fields.map((field) => (
              <section key={field.field} class="field-diff">
                <h3>
                  <code>{field.field}</code>
                </h3>
                <DiffView field={field.field} before={field.old_value} after={field.new_value} mode={mode} />
              </section>
            ))}
            {(['added', 'removed'] as const).map((which) =>
              diff.relationships[which].length > 0 ? (
                <section key={which}>
                  <h3>Relationships {which}</h3>
                  <ul class="neighbours">
                    {diff.relationships[which].map((edge) => (
                      <li key={edge.id}>
                        {edge.direction === 'outgoing' ? `${edge.relationship_type} →` : `← ${edge.relationship_type}`}{' '}
                        <Link
                          href={`/ci/${edge.related_ci_id}?as_of=${encodeURIComponent(which === 'added' ? to : from)}`}
                        >
                          {scalar(edge.related_ci_id)}
                        </Link>
                      </li>
                    ))}
                  </ul>
                </section>
              ) : null,
            )}
          </>
        )}
      </Show>
    </section>
  );
}
