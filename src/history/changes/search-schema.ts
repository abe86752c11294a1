import { Type, type Static } from '@sinclair/typebox';
import { ChangeRecord, RelatedTo } from './schema.js';
import { Filters, Limit, MAX_OFFSET, Timestamp } from '../../platform/http/schemas.js';
import { SEARCH_WINDOW } from '../search/backend.js';

const DateBound = (description: string) =>
  Type.Union([Type.String({ format: 'date-time' }), Type.String({ format: 'date' })], { description });

export const SEARCH_SYNTAX =
  'Words are ANDed: `nginx web` finds records matching both. `or` between two words ORs them (`alpha or beta`); ' +
  '`-word` excludes (`pod -staging`); "quoted text" matches whole tokens exactly instead of by prefix ' +
  '(`"nginx:1.25"`). Unquoted words match by prefix (`web-7f` finds `web-7f9c4`). Names made of parts are found ' +
  'whole or by a prefix (`app-0-7c9f0-0x0`, `db-1.prod`) and by any part (`7c9f0`, `prod`), never as a prefix search ' +
  'of their first part. Searched: CI name, namespace, CI type, changed field paths (whole, `raw_data.spec`, or by ' +
  'segment, `replicas`) and the scalar old and new values (an image tag `nginx:1.25`, an IP `10.0.0.7`, a status). ' +
  'Case-insensitive, no stemming.';

export const SearchQuery = Type.Object({
  query: Type.String({
    minLength: 1,
    maxLength: 500,
    description: `At least 2 characters after trimming. ${SEARCH_SYNTAX}`,
    examples: ['nginx:1.25', 'web-7f9c4 replicas', '"db-1.prod.example" -staging', 'CrashLoopBackOff or OOMKilled'],
  }),
  limit: Limit(50, 500),
  offset: Type.Integer({
    minimum: 0,
    maximum: MAX_OFFSET,
    default: 0,
    description: `Results to skip; \`offset + limit\` may not exceed ${SEARCH_WINDOW}: narrow the query or the dates instead.`,
  }),
  start_date: Type.Optional(
    DateBound('Inclusive lower bound on `changed_at`: a date-time with offset, or a date (midnight UTC).'),
  ),
  end_date: Type.Optional(
    DateBound('Upper bound on `changed_at`: a date-time is inclusive, a date covers that whole UTC day.'),
  ),
  filter: Type.Optional(
    Filters('change_type, ci_type, ci_name, changed_at, ci_id, kind, severity, changed_field (as on `GET /changes`)'),
  ),
});
export type SearchQuery = Static<typeof SearchQuery>;

const Matched = Type.Object(
  {
    in: Type.Union(['name', 'namespace', 'ci_type', 'field', 'old_value', 'new_value'].map((w) => Type.Literal(w))),
    field: Type.Optional(Type.String({ description: 'The field path, for field, old_value and new_value matches.' })),
    excerpt: Type.String({ description: 'HTML-escaped text around the match, matches inside `<em>`…`</em>`.' }),
  },
  { title: 'SearchMatch' },
);

export const SearchHit = Type.Composite(
  [
    ChangeRecord,
    Type.Object({
      score: Type.Number({
        description: 'Relevance: a name match weighs most, then namespace and type, field paths, values.',
      }),
      matched: Type.Array(Matched, { description: 'Where the query matched (at most 10 places).' }),
    }),
  ],
  { title: 'SearchHit' },
);

export const SearchResponse = Type.Object(
  {
    items: Type.Array(SearchHit),
    total: Type.Integer({ description: 'Matching change records.' }),
    total_exact: Type.Boolean({
      description: 'False when `total` is an estimate: more matches than could be counted in time.',
    }),
    offset: Type.Integer(),
    limit: Type.Integer(),
    took_ms: Type.Integer({ description: 'Time the search took in the backend, in milliseconds.' }),
    query: Type.String({ description: 'The query as received.' }),
  },
  { title: 'SearchResponse' },
);

export const StatsQuery = Type.Object({
  start_date: Type.Optional(
    DateBound(
      'Without it: the last 90 days from the pre-aggregate. With it: computed from the full history from this moment.',
    ),
  ),
  end_date: Type.Optional(
    DateBound('Upper bound of an explicit window (a date covers that whole UTC day); defaults to now.'),
  ),
  group_by: Type.Union([Type.Literal('hour'), Type.Literal('day'), Type.Literal('week')], {
    default: 'hour',
    description: 'Bucket size of `series` (weeks start on Monday, UTC).',
  }),
  ...RelatedTo,
});
export type StatsQuery = Static<typeof StatsQuery>;

const TypeCounts = Type.Object({
  created: Type.Integer(),
  updated: Type.Integer(),
  archived: Type.Integer({ description: '`DELETED` changes.' }),
});

export const Stats = Type.Object(
  {
    total_changes: Type.Integer(),
    affected_cis: Type.Integer({ description: 'Distinct CIs with at least one change in the window.' }),
    changes_by_type: TypeCounts,
    top_changed_ci_types: Type.Array(Type.Object({ ci_type: Type.String(), count: Type.Integer() }), {
      description: 'The 10 CI types with most changes, most first.',
    }),
    changes_by_kind: Type.Array(Type.Object({ kind: Type.String(), count: Type.Integer() }), {
      description:
        'Changes by kind (docs/readable-changes.md), most first; records ignored by a rule count too. The default ' +
        'window counts whole UTC days from its start.',
    }),
    time_range: Type.Object(
      { start: Timestamp(), end: Timestamp() },
      {
        description:
          'The window covered; without start_date its end is the last refresh of the pre-aggregate. A window reaching back ' +
          'before the retained history (CINV_CHANGE_RETENTION) starts where the history does.',
      },
    ),
    series: Type.Array(Type.Composite([Type.Object({ bucket_start: Timestamp() }), TypeCounts]), {
      description: 'Changes per bucket of `group_by`, oldest first; buckets without changes are left out.',
    }),
  },
  { title: 'ChangeStatistics' },
);

export const RefreshResponse = Type.Object(
  {
    refreshed: Type.Literal(true),
    window: Type.Object(
      { start: Timestamp(), end: Timestamp() },
      { description: 'The default window the aggregate now covers.' },
    ),
    rows: Type.Integer({ description: 'Change records folded in by this refresh.' }),
    took_ms: Type.Integer(),
  },
  { title: 'StatisticsRefresh' },
);
