import type { ViewProps } from '../view';
import { api } from '../../lib/api';
import type { QualityFailures, QualityGroup, QualityOverview } from '../../lib/api-shapes';
import { count, dateTime, relative } from '../../lib/format';
import { Link, setParams } from '../../lib/router';
import { DataTable } from '../../components/data-table';
import { Empty, Show, useLoad } from '../../components/states';
import { QualityRules } from './rules';

export const MEASURES = ['freshness', 'staleness', 'orphans', 'duplicates', 'completeness', 'rules'] as const;
type MeasureName = (typeof MEASURES)[number];

const LABELS: Record<MeasureName, string> = {
  freshness: 'Freshness',
  staleness: 'Staleness',
  orphans: 'Orphans',
  duplicates: 'Duplicates',
  completeness: 'Completeness',
  rules: 'Rules',
};

/**
 * `/quality` is the health view, `/quality/rules` the rule editor, `/quality/{measure}` a measure's
 * failing CIs (`/quality/rule-failures` the rules', as `/quality/rules` is taken).
 */
export default function Quality({ me, place }: ViewProps) {
  const segment = place.path.split('/')[2];
  if (segment === 'rules') return <QualityRules me={me} />;
  if (segment === 'rule-failures') return <Failures measure="rules" params={place.params} />;
  if (segment && (MEASURES as readonly string[]).includes(segment))
    return <Failures measure={segment as MeasureName} params={place.params} />;
  return <Health params={place.params} />;
}

const FILTERS = ['ci_type', 'source_id', 'owner'] as const;

/** A rollup's row: by type, source or owner. */
type Grouped = Pick<QualityGroup, 'cis' | 'score' | 'measures'> & Record<string, unknown>;

function filtersOf(params: URLSearchParams): Record<string, string> {
  return Object.fromEntries(FILTERS.flatMap((name) => (params.get(name) ? [[name, params.get(name)!]] : [])));
}

const scoreText = (score: number | null | undefined) => (score === null || score === undefined ? '—' : `${score}`);
const tone = (score: number | null | undefined) =>
  score === null || score === undefined ? 'none' : score >= 90 ? 'good' : score >= 70 ? 'fair' : 'poor';

/** The link to a measure's failing CIs under the same filters (and a group's own). */
function failuresHref(measure: MeasureName, filters: Record<string, string>) {
  const query = new URLSearchParams(filters).toString();
  return `/quality/${measure === 'rules' ? 'rule-failures' : measure}${query ? `?${query}` : ''}`;
}

function Health({ params }: { params: URLSearchParams }) {
  const filters = filtersOf(params);
  const loaded = useLoad(JSON.stringify(filters), (signal) =>
    api<QualityOverview>('/api/v1/quality', { query: filters, signal }),
  );
  return (
    <section class="quality" aria-labelledby="quality-heading">
      <h1 id="quality-heading">Data quality</h1>
      <p class="meta">
        How far the inventory can be trusted, by measure; every number opens the CIs behind it.{' '}
        <Link href="/quality/rules">Rules</Link>
        {Object.keys(filters).length > 0 ? (
          <>
            {' · '}
            <Link href="/quality">All CIs</Link>
          </>
        ) : null}
      </p>
      <Show loaded={loaded} what="data quality">
        {(overview) => (
          <>
            <Scores overview={overview} filters={filters} />
            <Trend trend={overview.trend} />
            <Rollup title="Worst types" groups={overview.by_type} field="ci_type" filters={filters} />
            <Rollup title="Worst sources" groups={overview.by_source} field="source_id" filters={filters} />
            <Rollup title="Worst owners" groups={overview.by_owner} field="owner" filters={filters} />
            <Sources sources={overview.sources} />
            <p class="meta">
              As of {dateTime(overview.computed_at)}
              {overview.pending > 0 ? ` · ${count(overview.pending)} CIs still being checked` : ''}
            </p>
          </>
        )}
      </Show>
    </section>
  );
}

function Scores({ overview, filters }: { overview: QualityOverview; filters: Record<string, string> }) {
  return (
    <div class="scores" role="list" aria-label="Scores">
      <div role="listitem" class={`score ${tone(overview.score)}`}>
        <span class="label">Overall</span>
        <strong>{scoreText(overview.score)}</strong>
        <span class="meta">{count(overview.cis)} active CIs</span>
      </div>
      {MEASURES.map((measure) => {
        const figure = overview.measures[measure];
        return (
          <div role="listitem" class={`score ${tone(figure.score)}`} key={measure}>
            <span class="label">{LABELS[measure]}</span>
            <strong>{scoreText(figure.score)}</strong>
            <Link href={failuresHref(measure, filters)}>{count(figure.failing)} failing</Link>
          </div>
        );
      })}
    </div>
  );
}

/** The overall score of the last 90 days, one point a day. */
function Trend({ trend }: { trend: QualityOverview['trend'] }) {
  const points = trend.filter((day) => day.score !== null);
  if (points.length < 2) return <p class="meta">The trend starts with the first days of sweeps.</p>;
  const width = 360;
  const height = 60;
  const x = (i: number) => (i / (points.length - 1)) * width;
  const y = (score: number) => height - (score / 100) * height;
  const line = points.map((day, i) => `${x(i).toFixed(1)},${y(day.score!).toFixed(1)}`).join(' ');
  const first = points[0]!;
  const last = points[points.length - 1]!;
  return (
    <figure class="trend">
      <svg
        viewBox={`0 0 ${width} ${height}`}
        width={width}
        height={height}
        role="img"
        aria-label="Overall score by day"
      >
        <polyline points={line} fill="none" stroke="currentColor" stroke-width="2" />
      </svg>
      <figcaption>
        Overall score, {first.day}: {scoreText(first.score)} → {last.day}: {scoreText(last.score)}
      </figcaption>
    </figure>
  );
}

function Rollup({
  title,
  groups,
  field,
  filters,
}: {
  title: string;
  groups: Grouped[];
  field: 'ci_type' | 'source_id' | 'owner';
  filters: Record<string, string>;
}) {
  if (groups.length === 0) return null;
  const nameOf = (group: Record<string, unknown>) =>
    field === 'source_id' ? String(group.name ?? group.source_id) : String(group[field] ?? '(none)');
  const narrowed = (group: Record<string, unknown>) =>
    group[field] === null ? filters : { ...filters, [field]: String(group[field]) };
  return (
    <section aria-label={title}>
      <h2>{title}</h2>
      <DataTable
        label={title}
        rows={groups.slice(0, 10)}
        rowKey={(group) => nameOf(group)}
        columns={[
          {
            header: 'Name',
            cell: (group) =>
              group[field] === null ? (
                nameOf(group)
              ) : (
                <a
                  href="#"
                  onClick={(event) => {
                    event.preventDefault();
                    setParams(narrowed(group));
                  }}
                >
                  {nameOf(group)}
                </a>
              ),
          },
          { header: 'CIs', cell: (group) => count(group.cis) },
          { header: 'Score', cell: (group) => <span class={tone(group.score)}>{scoreText(group.score)}</span> },
          ...MEASURES.map((measure) => ({
            header: LABELS[measure],
            cell: (group: Grouped) =>
              group.measures[measure].failing > 0 ? (
                <Link href={failuresHref(measure, narrowed(group))}>{count(group.measures[measure].failing)}</Link>
              ) : (
                '0'
              ),
          })),
        ]}
      />
    </section>
  );
}

function Sources({ sources }: { sources: QualityOverview['sources'] }) {
  if (sources.length === 0) return null;
  return (
    <section aria-label="Sources">
      <h2>Sources</h2>
      <DataTable
        label="Sources"
        rows={sources}
        rowKey={(source) => source.source_id}
        columns={[
          { header: 'Source', cell: (source) => source.name },
          {
            header: 'Last whole list',
            cell: (source) =>
              source.last_list_at ? (
                <span title={dateTime(source.last_list_at)}>{relative(source.last_list_at)}</span>
              ) : (
                'never'
              ),
          },
          {
            header: 'Schedule',
            cell: (source) =>
              !source.scheduled ? 'unscheduled' : source.late ? <strong class="poor">late</strong> : 'on time',
          },
        ]}
      />
    </section>
  );
}

function Failures({ measure, params }: { measure: MeasureName; params: URLSearchParams }) {
  const filters = filtersOf(params);
  const query = {
    ...filters,
    rule_id: params.get('rule_id') ?? undefined,
    cursor: params.get('cursor') ?? undefined,
    limit: 50,
  };
  const loaded = useLoad(JSON.stringify([measure, query]), (signal) =>
    api<QualityFailures>(`/api/v1/quality/${measure}/items`, { query, signal }),
  );
  const narrowing = Object.entries(filters)
    .map(([name, value]) => `${name} ${value}`)
    .join(', ');
  return (
    <section class="quality" aria-labelledby="failures-heading">
      <h1 id="failures-heading">
        {LABELS[measure]}: failing CIs{narrowing ? ` (${narrowing})` : ''}
      </h1>
      <p class="meta">
        <Link href={`/quality?${new URLSearchParams(filters).toString()}`}>Back to the scores</Link>
      </p>
      <Show loaded={loaded} what="failing CIs">
        {(page) => (
          <>
            {page.query ? (
              <p>
                <Link href={`/query?q=${encodeURIComponent(page.query)}`}>Open as a query</Link>
              </p>
            ) : null}
            {page.items.length === 0 ? (
              <Empty>Nothing fails this measure here.</Empty>
            ) : (
              <DataTable
                label="Failing CIs"
                rows={page.items}
                rowKey={(item) => `${item.ci_id}/${item.rule_id ?? ''}`}
                columns={[
                  { header: 'Name', cell: (item) => <Link href={`/ci/${item.ci_id}`}>{item.name}</Link> },
                  { header: 'Type', cell: (item) => item.ci_type },
                  { header: 'Namespace', cell: (item) => item.namespace ?? '' },
                  { header: 'Owner', cell: (item) => item.owner ?? '' },
                  { header: 'Why', cell: (item) => item.reason },
                ]}
              />
            )}
            {page.next_cursor ? (
              <p>
                <a
                  href="#"
                  onClick={(event) => {
                    event.preventDefault();
                    setParams({ cursor: page.next_cursor ?? undefined });
                  }}
                >
                  Next page
                </a>
              </p>
            ) : null}
          </>
        )}
      </Show>
    </section>
  );
}
