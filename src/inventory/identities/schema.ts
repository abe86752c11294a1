import { Type, type Static } from '@sinclair/typebox';
import { Filters, Limit, Nullable, SortOrder, Timestamp, Uuid } from '../../platform/http/schemas.js';
import { IDENTITY_KEYS, KINDS } from './rules.js';

const Kind = Type.Union(
  KINDS.map((k) => Type.Literal(k)),
  {
    description:
      'What kind of real thing: `host` (a machine, physical or virtual) or `database-server` (one PostgreSQL, MariaDB, MySQL or Redis server on its machine and port).',
  },
);
const Cursor = Type.Optional(
  Type.String({ minLength: 1, maxLength: 2048, description: 'Opaque `next_cursor` of the previous page.' }),
);
const SourceId = Type.String({ pattern: '^[1-9][0-9]{0,18}$', description: 'A source id.' });

export const IdentityParams = Type.Object({ identity_id: Uuid('The identity identifier.') });
export const DecisionParams = Type.Object({ decision_id: Uuid('The decision identifier.') });

export const IDENTITY_SORT_FIELDS = ['name', 'updated_at', 'created_at'] as const;

export const IdentityListQuery = Type.Object({
  filter: Type.Optional(Filters('kind, name, created_at, updated_at')),
  sort_by: Type.Union(
    IDENTITY_SORT_FIELDS.map((f) => Type.Literal(f)),
    { default: 'name' },
  ),
  sort_order: SortOrder('asc'),
  limit: Limit(50, 500),
  cursor: Cursor,
});

export const ListedIdentity = Type.Object({
  id: Type.String({ format: 'uuid' }),
  kind: Kind,
  name: Type.String({
    description:
      'A host: its reconciled host name, or the strongest identifier when none is known; a database server: the name its source gives it.',
  }),
  observation_count: Type.Integer({ description: 'The observations linked that the caller may see.' }),
  created_at: Timestamp(),
  updated_at: Timestamp(),
});

export const IdentityList = Type.Object({
  items: Type.Array(ListedIdentity),
  has_more: Type.Boolean(),
  next_cursor: Nullable(Type.String()),
});

const Provenance = {
  source_id: Type.String(),
  ci_id: Type.String({ format: 'uuid' }),
  since: Timestamp('Since when this observation has reported this value.'),
};

export const ReconciledField = Type.Object({
  value: Type.Unknown(),
  ...Provenance,
  reason: Type.Union(
    ['pinned', 'precedence', 'latest', 'stale'].map((r) => Type.Literal(r)),
    {
      description:
        '`pinned`: a person pinned the source; `precedence`: a precedence rule names it; `latest`: no rule names any ' +
        'reporting source, the most recently seen wins; `stale`: only sources past their schedule report it.',
    },
  ),
  competing: Type.Array(Type.Object({ value: Type.Unknown(), ...Provenance, stale: Type.Boolean() })),
});

export const Observation = Type.Object({
  ci_id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  ci_type: Type.String(),
  status: Type.String(),
  source_id: Type.String(),
  scope_id: Nullable(Type.String()),
  role: Type.Union([Type.Literal('self'), Type.Literal('runs-on')], {
    description: '`self`: the CI is the host (a node, a host); `runs-on`: a server the CI describes runs on it.',
  }),
  keys: Type.Record(Type.String(), Type.Array(Type.String())),
  linked_at: Timestamp('Since when it links this identity.'),
  last_seen: Nullable(Timestamp()),
});

const Relationship = Type.Object({
  from_ci_id: Type.String({ format: 'uuid' }),
  to_ci_id: Type.String({ format: 'uuid' }),
  relationship_type: Type.String(),
  other: Type.Object({ ci_id: Type.String(), name: Type.String(), ci_type: Type.String() }),
});

const TimelineEntry = Type.Object({
  id: Type.String(),
  ci_id: Type.String({ format: 'uuid' }),
  ci_name: Type.String(),
  ci_type: Type.String(),
  source_id: Type.String(),
  change_type: Type.String(),
  changed_at: Timestamp(),
  changed_fields: Type.Array(Type.String()),
});

export const IdentityDetail = Type.Object({
  id: Type.String({ format: 'uuid' }),
  kind: Kind,
  name: Type.String(),
  created_at: Timestamp(),
  updated_at: Timestamp(),
  retired_at: Nullable(Timestamp()),
  as_of: Type.Optional(Timestamp()),
  fields: Type.Record(Type.String(), ReconciledField),
  observations: Type.Array(Observation),
  relationships: Type.Array(Relationship),
  changes: Type.Array(TimelineEntry, { description: 'The latest 100 changes of every observation, newest first.' }),
  conflicts: Type.Array(Type.String({ format: 'uuid' }), { description: 'Open conflicts over its observations.' }),
});

export const IdentityDetailQuery = Type.Object({
  as_of: Type.Optional(
    Timestamp('The identity at that moment: the observations it linked then, their values as they were stored then.'),
  ),
});

export const IdentityGraph = Type.Object({
  nodes: Type.Array(
    Type.Object({
      id: Type.String(),
      type: Type.Union([Type.Literal('identity'), Type.Literal('ci')]),
      name: Type.String(),
      ci_type: Nullable(Type.String()),
      observation: Type.Boolean({ description: 'A CI linked to the identity.' }),
    }),
  ),
  edges: Type.Array(Type.Object({ from: Type.String(), to: Type.String(), type: Type.String() })),
});

export const ConflictListQuery = Type.Object({
  status: Type.Union([Type.Literal('open'), Type.Literal('settled'), Type.Literal('gone'), Type.Literal('all')], {
    default: 'open',
  }),
  limit: Limit(50, 500),
  cursor: Cursor,
});

const ConflictMember = Type.Object({
  ci_id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  ci_type: Type.String(),
  source_id: Type.String(),
  identity_id: Nullable(Type.String({ format: 'uuid' })),
});

export const Conflict = Type.Object({
  id: Type.String({ format: 'uuid' }),
  kind: Kind,
  rule: Type.String({ description: 'The identification rule that matched.' }),
  shared_values: Type.Array(Type.String(), { description: 'The values of that rule the groups share.' }),
  explanation: Type.String(),
  groups: Type.Array(Type.Array(ConflictMember), {
    description: 'The groups the rule would have joined, each one identity now.',
  }),
  status: Type.Union(['open', 'settled', 'gone'].map((s) => Type.Literal(s))),
  raised_at: Timestamp(),
  closed_at: Nullable(Timestamp()),
  decision_id: Nullable(Type.String({ format: 'uuid' })),
});

export const ConflictList = Type.Object({
  items: Type.Array(Conflict),
  has_more: Type.Boolean(),
  next_cursor: Nullable(Type.String()),
});

export const NewDecision = Type.Object(
  {
    action: Type.Union([Type.Literal('merge'), Type.Literal('keep_apart'), Type.Literal('pin')], {
      description:
        '`merge`: the observations are one thing, whatever the rules say; `keep_apart`: they are different things; ' +
        "`pin`: the identity's `field` shows `source_id`'s value while that source reports one.",
    }),
    ci_ids: Type.Array(Type.String({ format: 'uuid' }), {
      minItems: 1,
      maxItems: 50,
      uniqueItems: true,
      description:
        'The observations decided about: at least two for merge and keep_apart; one of the identity for pin.',
    }),
    field: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'pin only: the field.' })),
    source_id: Type.Optional(SourceId),
    conflict_id: Type.Optional(Type.String({ format: 'uuid', description: 'The conflict this settles.' })),
    reason: Type.Optional(Type.String({ maxLength: 500 })),
    kind: Type.Optional(
      Type.Union(
        KINDS.map((k) => Type.Literal(k)),
        {
          description:
            'The kind of identity decided about (a database server is also an observation of its host): the conflict’s when `conflict_id` is given, `host` otherwise.',
        },
      ),
    ),
  },
  { additionalProperties: false },
);
export type NewDecision = Static<typeof NewDecision>;

export const Decision = Type.Object({
  id: Type.String({ format: 'uuid' }),
  kind: Kind,
  action: Type.String(),
  ci_ids: Type.Array(Type.String({ format: 'uuid' })),
  field: Nullable(Type.String()),
  source_id: Nullable(Type.String()),
  conflict_id: Nullable(Type.String({ format: 'uuid' })),
  reason: Nullable(Type.String()),
  made_by: Type.Object({ kind: Type.String(), id: Nullable(Type.String()), name: Nullable(Type.String()) }),
  made_at: Timestamp(),
  undone_at: Nullable(Timestamp()),
  undone_by: Nullable(Type.Object({ kind: Type.String(), id: Nullable(Type.String()), name: Nullable(Type.String()) })),
});

export const DecisionListQuery = Type.Object({
  include_undone: Type.Boolean({ default: false }),
  limit: Limit(50, 500),
  cursor: Cursor,
});
export const DecisionList = Type.Object({
  items: Type.Array(Decision),
  has_more: Type.Boolean(),
  next_cursor: Nullable(Type.String()),
});

export const IdentifyBody = Type.Object(
  {
    ci_type: Type.String({ minLength: 1, maxLength: 200 }),
    name: Type.String({ minLength: 1, maxLength: 500, default: 'candidate' }),
    raw_data: Type.Record(Type.String(), Type.Unknown(), { default: {} }),
    type_data: Type.Record(Type.String(), Type.Unknown(), { default: {} }),
    kind: Type.Optional(
      Type.Union(
        KINDS.map((k) => Type.Literal(k)),
        {
          description:
            'Which of its identities to ask about: a database server’s CI is one and observes its host (default: the host).',
        },
      ),
    ),
  },
  { additionalProperties: false },
);
export type IdentifyBody = Static<typeof IdentifyBody>;

export const Identification = Type.Object({
  kind: Nullable(Kind),
  keys: Type.Record(Type.String(), Type.Array(Type.String()), { description: 'The identifying values found in it.' }),
  identity_id: Nullable(
    Type.String({ format: 'uuid', description: 'The identity it would link; null: a new one, or none.' }),
  ),
  matches: Type.Array(
    Type.Object({ ci_id: Type.String({ format: 'uuid' }), rule: Type.String(), values: Type.Array(Type.String()) }),
  ),
  conflicts: Type.Array(Type.Object({ rule: Type.String(), values: Type.Array(Type.String()) })),
  explanation: Type.String(),
});

const RuleSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    keys: Type.Array(Type.Union(IDENTITY_KEYS.map((k) => Type.Literal(k))), {
      minItems: 1,
      maxItems: 4,
      uniqueItems: true,
    }),
    exclusive: Type.Boolean(),
  },
  { additionalProperties: false },
);
const Selectors = Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 50 });
export const KindRulesSchema = Type.Object(
  {
    identification: Type.Array(RuleSchema, { minItems: 1, maxItems: 20 }),
    precedence: Type.Record(Type.String({ maxLength: 100 }), Selectors),
    defaultPrecedence: Selectors,
    staleMarginMinutes: Type.Integer({ minimum: 0, maximum: 525_600 }),
  },
  { additionalProperties: false },
);
export const IdentityRulesBody = Type.Object(
  { host: Type.Optional(KindRulesSchema), 'database-server': Type.Optional(KindRulesSchema) },
  {
    additionalProperties: false,
    minProperties: 1,
    description: 'Each kind named replaces that kind’s rules; a kind left out keeps the shipped ones.',
  },
);
export type IdentityRulesBody = Static<typeof IdentityRulesBody>;
export const IdentityRulesView = Type.Object({
  rules: Type.Object({ host: KindRulesSchema, 'database-server': KindRulesSchema }),
  shipped: Type.Boolean({ description: 'Whether these are the shipped rules (the tenant set none).' }),
  updated_at: Nullable(Timestamp()),
});
