import { Type, type Static } from '@sinclair/typebox';
import { CI_STATUSES } from '../configuration-items/schema.js';
import { Limit, Nullable, Offset, Timestamp, Uuid } from '../../platform/http/schemas.js';

export const DIRECTIONS = ['outgoing', 'incoming'] as const;
export type Direction = (typeof DIRECTIONS)[number];

export const RELATIONSHIP_SORT_FIELDS = ['relationship_type', 'related_ci_name', 'related_ci_type'] as const;
export type RelationshipSortField = (typeof RELATIONSHIP_SORT_FIELDS)[number];

export const RelationshipParams = Type.Object({ ci_id: Uuid('The CI whose relationships are listed.') });

// `direction` and `sort_by` are plain strings on purpose: the spec makes an unknown value a route
// 422 (`HTTP_422`), which the handler raises, not a declared-parameter VALIDATION_ERROR.
export const RelationshipListQuery = Type.Object({
  limit: Limit(100, 5000),
  offset: Offset,
  cursor: Type.Optional(Type.String({ minLength: 1, description: 'Opaque keyset cursor from a prior `next_cursor`.' })),
  include_inactive: Type.Boolean({
    default: false,
    description:
      'Also list relationships to `inactive` and `archived` neighbours, and those a CI had when it left the active inventory ' +
      '(marked by `ended_at`).',
  }),
  relationship_types: Type.Optional(
    Type.String({ description: 'Comma-separated relationship types, e.g. `runs_on,manages`.' }),
  ),
  direction: Type.Optional(
    Type.String({ description: '`outgoing` or `incoming`; omitted means both. Any other value is a 422.' }),
  ),
  sort_by: Type.Optional(
    Type.String({
      description: `One of ${RELATIONSHIP_SORT_FIELDS.map((f) => `\`${f}\``).join(', ')}, ordering the whole result across both directions. Any other value is a 422.`,
    }),
  ),
  sort_order: Type.Optional(
    Type.Union([Type.Literal('asc'), Type.Literal('desc')], {
      description: 'Default `asc`; only together with `sort_by`, otherwise a 422.',
    }),
  ),
  as_of: Type.Optional(
    Type.String({
      format: 'date-time',
      description:
        'The relationships that existed at this moment (ISO 8601), each neighbour with its name, type and status then. ' +
        '404 when the CI did not exist then; 422 before the earliest moment the history covers.',
    }),
  ),
});
export type RelationshipListQuery = Static<typeof RelationshipListQuery>;

export const RelationshipItem = Type.Object(
  {
    id: Type.String({ description: 'The relationship identifier.' }),
    relationship_type: Type.String({ description: 'e.g. `runs_on`, `manages`.' }),
    direction: Type.Union(
      DIRECTIONS.map((d) => Type.Literal(d)),
      {
        description: '`outgoing`: this CI points at the related CI; `incoming`: the related CI points at this one.',
      },
    ),
    related_ci_id: Uuid(),
    related_ci_name: Type.String(),
    related_ci_type: Type.String(),
    related_ci_status: Type.Union(CI_STATUSES.map((s) => Type.Literal(s))),
    created_at: Timestamp('When the relationship was first collected.'),
    last_seen: Timestamp('When a collector last reported the relationship.'),
    ended_at: Nullable(
      Timestamp(
        'Null for a relationship that exists. With `include_inactive=true`, the list also holds the relationships a CI had ' +
          'when it left the active inventory (a pod deleted from its replica set), until it is removed for good: ' +
          '`ended_at` says when such a one ended.',
      ),
    ),
  },
  { title: 'Relationship' },
);

export const RelationshipList = Type.Object(
  {
    items: Type.Array(RelationshipItem),
    total: Type.Integer({
      description: 'Relationship rows in the result set, including those whose neighbour no longer exists.',
    }),
    offset: Type.Integer({ description: 'The requested offset, echoed unchanged during a cursor walk.' }),
    limit: Type.Integer(),
    has_more: Type.Boolean(),
    next_cursor: Nullable(
      Type.String({ description: 'Pass as `cursor` with the same parameters for the next page; null at the end.' }),
    ),
    as_of: Type.Optional(
      Type.String({ format: 'date-time', description: 'The moment shown, when `as_of` was given.' }),
    ),
  },
  { title: 'RelationshipList' },
);

/**
 * Which end of a relationship depends on the other, for every type the built-in collectors write:
 * `from` when the CI the relationship starts at depends on the one it points at (a pod runs on its
 * node), `to` the other way round (a deployment manages its replica sets, which depend on it). Types
 * not named here are read as `from`, the way most relationships are written.
 */
export const DEPENDENT_END: Readonly<Record<string, 'from' | 'to'>> = {
  runs_on: 'from',
  mounts: 'from',
  bound_to: 'from',
  routes_to: 'from',
  exposes: 'from',
  member_of: 'from',
  scraped_by: 'from',
  describes: 'from',
  hosted_on: 'from',
  owned_by: 'from',
  installed_in: 'from',
  manages: 'to',
};

/** The types whose `to` end depends on their `from` end. */
export const DEPENDENCY_REVERSED: readonly string[] = Object.keys(DEPENDENT_END).filter(
  (type) => DEPENDENT_END[type] === 'to',
);

export const GRAPH_DIRECTIONS = ['downstream', 'upstream', 'both'] as const;
export type GraphDirection = (typeof GRAPH_DIRECTIONS)[number];

const dependencyTable = Object.entries(DEPENDENT_END)
  .map(([type, end]) => `\`${type}\` (${end === 'from' ? 'from depends on to' : 'to depends on from'})`)
  .join(', ');

export const GraphQuery = Type.Object({
  depth: Type.Integer({
    minimum: 1,
    maximum: 6,
    default: 2,
    description: 'How many relationships away from the CI to walk.',
  }),
  direction: Type.Union(
    GRAPH_DIRECTIONS.map((d) => Type.Literal(d)),
    {
      default: 'both',
      description:
        '`downstream`: what depends on this CI (what breaks when it breaks); `upstream`: what this CI depends on; `both`: ' +
        `each walked apart (a path keeps its direction) and merged. Which end depends on which, by type: ${dependencyTable}; any ` +
        'other type reads as from depends on to.',
    },
  ),
  relationship_types: Type.Optional(
    Type.String({ maxLength: 2000, description: 'Comma-separated relationship types to walk along; default all.' }),
  ),
  ci_types: Type.Optional(
    Type.String({ maxLength: 2000, description: 'Comma-separated CI types to return (the CI itself always is).' }),
  ),
  through: Type.Union([Type.Literal('matching'), Type.Literal('all')], {
    default: 'matching',
    description:
      'With `ci_types`: `matching` walks only through CIs of those types; `all` walks through every CI and returns those of the ' +
      'types (edges are those between returned CIs).',
  }),
  include_inactive: Type.Boolean({
    default: false,
    description:
      'Also walk through and return `inactive` and `archived` CIs, along the relationships they had when they left the active ' +
      'inventory (edges with `ended_at`), so the radius of a deployment holds the pods it owned before a rollout.',
  }),
  max_nodes: Type.Integer({
    minimum: 1,
    maximum: 5000,
    default: 500,
    description:
      'At most this many CIs (the CI itself included), nearest first; `truncated` says when the walk was cut.',
  }),
  as_of: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'Walk the relationships that existed at this moment, each CI as it was then.',
    }),
  ),
});
export type GraphQuery = Static<typeof GraphQuery>;

export const GraphNode = Type.Object({
  ci_id: Uuid(),
  name: Type.String(),
  namespace: Nullable(Type.String()),
  ci_type: Type.String(),
  status: Type.Union(CI_STATUSES.map((s) => Type.Literal(s))),
  depth: Type.Integer({
    description: 'Relationships between this CI and the centre along the shortest walk (0 for the centre).',
  }),
  paths_count: Type.Number({ description: 'Shortest walks from the centre that reach this CI (1 for the centre).' }),
});

export const Graph = Type.Object(
  {
    nodes: Type.Array(GraphNode, { description: 'By depth, then type, name and id.' }),
    edges: Type.Array(
      Type.Object(
        {
          from: Uuid(),
          to: Uuid(),
          relationship_type: Type.String(),
          ended_at: Type.Optional(
            Type.String({
              format: 'date-time',
              description:
                'Only with `include_inactive=true`, on a relationship a CI had when it left the active inventory (a pod deleted ' +
                'from its replica set): when it ended. Such relationships are walked until the CI is removed for good.',
            }),
          ),
        },
        { description: 'As stored: `from` points at `to`.' },
      ),
      { description: 'The relationships walked between returned CIs.' },
    ),
    truncated: Type.Boolean({
      description: 'True when `max_nodes` cut the walk: what is returned is the nearest part.',
    }),
    hidden: Type.Integer({
      description:
        "Relationships met on the walk whose other end lies outside the caller's data scopes (never returned nor walked through).",
    }),
    as_of: Type.Optional(
      Type.String({ format: 'date-time', description: 'The moment shown, when `as_of` was given.' }),
    ),
  },
  { title: 'DependencyGraph' },
);
