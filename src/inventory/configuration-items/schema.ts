import { Type, type Static } from '@sinclair/typebox';
import {
  Filters,
  JsonObject,
  Limit,
  MAX_OFFSET,
  Nullable,
  SortOrder,
  Timestamp,
  Uuid,
} from '../../platform/http/schemas.js';
import type { FilterSpec } from '../../platform/query/filters.js';

export const CI_STATUSES = ['active', 'inactive', 'archived'] as const;
export const CI_SORT_FIELDS = [
  'created_at',
  'updated_at',
  'last_seen',
  'name',
  'namespace',
  'ci_type',
  'status',
] as const;

export const CI_FILTERS: FilterSpec = {
  fields: {
    name: { kind: 'text', column: 'ci.name' },
    namespace: { kind: 'text', column: 'ci.namespace' },
    scope_id: { kind: 'text', column: 'ci.scope_id' },
    status: { kind: 'text', column: 'ci.status', values: CI_STATUSES },
    ci_type: { kind: 'text', column: 'ci.ci_type' },
    created_at: { kind: 'timestamp', column: 'ci.created_at' },
    updated_at: { kind: 'timestamp', column: 'ci.updated_at' },
    last_seen: { kind: 'timestamp', column: 'ls.last_seen' },
  },
  json: { raw_data: 'ci.raw_data', type_data: 'ci.type_data' },
};

export const CiParams = Type.Object({ ci_id: Uuid('The CI identifier.') });

export const CiListQuery = Type.Object({
  status: Type.Optional(
    Type.Union(
      [...CI_STATUSES, 'all'].map((s) => Type.Literal(s)),
      {
        description:
          'Default `active`; when a `status` filter is given and this is omitted, no status default applies.',
      },
    ),
  ),
  offset: Type.Integer({
    minimum: 0,
    maximum: MAX_OFFSET,
    default: 0,
    description:
      'CIs to skip. Ignored (but echoed) when `cursor` is given: deep pages are cheaper walked by cursor, which costs one page whatever the depth.',
  }),
  cursor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 2048,
      description:
        'Opaque `next_cursor` of the previous page. Valid only with the same status, filters, `q`, `source_id`, `include_type_data` and sorting; `limit` may change.',
    }),
  ),
  limit: Limit(50, 1000),
  sort_by: Type.Union(
    CI_SORT_FIELDS.map((f) => Type.Literal(f)),
    { default: 'created_at' },
  ),
  sort_order: SortOrder('desc'),
  filter: Type.Optional(
    Filters(
      'name, namespace, scope_id (the instance), status, ci_type, created_at, updated_at, last_seen, raw_data.<path>, type_data.<path>',
    ),
  ),
  q: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description:
        'Free text: CIs whose name, namespace or CI type contains it, in any case (`%` and `_` are plain characters). ' +
        'A tenant with more than 20 000 namespaces has only their first 20 000 (in order) searched.',
    }),
  ),
  source_id: Type.Optional(
    Type.String({ pattern: '^[1-9][0-9]{0,18}$', description: 'Only CIs collected by this source.' }),
  ),
  include_type_data: Type.Boolean({
    default: false,
    description: 'Only with a `ci_type` filter: items take the `{id, type, attributes}` shape. Ignored otherwise.',
  }),
  include_attributes: Type.Optional(
    Type.Array(Type.String({ minLength: 1 }), {
      description: "Dotted raw_data paths (repeatable or comma-separated) copied into each item's `attributes`.",
    }),
  ),
  as_of: Type.Optional(
    Timestamp(
      'List the CIs as they were stored at this moment (ISO 8601): every filter, `q` and sort applies to the values then ' +
        '(`status` to the status then). `last_seen` is not history: it is null on the items and cannot be filtered or ' +
        'sorted by (422). 422 before the earliest moment the history covers. The cursor is bound to the moment.',
    ),
  ),
});
export type CiListQuery = Static<typeof CiListQuery>;

const ciFields = {
  ci_id: Uuid(),
  name: Type.String(),
  namespace: Nullable(Type.String()),
  ci_type: Type.String({ description: '`<family>.<kind>`' }),
  status: Type.Union(CI_STATUSES.map((s) => Type.Literal(s))),
  status_updated_at: Nullable(Timestamp('Time of the last status move (deletion, lifecycle sweep, rediscovery).')),
  last_seen: Timestamp(),
  created_at: Timestamp(),
  updated_at: Timestamp(),
  raw_data: JsonObject('The collected payload, with nested metadata, spec and status.'),
};

export const Ci = Type.Object(ciFields, { title: 'ConfigurationItem' });
/** The detail adds what a person looking at one CI asks next: where it came from, and its type's attributes. */
export const CiDetail = Type.Object(
  {
    ...ciFields,
    type_data: JsonObject(
      'The type-specific attributes (as `include_type_data` gives them on the list), with `metrics` where the collector sends them.',
    ),
    source: Type.Object(
      { id: Type.Integer(), name: Type.String(), collector_type: Type.String() },
      { description: 'The source that collected the CI.' },
    ),
    scope_id: Nullable(
      Type.String({ description: 'The instance of the source (a cluster, a server) the CI belongs to.' }),
    ),
    identity: Nullable(
      Type.Object(
        {
          id: Type.String({ format: 'uuid' }),
          kind: Type.String(),
          role: Type.String({ description: '`self`: the CI is the host; `runs-on`: it runs on the host.' }),
        },
        {
          description:
            'The host identity (GET /api/v1/identities/{id}) this CI is an observation of, as the host or as what runs on it; null when none.',
        },
      ),
    ),
    identities: Type.Array(
      Type.Object({
        id: Type.String({ format: 'uuid' }),
        kind: Type.String(),
        role: Type.String({ description: '`self`: the CI is the thing; `runs-on`: it runs on the host.' }),
      }),
      { description: 'Every identity the CI observes, the host first: a database server is one and runs on a host.' },
    ),
  },
  { title: 'ConfigurationItemDetail' },
);
export const CiDetailQuery = Type.Object({
  as_of: Type.Optional(
    Timestamp(
      'Show the CI as it was stored at this moment (ISO 8601): its fields, status, raw_data and type_data then. ' +
        '404 when it did not exist then; 422 before the earliest moment the history covers.',
    ),
  ),
});
export const CiDetailAsOf = Type.Object(
  {
    ...ciFields,
    last_seen: Nullable(Timestamp('Not history: null in a view of the past.')),
    type_data: JsonObject('The type-specific attributes then (metrics are not history and are left out).'),
    source: Nullable(
      Type.Object(
        { id: Type.Integer(), name: Type.String(), collector_type: Type.String() },
        { description: 'The source that collected the CI (null if it is gone).' },
      ),
    ),
    scope_id: Nullable(Type.String({ description: 'The instance of the source the CI belonged to then.' })),
    as_of: Timestamp('The moment shown.'),
  },
  { title: 'ConfigurationItemAsOf' },
);
export const CiListItem = Type.Object(
  {
    ...ciFields,
    last_seen: Nullable(Timestamp('Null in a list `as_of` a moment: it is not history.')),
    source_id: Type.Integer({ description: 'The source that collected the CI (beyond the spec).' }),
    scope_id: Nullable(Type.String({ description: 'Its instance inside the source (beyond the spec).' })),
    attributes: Type.Optional(JsonObject('Values at the `include_attributes` paths (null where absent).')),
  },
  { title: 'ConfigurationItemListItem' },
);

export const TypeDataItem = Type.Object(
  {
    id: Uuid(),
    type: Type.String(),
    attributes: Type.Object(
      { name: Type.String(), namespace: Nullable(Type.String()) },
      {
        additionalProperties: JsonObject(
          'Named after the kind (`pod` for `k8s.pod`; `namespace_data` for `k8s.namespace`, whose kind would overwrite `namespace`): the type-specific fields, possibly with `metrics`.',
        ),
      },
    ),
  },
  { title: 'TypeDataItem' },
);

const Total = Type.Integer({
  description:
    'CIs that match. Exact for lists filtered only by status, `ci_type`, `namespace` and `scope_id` (kept as counts by the write path); for ' +
    "other filters exact when it can be counted within CINV_COUNT_TIMEOUT, the planner's estimate otherwise.",
});
const NextCursor = Nullable(
  Type.String({
    description: 'Pass as `cursor` with the same parameters for the next page; null at the end (beyond the spec).',
  }),
);
const TotalExact = Type.Boolean({ description: 'False when `total` is an estimate.' });

const AsOfEcho = Type.Optional(Timestamp('The moment shown, with `as_of`.'));

export const CiList = Type.Object({
  items: Type.Array(CiListItem),
  as_of: AsOfEcho,
  total: Total,
  total_exact: TotalExact,
  offset: Type.Integer({ description: 'The requested offset, echoed unchanged during a cursor walk.' }),
  limit: Type.Integer(),
  has_more: Type.Boolean({ description: 'Whether CIs follow this page (beyond the spec).' }),
  next_cursor: NextCursor,
});
export const TypeDataList = Type.Object({
  items: Type.Array(TypeDataItem),
  as_of: AsOfEcho,
  total: Total,
  total_exact: TotalExact,
  has_more: Type.Boolean({ description: 'Whether CIs follow this page.' }),
  next_cursor: NextCursor,
});

export const CiArchived = Type.Object({
  message: Type.String(),
  ci_id: Uuid(),
  status: Type.Literal('archived'),
  status_updated_at: Timestamp(),
});
