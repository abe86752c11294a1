import { Type } from '@sinclair/typebox';
import { JsonObject, Nullable, Timestamp, Uuid } from '../../platform/http/schemas.js';

export const QUERY_LANGUAGE =
  'One text query over the inventory, its relationships and its history. A **match** is predicates on CI fields ' +
  '(`ci_id`, `name`, `namespace`, `ci_type`, `status`, `source_id`, `scope_id`, `external_id`, `created_at`, ' +
  '`updated_at`, `status_updated_at`, `last_seen`) and on `raw_data.<path>` / `type_data.<path>`: `=`, `!=`, `<`, ' +
  '`<=`, `>`, `>=`, `in (a, b)`, `not in (…)`, `exists`, `not exists`, `is null`, `is not null`, `contains` (case-' +
  'sensitive), `icontains`, `starts with`, `istarts with`, `matches "regex"` (or `~`), joined by `and`, `or`, `not` and ' +
  'parentheses; `*` matches every CI. Values are bare words or `"quoted strings"`; on JSON paths numbers compare as ' +
  'numbers, and an unquoted `true`/`false`/`null` also matches the JSON value. Times are ISO 8601 (UTC unless an ' +
  'offset is given) or relative: `now`, `now-24h` (s, m, h, d, w). **History predicates:** `changed [FIELD] [since T] ' +
  '[until T] [type UPDATED|(CREATED, DELETED)]` (FIELD is a field or path; a change under it or of a value holding it ' +
  'counts), `created since T`, `archived since T`. **Hops** follow relationships from the set matched so far: ' +
  '`-[type]->` from their `from` end to their `to` end, `<-[type]-` the other way, `<-[type]->` both; `[a, b]` several ' +
  'types, `[*]` any, `[type 2]` or `[type 1..3]` a depth; the match after a hop filters what it reached. **Pipes** ' +
  'shape the answer: `| sort FIELD [desc], …`, `| limit N`, `| fields FIELD, …`, `| count`, `| count by FIELD, …`, ' +
  "`| min|max|sum|avg(PATH) by FIELD, …`, `| return first` (the path's starts instead of its ends), `| with changes`. " +
  'A match that names no `status` (nor `archived`) reads the active inventory. Keywords are case-insensitive; values ' +
  'and paths are not. See docs/query-language.md for the whole grammar and examples.';

const QueryText = Type.String({
  minLength: 1,
  maxLength: 10_000,
  description: 'The query text.',
  examples: [
    'ci_type = k8s.pod and namespace in (shop, payments) and raw_data.spec.replicas >= 3',
    'name = checkout and ci_type = k8s.deployment -[manages]-> ci_type = k8s.replicaset -[manages]-> ci_type = k8s.pod',
    'namespace = shop and changed raw_data.spec.containers since now-24h | with changes',
    'ci_type = k8s.pod | count by namespace',
  ],
});

const Moment = (what: string) =>
  Type.String({
    minLength: 1,
    maxLength: 200,
    description: `${what}: an ISO 8601 moment with offset (2026-11-27T08:00:00Z) or the name of a baseline.`,
  });

const common = {
  as_of: Type.Optional(Moment('Evaluate the whole query against the inventory as it was then (history ends there)')),
  compare_to: Type.Optional(
    Moment('Answer what matches now (or at `as_of`) and did not match then; swap the two for what stopped matching'),
  ),
  cursor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 4096,
      description: 'The `next_cursor` of the previous page of the same query.',
    }),
  ),
};

const SavedViewId = Uuid(
  "A saved view of the Query view: run the query it holds (under the caller's rights) instead of `query`.",
);

export const QueryRequest = Type.Object(
  {
    query: Type.Optional(QueryText),
    saved_view_id: Type.Optional(SavedViewId),
    params: Type.Optional(
      Type.Record(
        Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }),
        Type.Union([Type.String({ maxLength: 1000 }), Type.Number(), Type.Boolean()]),
        {
          maxProperties: 50,
          description:
            'Values of the query\'s parameters: `{"namespace": "shop"}` for `namespace = $namespace`. A number compares as a number.',
        },
      ),
    ),
    ...common,
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1000,
        description: "Page size; overrides the query's `| limit` (default 100).",
      }),
    ),
    explain: Type.Optional(Type.Boolean({ description: 'Return the plan summarised, without running the query.' })),
    allow_scan: Type.Optional(
      Type.Boolean({
        description: 'Run the query even when it reads a large table whole (needs the `queries:read` permission).',
      }),
    ),
  },
  { additionalProperties: false },
);

export const QueryParams = Type.Object({
  q: Type.Optional(QueryText),
  saved_view_id: Type.Optional(SavedViewId),
  param: Type.Optional(
    Type.Array(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*=', maxLength: 1100 }), {
      maxItems: 50,
      description: "A parameter's value, `name=value` (repeatable); a value that is a number compares as a number.",
    }),
  ),
  ...common,
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, description: 'Page size (default 100).' })),
  explain: Type.Optional(Type.Boolean({ description: 'Return the plan summarised, without running the query.' })),
  allow_scan: Type.Optional(Type.Boolean({ description: 'As in the POST form.' })),
});

const ChangeBeside = Type.Object({
  id: Type.String(),
  change_type: Type.String(),
  changed_at: Timestamp(),
  changes: Type.Array(JsonObject()),
});

const Row = Type.Object({
  ci_id: Uuid('The CI.'),
  fields: Type.Record(Type.String(), Type.Unknown(), {
    description: 'The chosen columns by the name the query wrote them with (`raw_data.spec.nodeName`).',
  }),
  changes: Type.Optional(
    Type.Array(ChangeBeside, { description: "With `| with changes`: the CI's records (20 at most)." }),
  ),
});

const Step = Type.Object({
  access: Type.Union([Type.Literal('index'), Type.Literal('scan'), Type.Literal('other')]),
  node: Type.String(),
  table: Type.String(),
  index: Nullable(Type.String()),
  condition: Nullable(Type.String()),
  estimated_rows: Type.Integer(),
});

const Plan = Type.Object({
  rating: Type.Union([Type.Literal('light'), Type.Literal('moderate'), Type.Literal('heavy')]),
  total_cost: Type.Integer(),
  estimated_rows: Type.Integer(),
  steps: Type.Array(Step),
  scans: Type.Array(Type.Object({ table: Type.String(), rows: Type.Number() })),
});

const AsOf = Nullable(Type.String({ description: 'The moment the query read, when not now.' }));

export const QueryResponse = Type.Union(
  [
    Type.Object({
      kind: Type.Literal('rows'),
      columns: Type.Array(Type.String()),
      items: Type.Array(Row),
      next_cursor: Nullable(Type.String()),
      hidden: Type.Integer({
        description: "CIs hops reached outside the caller's data scopes (not shown, not walked).",
      }),
      as_of: AsOf,
      took_ms: Type.Integer(),
    }),
    Type.Object({
      kind: Type.Literal('aggregate'),
      fn: Type.String(),
      field: Nullable(Type.String()),
      by: Type.Array(Type.String()),
      groups: Type.Array(
        Type.Object({
          key: Type.Record(Type.String(), Nullable(Type.String())),
          count: Type.Integer(),
          value: Nullable(Type.Number()),
        }),
      ),
      truncated: Type.Boolean({ description: 'More than 1 000 groups: the largest are shown.' }),
      hidden: Type.Integer(),
      as_of: AsOf,
      took_ms: Type.Integer(),
    }),
    Type.Object({ kind: Type.Literal('explain'), plan: Plan, as_of: AsOf }),
  ],
  { description: 'A page of CIs (`rows`), groups (`aggregate`) or, with `explain`, the plan.' },
);
