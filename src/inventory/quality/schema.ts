import { Type, type Static, type TNumber, type TOptional } from '@sinclair/typebox';
import { HumanName, Limit, Nullable, NumericId, Timestamp, Uuid } from '../../platform/http/schemas.js';
import { MEASURES } from './settings.js';

const MATCH_TEXT = 2000;

export const MeasureName = Type.Union(
  MEASURES.map((m) => Type.Literal(m)),
  { description: 'A measure (docs/quality.md defines each).' },
);

const Filters = {
  ci_type: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Only CIs of this type.' })),
  source_id: Type.Optional(NumericId('Only CIs of this source.')),
  owner: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 500,
      description: "Only CIs whose owner (the settings' `owner_path`) is this.",
    }),
  ),
};

export const QualityQuery = Type.Object(Filters, { additionalProperties: false });
export type QualityQuery = Static<typeof QualityQuery>;

const Figure = Type.Object({
  items: Type.Number({ description: 'How many it judged: active CIs (rule results for `rules`).' }),
  failing: Type.Number(),
  score: Nullable(Type.Number({ description: '0-100; null when it judged nothing.' })),
});

const Measures = Type.Object(
  Object.fromEntries(MEASURES.map((m) => [m, Figure])) as Record<(typeof MEASURES)[number], typeof Figure>,
);

const Group = {
  cis: Type.Number({ description: 'Active CIs.' }),
  score: Nullable(Type.Number({ description: 'The weighted mean of the measures that judged anything (0-100).' })),
  measures: Measures,
};

export const QualityOverview = Type.Object({
  ...Group,
  by_type: Type.Array(Type.Object({ ci_type: Type.String(), ...Group }), { description: 'Worst first, 100 at most.' }),
  by_source: Type.Array(Type.Object({ source_id: Type.String(), name: Nullable(Type.String()), ...Group }), {
    description: 'Worst first, 100 at most.',
  }),
  by_instance: Type.Array(
    Type.Object({
      source_id: Type.String(),
      scope_id: Nullable(Type.String()),
      name: Nullable(Type.String()),
      ...Group,
    }),
    { description: 'Per instance of a source (`scope_id`), worst first, 100 at most.' },
  ),
  by_owner: Type.Array(Type.Object({ owner: Nullable(Type.String()), ...Group }), {
    description: 'Worst first, 100 at most; `null` gathers the CIs without an owner.',
  }),
  rules: Type.Array(
    Type.Object({
      rule_id: Uuid(),
      name: Type.String(),
      applies: Type.Number(),
      failing: Type.Number(),
      pass_rate: Nullable(Type.Number()),
    }),
  ),
  sources: Type.Array(
    Type.Object({
      source_id: Type.String(),
      name: Type.String(),
      scheduled: Type.Boolean(),
      last_list_at: Nullable(Timestamp('The start of its last successful list.')),
      due_by: Nullable(Timestamp('When a scheduled source is late: last list + interval × (1 + margin).')),
      late: Type.Boolean(),
    }),
  ),
  trend: Type.Array(
    Type.Object({
      day: Type.String({ format: 'date' }),
      score: Nullable(Type.Number()),
      measures: Type.Object(
        Object.fromEntries(MEASURES.map((m) => [m, Nullable(Type.Number())])) as Record<
          (typeof MEASURES)[number],
          ReturnType<typeof Nullable<ReturnType<typeof Type.Number>>>
        >,
      ),
    }),
    {
      description:
        'One entry per day (UTC) of the last 90, as the last sweep of the day left it; type and source filters apply, `owner` does not.',
    },
  ),
  pending: Type.Number({ description: 'CIs queued or walks under way: above 0, the figures are catching up.' }),
  computed_at: Timestamp(),
});

export const ItemsParams = Type.Object({ measure: MeasureName });
export const ItemsQuery = Type.Object(
  {
    ...Filters,
    rule_id: Type.Optional(Uuid('`rules` only: the failures of this rule.')),
    cursor: Type.Optional(Type.String({ maxLength: 2000 })),
    limit: Limit(50, 500),
  },
  { additionalProperties: false },
);
export type ItemsQuery = Static<typeof ItemsQuery>;

export const ItemsPage = Type.Object({
  items: Type.Array(
    Type.Object({
      ci_id: Uuid(),
      name: Type.String(),
      ci_type: Type.String(),
      namespace: Nullable(Type.String()),
      source_id: Type.String(),
      scope_id: Nullable(Type.String()),
      owner: Nullable(Type.String()),
      reason: Type.String({ description: 'Why it fails, in words.' }),
      since: Nullable(Timestamp('Staleness: since when; freshness: when last seen.')),
      rule_id: Type.Optional(Uuid()),
    }),
  ),
  next_cursor: Nullable(Type.String()),
  query: Nullable(
    Type.String({
      description:
        'The query-language query that finds them (POST /api/v1/query), or null where the language cannot say it (orphans, duplicates).',
    }),
  ),
});

export const CiParams = Type.Object({ ci_id: Uuid("The CI's identifier.") });
export const CiQuality = Type.Object({
  ci_id: Uuid(),
  checked: Type.Boolean({
    description: 'False for a CI that is not active (only active CIs are judged) or not checked yet: no verdicts then.',
  }),
  owner: Nullable(Type.String()),
  completeness: Nullable(Type.Number({ description: "0-100, weighted by the settings' `required_weight`." })),
  missing: Type.Array(Type.String(), { description: 'Required paths it lacks.' }),
  missing_recommended: Type.Array(Type.String()),
  orphan: Nullable(Type.String()),
  duplicate: Nullable(Type.String()),
  stale_since: Nullable(Timestamp()),
  unfresh: Nullable(Type.String()),
  unseen_since: Nullable(Timestamp()),
  rules: Type.Array(Type.Object({ rule_id: Uuid(), name: Type.String(), passed: Type.Boolean() })),
  checked_at: Nullable(Timestamp('When its verdicts last moved.')),
});

const Paths = Type.Array(Type.String({ minLength: 1, maxLength: 500 }), { maxItems: 50 });
const Match = (description: string) => Type.String({ minLength: 1, maxLength: MATCH_TEXT, description });

const SettingsShape = {
  owner_path: Type.String({ minLength: 1, maxLength: 500, description: "The field whose value is a CI's owner." }),
  weights: Type.Object(
    Object.fromEntries(MEASURES.map((m) => [m, Type.Optional(Type.Number({ minimum: 0, maximum: 100 }))])) as Record<
      (typeof MEASURES)[number],
      TOptional<TNumber>
    >,
    { additionalProperties: false, description: "Each measure's weight in the overall score (0 leaves it out)." },
  ),
  required_weight: Type.Number({ minimum: 0, maximum: 1, description: 'The share of required paths in completeness.' }),
  freshness_margin: Type.Number({ minimum: 0, maximum: 100, description: 'Late after interval × (1 + margin).' }),
  stale_after_minutes: Type.Object(
    {
      default: Type.Optional(Type.Integer({ minimum: 1, maximum: 525_600 })),
      by_type: Type.Optional(
        Type.Record(Type.String({ maxLength: 200 }), Type.Integer({ minimum: 1, maximum: 525_600 })),
      ),
    },
    { additionalProperties: false },
  ),
  completeness: Type.Record(
    Type.String({ maxLength: 200 }),
    Type.Object({ required: Paths, recommended: Paths }, { additionalProperties: false }),
    { description: 'Per CI type: field paths (query-language paths) it must and should hold.' },
  ),
  required_relationships: Type.Record(
    Type.String({ maxLength: 200 }),
    Type.Array(
      Type.Object(
        {
          relationship_type: Type.String({ minLength: 1, maxLength: 100 }),
          direction: Type.Union([Type.Literal('out'), Type.Literal('in')]),
          other_type: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          when: Type.Optional(Match('Which CIs of the type need it (a query-language match).')),
        },
        { additionalProperties: false },
      ),
      { maxItems: 20 },
    ),
  ),
  alert_below: Type.Number({
    minimum: 0,
    maximum: 100,
    description: 'Scores below it count in `cinv_quality_below_threshold`.',
  }),
};

export const SettingsBody = Type.Partial(Type.Object(SettingsShape), { additionalProperties: false, minProperties: 1 });

export const SettingsView = Type.Object({
  settings: Type.Object(SettingsShape),
  customised: Type.Boolean({ description: 'Whether the tenant has settings of its own (else the shipped defaults).' }),
});

export const RuleBody = Type.Object(
  {
    name: HumanName({ spaces: 'not_blank' }),
    description: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
    applies_to: Match('The CIs it judges: a query-language match (`ci_type = k8s.deployment and namespace = shop`).'),
    requires: Match('What each must satisfy: a query-language match.'),
  },
  { additionalProperties: false },
);
export type RuleBody = Static<typeof RuleBody>;
export const PreviewBody = Type.Object(
  { applies_to: RuleBody.properties.applies_to, requires: RuleBody.properties.requires },
  { additionalProperties: false },
);

export const Rule = Type.Object({
  id: Uuid(),
  name: Type.String(),
  description: Nullable(Type.String()),
  applies_to: Type.String(),
  requires: Type.String(),
  created_by: Type.Object({ kind: Type.String(), id: Type.String(), name: Type.String() }),
  created_at: Timestamp(),
  updated_at: Timestamp(),
  checking: Type.Boolean({ description: 'The first check over the stored CIs is under way: the counts are partial.' }),
  applies: Type.Number(),
  passes: Type.Number(),
  pass_rate: Nullable(Type.Number()),
});
export const RuleParams = Type.Object({ rule_id: Uuid("The rule's identifier.") });
export const Preview = Type.Object({
  applies: Type.Number(),
  passes: Type.Number(),
  pass_rate: Nullable(Type.Number()),
  failing: Type.Array(
    Type.Object({ ci_id: Uuid(), name: Type.String(), ci_type: Type.String(), namespace: Nullable(Type.String()) }),
    { description: 'Some CIs that fail it (20 at most).' },
  ),
  took_ms: Type.Number(),
});
