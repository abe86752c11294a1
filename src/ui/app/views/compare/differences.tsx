import { api } from '../../lib/api';
import type { InventoryDifference, InventoryDiffPage } from '../../lib/api-shapes';
import { count, dateTime } from '../../lib/format';
import { Link, setParams, withParams } from '../../lib/router';
import { useCursorWalk } from '../../components/cursor-walk';
import { Empty, ErrorBox, Loading } from '../../components/states';
import { CiDifference } from './ci-difference';

/**
 * The words for a difference. Over the active inventory (the default), an archived pod is one that
 * left it, not one whose status changed; over every status, archiving is a change of `status`.
 */
const WORDS = {
  active: { appeared: 'entered', disappeared: 'left', changed: 'changed' },
  all: { appeared: 'appeared', disappeared: 'disappeared', changed: 'changed' },
} as const;

type Over = keyof typeof WORDS;
type Counts = NonNullable<InventoryDiffPage['counts']>;
type Walk = ReturnType<typeof useCursorWalk<InventoryDifference, InventoryDiffPage>>;

/**
 * What differs between two moments: counted in all and by type (a type picks the list's), the CIs
 * that differ walked page by page, and the one chosen diffed below.
 */
export function Differences({
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
  const over: Over = params.get('status') === 'all' ? 'all' : 'active';
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
  return (
    <div class="compare-result" aria-busy={walk.busy}>
      <OverPicker over={over} />
      <Summary first={first} counts={counts} over={over} ciType={ciType} />
      <CountsByType counts={counts} over={over} ciType={ciType} params={params} />
      {ciType ? (
        <p>
          <Link href={`/compare${withParams(params, { ci_type: undefined, ci: undefined })}`}>Show every type</Link>
        </p>
      ) : null}
      {walk.items.length === 0 ? (
        <Empty>Nothing differs between these moments{ciType ? ` among ${ciType}` : ''}.</Empty>
      ) : (
        <DifferingItems walk={walk} first={first} over={over} selected={selected} params={params} />
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

/** Over the active inventory, or over every status. */
function OverPicker({ over }: { over: Over }) {
  return (
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
  );
}

function Summary({
  first,
  counts,
  over,
  ciType,
}: {
  first: InventoryDiffPage;
  counts: Counts;
  over: Over;
  ciType?: string;
}) {
  return (
    <p role="status">
      From <strong>{dateTime(first.from)}</strong> to <strong>{dateTime(first.to)}</strong>
      {over === 'active' ? (
        <>
          : {count(counts.appeared)} entered the active inventory, {count(counts.disappeared)} left it (archived,
          inactive or removed), {count(counts.changed)} changed
        </>
      ) : (
        <>
          : {count(counts.appeared)} appeared, {count(counts.disappeared)} disappeared, {count(counts.changed)} changed
        </>
      )}
      {ciType ? ` among ${ciType}` : ''}.
    </p>
  );
}

/** The counts by type; a type's name narrows the list to it (and again shows every type). */
function CountsByType({
  counts,
  over,
  ciType,
  params,
}: {
  counts: Counts;
  over: Over;
  ciType?: string;
  params: URLSearchParams;
}) {
  if (counts.by_type.length === 0) return null;
  return (
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
  );
}

/** The CIs that differ, each linked as it was at the moment it is seen in and to its diff, and more on demand. */
function DifferingItems({
  walk,
  first,
  over,
  selected,
  params,
}: {
  walk: Walk;
  first: InventoryDiffPage;
  over: Over;
  selected?: string;
  params: URLSearchParams;
}) {
  const words = WORDS[over];
  const momentOf = (kind: InventoryDifference['kind']) => (kind === 'disappeared' ? first.from : first.to);
  return (
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
                <Link href={`/compare${withParams(params, { ci: item.ci_id })}`} aria-label={`Diff of ${item.name}`}>
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
  );
}
