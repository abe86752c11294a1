import { useEffect, useState } from 'preact/hooks';
import type { ViewProps } from './view';
import { api, can } from '../lib/api';
import type {
  Answer,
  CollectionRun,
  Collector,
  CollectorsHealth,
  CollectorSource,
  SourceDetail,
} from '../lib/api-shapes';
import { dateTime, relative } from '../lib/format';
import { DataTable } from '../components/data-table';
import { Empty, ErrorBox, Show, useAction, useLoad } from '../components/states';

type CollectorHealth = CollectorsHealth['collectors'][number];
/** A collector's source, with its last error once its detail is read (the list leaves it out). */
type Source = CollectorSource & Partial<Pick<SourceDetail, 'last_error'>>;
type HealthReport = { status?: string; details?: { message?: string } } | null;

/** A source's health report: a JSON object the API describes in words only (`{status, last_check, details: {message, …}}`). */
const reportOf = (source: Source) => source.health_status as HealthReport;

/** When the schedule runs the source next: an interval after its last collection, or now when overdue. */
function nextRun(source: Source): string {
  if (source.status !== 'enabled' || !source.schedule_config.enabled) return 'not scheduled';
  if (!source.last_collection) return 'due now';
  const next = new Date(source.last_collection).getTime() + source.schedule_config.interval_minutes * 60_000;
  return next <= Date.now() ? 'due now' : relative(new Date(next).toISOString());
}

/** `created 3, relationships (created 2, deleted 1)`: counts as words, nested ones in brackets. */
export function describeCounts(counts: Record<string, unknown>): string {
  return Object.entries(counts)
    .map(([name, value]) =>
      value !== null && typeof value === 'object' && !Array.isArray(value)
        ? `${name.replace(/_/g, ' ')} (${describeCounts(value as Record<string, unknown>)})`
        : `${name.replace(/_/g, ' ')} ${Array.isArray(value) ? value.length : String(value)}`,
    )
    .join(', ');
}

/** A run's error, or what its reconcile counted. */
function runResult(run: CollectionRun) {
  if (run.error) return <span class="error-text">{run.error}</span>;
  return run.counts ? describeCounts(run.counts) : '—';
}

/** A run still to finish (a watch that follows its cluster is running for good, and is not waited for). */
const pending = (run: CollectionRun) => run.status === 'queued' || (run.status === 'running' && !run.watching_since);
const POLL_MS = 2_000;

export default function Sources({ me }: ViewProps) {
  const loaded = useLoad('collectors', async (signal) => {
    const [collectors, health] = await Promise.all([
      api<Answer<'listCollectors'>>('/api/v1/collectors', { query: { limit: 100 }, signal }),
      api<CollectorsHealth>('/api/v1/collectors/health/all', { signal }),
    ]);
    return { collectors: collectors.items, health: new Map(health.collectors.map((entry) => [entry.id, entry])) };
  });
  return (
    <section class="sources">
      <h1>Sources and collectors</h1>
      <Show loaded={loaded} what="collectors">
        {({ collectors, health }) =>
          collectors.length === 0 ? (
            <Empty>No collectors yet: add a source through the API (POST /api/v1/sources).</Empty>
          ) : (
            collectors.map((collector) => (
              <CollectorPanel
                key={collector.id}
                collector={collector}
                health={health.get(collector.id)}
                mayTrigger={can(me, 'collectors:write')}
              />
            ))
          )
        }
      </Show>
    </section>
  );
}

/** A collector's sources and recent runs, reloaded on demand, and a "collect now" per source. */
function useCollector(collector: Collector) {
  const loaded = useLoad(String(collector.id), async (signal) => {
    const [sources, runs] = await Promise.all([
      api<CollectorSource[]>(`/api/v1/collectors/${collector.id}/sources`, { signal }),
      api<Answer<'listCollectionRuns'>>(`/api/v1/collectors/${collector.id}/runs`, { query: { limit: 10 }, signal }),
    ]);
    // the last error is on each source's detail; collectors hold a handful of sources
    const details = await Promise.all(
      sources.slice(0, 50).map((source) => api<SourceDetail>(`/api/v1/sources/${source.id}`, { signal })),
    );
    const listed: Source[] = [...details, ...sources.slice(50)];
    return { sources: listed, runs: runs.items };
  });
  const [message, setMessage] = useState<string>();
  const action = useAction();
  // while a run is queued or running, its row follows it to the end without a manual refresh
  const waiting = loaded.data?.runs.some(pending) === true;
  useEffect(() => {
    if (!waiting || loaded.loading) return undefined;
    const timer = setTimeout(loaded.reload, POLL_MS);
    return () => clearTimeout(timer);
  }, [waiting, loaded.loading, loaded.data]);
  const trigger = (source: Source) =>
    void action.run(async () => {
      await api(`/api/v1/collectors/${collector.id}/trigger`, { method: 'POST', query: { source_id: source.id } });
      setMessage(`Collection of ${source.name} queued.`);
      loaded.reload();
    });
  return { loaded, message, error: action.error, trigger };
}

/**
 * A source awaiting its first data is not failing, but nor has it shown itself healthy: it is
 * counted apart, and a collector none of whose sources has shown itself healthy yet is not called
 * healthy (the badge would contradict the count beside it).
 */
function healthOf(health: CollectorHealth): { state: string; line: string } {
  const awaiting = health.sources_awaiting_data;
  const healthy = health.sources_healthy - awaiting;
  const state = health.status === 'healthy' && awaiting > 0 && healthy === 0 ? 'no data yet' : health.status;
  const shown = `${state} · ${healthy}/${health.sources_total} sources healthy`;
  return { state, line: awaiting ? `${shown}, ${awaiting} awaiting first data` : shown };
}

function CollectorPanel({
  collector,
  health,
  mayTrigger,
}: {
  collector: Collector;
  health?: CollectorHealth;
  mayTrigger: boolean;
}) {
  const { loaded, message, error, trigger } = useCollector(collector);
  return (
    <section class="collector" aria-labelledby={`collector-${collector.id}`}>
      <div class="section-head">
        <h2 id={`collector-${collector.id}`}>
          {collector.name} <span class="meta">{collector.collector_type}</span>
        </h2>
        <span class={`health ${health ? healthOf(health).state.replace(/ /g, '-') : 'unknown'}`}>
          {health ? healthOf(health).line : 'health unknown'}
        </span>
        <button type="button" onClick={loaded.reload}>
          Refresh
        </button>
      </div>
      {message ? (
        <p role="status" class="notice">
          {message}
        </p>
      ) : null}
      {error ? <ErrorBox error={error} /> : null}
      <Show loaded={loaded} what="sources">
        {({ sources, runs }) => (
          <>
            {sources.length === 0 ? (
              <Empty>No sources.</Empty>
            ) : (
              <SourcesTable collector={collector} sources={sources} trigger={mayTrigger ? trigger : undefined} />
            )}
            <h3>Recent runs</h3>
            {runs.length === 0 ? <Empty>No runs yet.</Empty> : <RunsTable collector={collector} runs={runs} />}
          </>
        )}
      </Show>
    </section>
  );
}

/** A collector's sources; `trigger`, when the sign-in may collect, adds a "collect now" button to each. */
function SourcesTable({
  collector,
  sources,
  trigger,
}: {
  collector: Collector;
  sources: Source[];
  trigger?: (source: Source) => void;
}) {
  return (
    <DataTable
      label={`Sources of ${collector.name}`}
      rows={sources}
      rowKey={(source) => source.id}
      columns={[
        {
          header: 'Source',
          cell: (source) => (
            <>
              {source.name}
              <div class="meta">{source.endpoint ?? 'push'}</div>
            </>
          ),
        },
        { header: 'Status', cell: (source) => source.status },
        {
          header: 'Health',
          cell: (source) => (
            <>
              <span class={`health ${reportOf(source)?.status ?? 'unknown'}`}>
                {reportOf(source)?.status ?? (source.endpoint ? 'not collected yet' : 'no push yet')}
              </span>
              {reportOf(source)?.details?.message ? <div class="meta">{reportOf(source)?.details?.message}</div> : null}
            </>
          ),
        },
        {
          header: 'Last collection',
          cell: (source) => <span title={dateTime(source.last_collection)}>{relative(source.last_collection)}</span>,
        },
        { header: 'Next run', cell: nextRun },
        { header: 'Last error', class: 'error-text', cell: (source) => source.last_error ?? '—' },
        trigger !== undefined && {
          header: 'Actions',
          cell: (source) => (
            <button
              type="button"
              onClick={() => trigger(source)}
              disabled={source.status !== 'enabled' || collector.collector_type === 'universal'}
            >
              Collect now<span class="sr-only"> {source.name}</span>
            </button>
          ),
        },
      ]}
    />
  );
}

function RunsTable({ collector, runs }: { collector: Collector; runs: CollectionRun[] }) {
  return (
    <DataTable
      label={`Recent runs of ${collector.name}`}
      rows={runs}
      rowKey={(run) => run.id}
      columns={[
        { header: 'Source', cell: (run) => run.source_name },
        {
          header: 'Status',
          cell: (run) => (
            <>
              <span class={`run ${run.status}`}>{run.status}</span>
              {run.watching_since ? <div class="meta">watching since {dateTime(run.watching_since)}</div> : null}
            </>
          ),
        },
        { header: 'Trigger', cell: (run) => run.trigger },
        { header: 'Queued', cell: (run) => dateTime(run.queued_at) },
        { header: 'Finished', cell: (run) => dateTime(run.finished_at) },
        { header: 'Result', class: 'value', cell: runResult },
      ]}
    />
  );
}
