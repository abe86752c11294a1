import { Type, type Static } from '@sinclair/typebox';
import {
  Filters,
  Limit,
  MAX_OFFSET,
  Nullable,
  Offset,
  SortOrder,
  Timestamp,
  Uuid,
} from '../../platform/http/schemas.js';
import type { FilterSpec } from '../../platform/query/filters.js';
import { CHANGE_SORT_FIELDS } from '../records/store.js';
import { GRAPH_DIRECTIONS } from '../../inventory/relationships/schema.js';
import { SEVERITIES } from '../records/kinds.js';

export const CHANGE_TYPES = ['CREATED', 'UPDATED', 'DELETED'] as const;

/** Columns of `change_records cr`: history is filtered on its own copies, never on the live CI. */
export const CHANGE_FILTERS: FilterSpec = {
  fields: {
    change_type: { kind: 'text', column: 'cr.change_type', values: CHANGE_TYPES },
    ci_type: { kind: 'text', column: 'cr.ci_type' },
    ci_name: { kind: 'text', column: 'cr.ci_name' },
    changed_at: { kind: 'timestamp', column: 'cr.changed_at' },
    ci_id: { kind: 'uuid', column: 'cr.ci_id' },
    changed_field: { kind: 'text', column: 'cr.changed_fields', array: true },
    kind: { kind: 'text', column: 'cr.kind' },
    severity: { kind: 'text', column: 'cr.severity', values: SEVERITIES },
  },
};

/** How a history read treats repeats and ignored records (docs/readable-changes.md). */
export const Reading = {
  fold: Type.Boolean({
    default: false,
    description:
      'Folded: repeats of one change on one CI within the fold window (1 h unless set) read as one entry, the first ' +
      'record with `fold.records` and `fold.last_at`; the exact records are listed without it. A fold is listed where ' +
      'its first record falls, and filters apply to that record.',
  }),
  include_ignored: Type.Boolean({
    default: false,
    description: 'List the records a change rule ignores too (they are stored, and hidden unless asked for).',
  }),
};

export const CiChangesParams = Type.Object({
  ci_id: Uuid('The CI identifier; the CI itself may have been removed permanently.'),
});

export const CiChangesQuery = Type.Object({
  offset: Type.Integer({
    minimum: 0,
    maximum: MAX_OFFSET,
    default: 0,
    description:
      'Records to skip on the first page. Ignored (but echoed) when `cursor` is given: cursor pages continue by keyset.',
  }),
  limit: Limit(100, 5000),
  cursor: Type.Optional(
    Type.String({ minLength: 1, maxLength: 2048, description: 'Opaque `next_cursor` of the previous page.' }),
  ),
  ...Reading,
  rollup: Type.Boolean({
    default: false,
    description:
      'Rolled up: the CI’s records and those of what it owned at each record’s moment, through `manages` relationships ' +
      '(a deployment’s replica sets and their pods; pods and replica sets roll up, and what a rule rolls up), over a window ' +
      '(`start_date`, `end_date`: the week up to now unless given). With `fold=true` the records read as lines: what one ' +
      'collection wrote is one change set, read by its most severe record, and sets of the same kind and type within the ' +
      'fold window fold into one line (`fold`, `rollup.cis`, `rollup.record_ids`). `offset` does not apply.',
  }),
  start_date: Type.Optional(Type.String({ format: 'date-time', description: 'With `rollup`: the window’s start.' })),
  end_date: Type.Optional(
    Type.String({ format: 'date-time', description: 'With `rollup`: the window’s end (exclusive).' }),
  ),
});
export type CiChangesQuery = Static<typeof CiChangesQuery>;

const DateBound = (description: string) =>
  Type.Union([Type.String({ format: 'date-time' }), Type.String({ format: 'date' })], { description });

/** The changes around a CI: its own and those of every CI in its radius (see the dependency graph). */
export const RelatedTo = {
  related_to: Type.Optional(
    Uuid(
      'Only the changes of this CI and of the CIs around it, as `GET /configuration-items/{id}/graph` walks them now with ' +
        '`depth` and `direction` (inactive and archived CIs included). A radius of more than 5 000 CIs is a 422: narrow it.',
    ),
  ),
  depth: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 6, description: 'With `related_to`: how far to walk (default 2).' }),
  ),
  direction: Type.Optional(
    Type.Union(
      GRAPH_DIRECTIONS.map((d) => Type.Literal(d)),
      { description: 'With `related_to`: `downstream`, `upstream` or `both` (default).' },
    ),
  ),
};

export const ChangeListQuery = Type.Object({
  limit: Type.Integer({
    minimum: 1,
    maximum: 1000,
    default: 100,
    description:
      'Page size in change records, at most 1000. For `text/csv` the default does not apply: without an explicit `limit` ' +
      'the export holds every matching record; with one, it holds at most that many records (each gives one row per field change).',
  }),
  offset: Offset,
  start_date: Type.Optional(
    DateBound('Inclusive lower bound on `changed_at`: an ISO 8601 date-time with offset, or a date (midnight UTC).'),
  ),
  end_date: Type.Optional(
    DateBound(
      'Upper bound on `changed_at`: a date-time is inclusive; a date covers that whole day (UTC). Must not precede `start_date`.',
    ),
  ),
  sort_by: Type.Union(
    CHANGE_SORT_FIELDS.map((f) => Type.Literal(f)),
    { default: 'changed_at', description: 'Ties are broken by the change id (write order) in the same direction.' },
  ),
  sort_order: SortOrder('desc'),
  search: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 500,
      description:
        'Full-text search over CI name, namespace and changed field paths (web-search syntax: quoted phrases, `or`, `-term`). ' +
        'Every term matches as a prefix, so `web-7f` finds `web-7f9c4`; field paths match whole (`raw_data.spec` finds ' +
        '`raw_data.spec.replicas`) or by segment (`replicas`). Case-insensitive, no stemming.',
    }),
  ),
  filter: Type.Optional(
    Filters(
      'change_type, ci_type, ci_name, changed_at, ci_id, kind, severity, changed_field (matches when any field change ' +
        'of the record has a matching path, e.g. `changed_field:startswith:raw_data.spec`; `ne`/`nin` mean no field ' +
        'change matches)',
    ),
  ),
  ...RelatedTo,
  ...Reading,
  rollup: Type.Boolean({
    default: false,
    description:
      'With `related_to`: the changes of the radius read on their owners, as `GET /ci-changes/{id}?rollup=true` reads ' +
      'one CI (with `fold=true`, as lines), over `start_date`..`end_date` (the week up to now unless given); a record of ' +
      'a CI owned by another in the radius is read on the highest owner. `filter`, `search` and `sort_by` do not apply.',
  }),
});
export type ChangeListQuery = Static<typeof ChangeListQuery>;

export const FieldChange = Type.Object(
  {
    field: Type.String({ description: 'Dotted path, e.g. `raw_data.spec.replicas` or `status`.' }),
    old_value: Type.Unknown({ description: 'Any JSON value; arrays and objects stay real JSON.' }),
    new_value: Type.Unknown({ description: 'Any JSON value; arrays and objects stay real JSON.' }),
  },
  { title: 'FieldChange' },
);

export const ChangeRecord = Type.Object(
  {
    id: Type.String({ description: 'Change record id (a decimal number as a string).' }),
    ci_id: Uuid(),
    ci_name: Type.String({ description: 'The CI name when the change was recorded.' }),
    ci_namespace: Nullable(Type.String()),
    ci_type: Type.String(),
    changed_at: Timestamp(),
    change_type: Type.Union(CHANGE_TYPES.map((t) => Type.Literal(t))),
    kind: Nullable(
      Type.String({
        description:
          'What the change is about: `created`, `archived`, `replaced`, `secret-ref`, `config`, `image`, `version`, ' +
          '`scale`, `restart`, `health`, `status`, `relationship`, `metadata`, `other`, or a kind a change rule sets. ' +
          'Null on a record written before classification that no re-application has reached yet.',
      }),
    ),
    severity: Nullable(Type.Union(SEVERITIES.map((s) => Type.Literal(s)))),
    ignored: Type.Optional(Type.Boolean({ description: 'Present and true on a record a change rule ignores.' })),
    fold: Type.Optional(
      Type.Object(
        {
          records: Type.Integer({
            minimum: 1,
            description: 'The records the entry stands for (this one and its repeats).',
          }),
          last_at: Timestamp(),
        },
        { description: 'On a folded read: the fold this record opens.' },
      ),
    ),
    rollup: Type.Optional(
      Type.Object(
        {
          owner_id: Uuid('The CI whose timeline the record or line is read on.'),
          first_at: Type.Optional(Timestamp()),
          sets: Type.Optional(Type.Integer({ description: 'The change sets (collections) the line folds.' })),
          cis: Type.Optional(
            Type.Array(Type.Object({ ci_type: Type.String(), cis: Type.Integer() }), {
              description: 'The CIs the line’s records are of, by type.',
            }),
          ),
          record_ids: Type.Optional(
            Type.Array(Type.String(), { description: 'The exact records of the line, oldest first (500 at most).' }),
          ),
        },
        { description: 'On a rolled-up read.' },
      ),
    ),
    changes: Type.Array(FieldChange),
  },
  { title: 'ChangeRecord' },
);

export const CiChangePage = Type.Object(
  {
    items: Type.Array(ChangeRecord),
    total: Type.Integer({
      description: 'Change records of the CI, including those without field changes (not listed).',
    }),
    offset: Type.Integer({ description: 'The requested offset, echoed unchanged during a cursor walk.' }),
    limit: Type.Integer(),
    has_more: Type.Boolean({
      description: 'The only end-of-walk signal: a page may hold fewer than `limit` items while true.',
    }),
    next_cursor: Nullable(Type.String({ description: 'Pass as `cursor` for the next page; null at the end.' })),
  },
  { title: 'CiChangePage' },
);

export const ChangeList = Type.Object(
  {
    items: Type.Array(ChangeRecord),
    total: Type.Integer({
      description:
        'Matching change records. Exact when the filters are on change type, CI type and time only (counted from the ' +
        "statistics pre-aggregate), or when the records can be counted within CINV_COUNT_TIMEOUT; the planner's " +
        'estimate otherwise.',
    }),
    total_exact: Type.Boolean({ description: 'False when `total` is an estimate.' }),
    limit: Type.Integer(),
    offset: Type.Integer(),
  },
  { title: 'ChangeList' },
);

/** Columns of the CSV export, in order: one row per field change. */
export const CSV_COLUMNS = [
  'change_id',
  'changed_at',
  'change_type',
  'ci_id',
  'ci_name',
  'ci_namespace',
  'ci_type',
  'kind',
  'severity',
  'field',
  'old_value',
  'new_value',
] as const;

export const FeedQuery = Type.Object({
  after: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      description:
        'Continue after this place: a `next_cursor` of an earlier read, or `now` for the end of the feed as it is (only what ' +
        'commits from then on). Without it the feed starts at its beginning.',
    }),
  ),
  limit: Limit(100, 1000),
  wait: Type.Integer({
    minimum: 0,
    maximum: 60,
    default: 0,
    description: 'Seconds to wait for a record when none follows the cursor yet (long poll); 0 answers at once.',
  }),
  search: Type.Optional(
    Type.String({ minLength: 1, maxLength: 500, description: 'The change search language, as on `GET /changes`.' }),
  ),
  filter: Type.Optional(
    Filters('As on `GET /changes`: change_type, ci_type, ci_name, changed_at, ci_id, kind, severity, changed_field.'),
  ),
});
export type FeedQuery = Static<typeof FeedQuery>;

export const FeedPage = Type.Object(
  {
    items: Type.Array(ChangeRecord),
    next_cursor: Type.String({
      description:
        'Where to continue (`after`), also when the page is empty: the cursor moves past records the key may not see or ' +
        'that the filters leave out. Store it once the items are processed.',
    }),
    caught_up: Type.Boolean({ description: 'True when the cursor reached the end of what has committed so far.' }),
  },
  { title: 'ChangeFeedPage' },
);
