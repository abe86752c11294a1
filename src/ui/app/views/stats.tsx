import type { ViewProps } from './view';
import { SavedViews } from '../components/saved-views';
import { api } from '../lib/api';
import type { ChangeStatistics } from '../lib/api-shapes';
import { count, dateTime } from '../lib/format';
import { timeTicks } from '../lib/time-axis';
import { Link, navigate, setParams } from '../lib/router';
import { windowOf } from '../lib/window';
import { Empty, Show, useLoad } from '../components/states';
import { WindowPicker } from '../components/window-picker';

const GROUPS: [string, string, number][] = [
  ['hour', 'By hour', 3_600_000],
  ['day', 'By day', 86_400_000],
  ['week', 'By week', 7 * 86_400_000],
];
/** Statistics count archivals; change records call them DELETED. */
const KINDS = [
  ['created', 'CREATED'],
  ['updated', 'UPDATED'],
  ['archived', 'DELETED'],
] as const;

/** The change search for one bucket (and one kind of change, or one CI type). */
function searchLink(start: string, length: number, changeType?: string, ciType?: string): string {
  const end = new Date(new Date(start).getTime() + length - 1).toISOString();
  const params = new URLSearchParams({ from: start, to: end });
  if (changeType) params.set('change_type', changeType);
  if (ciType) params.set('ci_type', ciType);
  return `/changes?${params.toString()}`;
}

export default function StatsView({ place }: ViewProps) {
  const { params } = place;
  const groupBy = params.get('group_by') ?? 'day';
  const window = windowOf(params, place.at);
  const query = { start_date: window.start, end_date: window.end, group_by: groupBy };
  const loaded = useLoad(JSON.stringify(query), (signal) =>
    api<ChangeStatistics>('/api/v1/changes/stats', { query, signal }),
  );
  const bucket = GROUPS.find(([name]) => name === groupBy)?.[2] ?? 86_400_000;
  const scale: Scale = params.get('scale') === 'log' ? 'log' : 'linear';
  return (
    <section class="stats">
      <h1>Statistics</h1>
      <SavedViews view="stats" params={params} />
      <div class="toolbar">
        <WindowPicker params={params} allowAll={false} defaultLabel="Last 90 days" />
        <fieldset class="segmented">
          <legend>Group by</legend>
          {GROUPS.map(([name, label]) => (
            <label key={name}>
              <input
                type="radio"
                name="group_by"
                checked={groupBy === name}
                onChange={() => setParams({ group_by: name === 'day' ? undefined : name })}
              />
              {label}
            </label>
          ))}
        </fieldset>
        <fieldset class="segmented">
          <legend>Scale</legend>
          <label>
            <input
              type="radio"
              name="scale"
              checked={scale === 'linear'}
              onChange={() => setParams({ scale: undefined })}
            />
            Linear
          </label>
          <label title="One large load (a first collection) leaves the rest of the window readable">
            <input type="radio" name="scale" checked={scale === 'log'} onChange={() => setParams({ scale: 'log' })} />
            Logarithmic
          </label>
        </fieldset>
      </div>
      <Show loaded={loaded} what="statistics">
        {(stats) => (
          <>
            <p class="meta">
              {dateTime(stats.time_range.start)} – {dateTime(stats.time_range.end)}
            </p>
            <div class="tiles">
              <Tile label="Changes" value={stats.total_changes} />
              <Tile label="Affected CIs" value={stats.affected_cis} />
              <Tile label="Created" value={stats.changes_by_type.created} kind="created" />
              <Tile label="Updated" value={stats.changes_by_type.updated} kind="updated" />
              <Tile label="Archived" value={stats.changes_by_type.archived} kind="archived" />
            </div>
            <h2>Changes over time</h2>
            {stats.series.length === 0 || stats.total_changes === 0 ? (
              <Empty>No changes in this window.</Empty>
            ) : (
              <SeriesChart series={stats.series} bucket={bucket} range={stats.time_range} scale={scale} />
            )}
            <h2>Most changed CI types</h2>
            {stats.top_changed_ci_types.length === 0 ? (
              <Empty>No changes in this window.</Empty>
            ) : (
              <TopTypes stats={stats} />
            )}
          </>
        )}
      </Show>
    </section>
  );
}

function Tile({ label, value, kind }: { label: string; value: number; kind?: string }) {
  return (
    <div class={`tile ${kind ?? ''}`}>
      <span class="tile-value">{count(value)}</span>
      <span class="tile-label">{label}</span>
    </div>
  );
}

/** A round number at or above `value` (1, 2 or 5 times a power of ten), for the axis' top. */
function niceCeiling(value: number): number {
  const power = 10 ** Math.floor(Math.log10(Math.max(1, value)));
  return [1, 2, 5, 10].map((step) => step * power).find((candidate) => candidate >= value) ?? value;
}

type Scale = 'linear' | 'log';

const CHART = { width: 900, height: 240, left: 56, bottom: 24 };

type Point = ChangeStatistics['series'][number];

/** Where the chart puts a moment (x), a count (y) and its value ticks, over the window and the largest bucket. */
function chartScale(series: Point[], bucket: number, range: ChangeStatistics['time_range'], scale: Scale) {
  const { width, height, left } = CHART;
  const from = new Date(range.start).getTime();
  const to = new Date(range.end).getTime();
  const span = Math.max(bucket, to - from);
  const plot = width - left;
  const xOf = (time: number) => left + Math.min(1, Math.max(0, (time - from) / span)) * plot;
  const largest = Math.max(1, ...series.map((point) => point.created + point.updated + point.archived));
  const top = scale === 'log' ? 10 ** Math.ceil(Math.log10(largest)) : niceCeiling(largest);
  const barWidth = Math.max(2, Math.min(48, (bucket / span) * plot * 0.8));
  const yOf =
    scale === 'log'
      ? (value: number) => height - (Math.log10(1 + value) / Math.log10(1 + top)) * (height - 8)
      : (value: number) => height - (value / top) * (height - 8);
  const valueTicks =
    scale === 'log' ? Array.from({ length: Math.log10(top) + 1 }, (_, power) => 10 ** power) : [0, top / 2, top];
  return { from, to, xOf, yOf, barWidth, valueTicks };
}

type ChartScale = ReturnType<typeof chartScale>;

/**
 * Stacked bars placed by time across the whole window (empty buckets are gaps, not missing), a
 * y-axis with round ticks (powers of ten on the logarithmic scale, which stacks the running
 * totals), and a time axis labelled at round steps; each part of a bar is a link to the change
 * search for that bucket and kind, and names the whole bucket when pointed at.
 */
function SeriesChart({
  series,
  bucket,
  range,
  scale,
}: {
  series: Point[];
  bucket: number;
  range: ChangeStatistics['time_range'];
  scale: Scale;
}) {
  const { width, height, left, bottom } = CHART;
  const at = chartScale(series, bucket, range, scale);
  return (
    <figure class="chart">
      <svg
        viewBox={`0 0 ${width} ${height + bottom}`}
        role="group"
        aria-label={`Changes per bucket: created, updated, archived (${scale === 'log' ? 'logarithmic' : 'linear'} scale)`}
      >
        {at.valueTicks.map((tick) => (
          <g key={tick} class="tick">
            <line x1={left} x2={width} y1={at.yOf(tick)} y2={at.yOf(tick)} class={tick === 0 ? 'axis' : 'grid'} />
            <text x={left - 6} y={at.yOf(tick) + 4} class="label" text-anchor="end">
              {count(tick)}
            </text>
          </g>
        ))}
        <line x1={left} x2={left} y1={0} y2={height} class="axis" />
        <line x1={left} x2={width} y1={height} y2={height} class="axis" />
        {timeTicks(at.from, at.to).map((tick) => (
          <g key={tick.at} class="tick time">
            <line x1={at.xOf(tick.at)} x2={at.xOf(tick.at)} y1={height} y2={height + 5} class="axis" />
            <text x={at.xOf(tick.at)} y={height + 18} class="label" text-anchor="middle">
              {tick.label}
            </text>
          </g>
        ))}
        {series.map((point) => (
          <StackedBar key={point.bucket_start} point={point} bucket={bucket} at={at} />
        ))}
      </svg>
      <figcaption class="legend">
        {KINDS.map(([kind]) => (
          <span key={kind}>
            <span class={`swatch ${kind}`} aria-hidden="true" /> {kind}
          </span>
        ))}
        <span class="meta">Select a bar to search its changes.</span>
      </figcaption>
    </figure>
  );
}

/** One bucket's bar: a part per kind of change, each a link to the search for it. */
function StackedBar({ point, bucket, at }: { point: Point; bucket: number; at: ChartScale }) {
  const { width, height, left } = CHART;
  let below = 0;
  let y = height;
  const start = new Date(point.bucket_start).getTime();
  const x = Math.min(width - at.barWidth, Math.max(left, at.xOf(start + bucket / 2) - at.barWidth / 2));
  const whole = `${dateTime(point.bucket_start)}: ${count(point.created)} created, ${count(point.updated)} updated, ${count(point.archived)} archived`;
  return (
    <g>
      {KINDS.map(([kind, changeType]) => {
        const value = point[kind];
        if (value === 0) return null;
        // a bucket with a few changes beside one with thousands still gets a bar one can point at
        const barHeight = Math.max(4, at.yOf(below) - at.yOf(below + value));
        below += value;
        y -= barHeight;
        return (
          <a
            key={kind}
            href={`/ui${searchLink(point.bucket_start, bucket, changeType)}`}
            aria-label={`${value} ${kind} from ${dateTime(point.bucket_start)}`}
            onClick={(event) => {
              event.preventDefault();
              navigate(searchLink(point.bucket_start, bucket, changeType));
            }}
          >
            <rect x={x} y={y} width={at.barWidth} height={barHeight} class={`bar ${kind}`}>
              <title>{`${whole} (select to search the ${kind})`}</title>
            </rect>
          </a>
        );
      })}
    </g>
  );
}

function TopTypes({ stats }: { stats: ChangeStatistics }) {
  const top = Math.max(1, ...stats.top_changed_ci_types.map((entry) => entry.count));
  const length = new Date(stats.time_range.end).getTime() - new Date(stats.time_range.start).getTime() + 1;
  return (
    <ul class="top-types">
      {stats.top_changed_ci_types.map((entry) => (
        <li key={entry.ci_type}>
          <Link href={searchLink(stats.time_range.start, length, undefined, entry.ci_type)}>{entry.ci_type}</Link>
          <span class="bar-track" aria-hidden="true">
            <span class="bar-fill" style={{ width: `${(entry.count / top) * 100}%` }} />
          </span>
          <span class="value">{count(entry.count)}</span>
        </li>
      ))}
    </ul>
  );
}
