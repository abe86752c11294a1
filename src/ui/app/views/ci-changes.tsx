import { useState } from 'preact/hooks';
import { api } from '../lib/api';
import type { ChangeList, ChangeRecord, CiChangePage, ConfigurationItem } from '../lib/api-shapes';
import { dateTime, timeOfDay } from '../lib/format';
import { ChangeItem, DiffModePicker } from '../components/change';
import { Empty, ErrorBox, Loading, Show, useLoad } from '../components/states';
import { VirtualList } from '../components/virtual-list';
import type { Radius } from '../components/graph-view';
import { WindowPicker } from '../components/window-picker';
import { windowOf } from '../lib/window';
import { bursts, describeBurst, type Burst } from '../lib/bursts';
import { useCursorWalk } from '../components/cursor-walk';
import { ReadableLines, ReadingPicker, type Line } from '../components/readable-timeline';
import { setParams } from '../lib/router';

/**
 * The CI's changes: by default its readable timeline over the page's window (its own changes and
 * those of what it owns, rolled up and folded into lines, coloured by severity), or every exact
 * record of its history.
 */
export function Timeline({ ci, params, at }: { ci: ConfigurationItem; params: URLSearchParams; at: number }) {
  const [reading, setReading] = useReading(params);
  return reading === 'lines' ? (
    <ReadableTimeline ci={ci} params={params} at={at} reading={reading} setReading={setReading} />
  ) : (
    <ExactTimeline ci={ci} reading={reading} setReading={setReading} />
  );
}

/** The page's reading, kept in the URL (`reading=exact`; lines without it), for both its timelines. */
function useReading(params: URLSearchParams): [Reading['reading'], Reading['setReading']] {
  const reading = params.get('reading') === 'exact' ? 'exact' : 'lines';
  return [reading, (next) => setParams({ reading: next === 'exact' ? 'exact' : undefined }, { replace: true })];
}

interface Reading {
  reading: 'lines' | 'exact';
  setReading: (reading: 'lines' | 'exact') => void;
}

function ReadableTimeline({
  ci,
  params,
  at,
  reading,
  setReading,
}: Reading & { ci: ConfigurationItem; params: URLSearchParams; at: number }) {
  const [mode, setMode] = useState<'inline' | 'split'>('inline');
  const window = windowOf(params, at);
  const query = { rollup: 'true', fold: 'true', start_date: window.start, end_date: window.end, limit: 200 };
  const loaded = useLoad(`${ci.ci_id} ${JSON.stringify(query)}`, (signal) =>
    api<CiChangePage>(`/api/v1/ci-changes/${ci.ci_id}`, { query, signal }),
  );
  return (
    <section aria-labelledby="timeline-heading" class="timeline">
      <div class="section-head">
        <h2 id="timeline-heading">Changes</h2>
        <ReadingPicker name="the change timeline" reading={reading} setReading={setReading} />
        <DiffModePicker mode={mode} setMode={setMode} />
      </div>
      <Show loaded={loaded} what="changes">
        {(page) =>
          page.items.length === 0 ? (
            <Empty>Nothing changed in this window.</Empty>
          ) : (
            <ReadableLines lines={page.items as Line[]} mode={mode} label="Change timeline, newest first" />
          )
        }
      </Show>
    </section>
  );
}

function ExactTimeline({ ci, reading, setReading }: Reading & { ci: ConfigurationItem }) {
  const [mode, setMode] = useState<'inline' | 'split'>('inline');
  const walk = useCursorWalk<ChangeRecord>(ci.ci_id, (cursor, signal) =>
    api<CiChangePage>(`/api/v1/ci-changes/${ci.ci_id}`, {
      query: cursor ? { cursor } : { limit: 500 },
      signal,
    }),
  );
  return (
    <section aria-labelledby="timeline-heading" class="timeline">
      <div class="section-head">
        <h2 id="timeline-heading">
          Changes {walk.total !== undefined ? <span class="meta">({walk.total.toLocaleString('en')})</span> : null}
        </h2>
        <ReadingPicker name="the change timeline" reading={reading} setReading={setReading} />
        <DiffModePicker mode={mode} setMode={setMode} />
      </div>
      {walk.error ? <ErrorBox error={walk.error} /> : null}
      {walk.items.length === 0 && walk.busy ? <Loading what="changes" /> : null}
      {walk.items.length === 0 && !walk.busy && !walk.error ? <Empty>No changes recorded.</Empty> : null}
      {walk.items.length > 0 ? (
        <VirtualList
          label="Change timeline, newest first"
          count={walk.items.length}
          estimate={44}
          onNearEnd={walk.next ? walk.more : undefined}
          row={(index) => {
            const record = walk.items[index]!;
            return (
              <ChangeItem
                record={record}
                showCi={false}
                mode={mode}
                asOf={`/ci/${ci.ci_id}?as_of=${encodeURIComponent(record.changed_at)}`}
              />
            );
          }}
        />
      ) : null}
    </section>
  );
}

/** What changed around the CI (its radius, as the graph above walks it) in the window the URL holds, newest first. */
export function ChangesAround({
  ciId,
  radius,
  params,
  at,
}: {
  ciId: string;
  radius: Radius;
  params: URLSearchParams;
  at: number;
}) {
  const [mode, setMode] = useState<'inline' | 'split'>('inline');
  const [reading, setReading] = useReading(params);
  const window = windowOf(params, at);
  const query = {
    related_to: ciId,
    depth: radius.depth,
    direction: radius.direction,
    start_date: window.start,
    end_date: window.end,
    limit: 100,
    ...(reading === 'lines' ? { rollup: 'true', fold: 'true' } : {}),
  };
  const loaded = useLoad(JSON.stringify(query), (signal) => api<ChangeList>('/api/v1/changes', { query, signal }));
  return (
    <section aria-labelledby="around-heading" class="timeline">
      <div class="section-head">
        <h2 id="around-heading">Changes around here</h2>
        <ReadingPicker name="the changes around here" reading={reading} setReading={setReading} />
        <DiffModePicker mode={mode} setMode={setMode} />
      </div>
      <WindowPicker params={params} />
      <Show loaded={loaded} what="the changes around it">
        {(page) =>
          page.items.length === 0 ? (
            <Empty>Nothing changed around it in this window.</Empty>
          ) : (
            <>
              <p class="meta">
                {page.total_exact ? '' : 'About '}
                {page.total.toLocaleString('en')} change{page.total === 1 ? '' : 's'}
                {page.total > page.items.length
                  ? `, the newest ${page.items.length} shown: narrow the window to see the rest`
                  : ''}
                .
              </p>
              {reading === 'lines' ? (
                <ReadableLines lines={page.items as Line[]} mode={mode} label="Changes around this item" />
              ) : (
                <ul class="changes" aria-label="Changes around this item">
                  {bursts(page.items).map((entry) =>
                    entry.kind === 'one' ? (
                      <li key={entry.record.id}>
                        <ChangeItem record={entry.record} showCi mode={mode} />
                      </li>
                    ) : (
                      <li key={entry.burst.records[0]!.id}>
                        <BurstItem burst={entry.burst} mode={mode} />
                      </li>
                    ),
                  )}
                </ul>
              )}
            </>
          )
        }
      </Show>
    </section>
  );
}

/** Repeats of one change on sibling CIs (a rollout, a crash loop) as one line that opens into its records. */
function BurstItem({ burst, mode }: { burst: Burst<ChangeRecord>; mode: 'inline' | 'split' }) {
  const span =
    burst.newest === burst.oldest ? dateTime(burst.newest) : `${dateTime(burst.oldest)} – ${timeOfDay(burst.newest)}`;
  const what = describeBurst(burst);
  return (
    <details class={`burst change-${burst.change_type.toLowerCase()}`}>
      <summary>
        <span class={`badge ${burst.change_type.toLowerCase()}`}>{burst.change_type}</span>{' '}
        <time dateTime={burst.newest}>{span}</time> <span class="burst-what">{what}</span>
      </summary>
      <ul class="changes" aria-label={what}>
        {burst.records.map((record) => (
          <li key={record.id}>
            <ChangeItem record={record} showCi mode={mode} />
          </li>
        ))}
      </ul>
    </details>
  );
}
