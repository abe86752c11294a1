import { Type, type Static } from '@sinclair/typebox';
import { CI_STATUSES } from '../configuration-items/schema.js';
import { Limit, Nullable, Offset, Timestamp, Uuid } from '../http/schemas.js';

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
    description: 'Also list relationships to `inactive` and `archived` neighbours.',
  }),
  relationship_types: Type.Optional(Type.String({ description: 'Comma-separated relationship types, e.g. `runs_on,manages`.' })),
  direction: Type.Optional(Type.String({ description: '`outgoing` or `incoming`; omitted means both. Any other value is a 422.' })),
  sort_by: Type.Optional(
    Type.String({
      description: `One of ${RELATIONSHIP_SORT_FIELDS.map((f) => `\`${f}\``).join(', ')}, ordering the whole result across both directions. Any other value is a 422.`,
    }),
  ),
  sort_order: Type.Optional(
    Type.Union([Type.Literal('asc'), Type.Literal('desc')], { description: 'Default `asc`; only together with `sort_by`, otherwise a 422.' }),
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
    direction: Type.Union(DIRECTIONS.map((d) => Type.Literal(d)), {
      description: '`outgoing`: this CI points at the related CI; `incoming`: the related CI points at this one.',
    }),
    related_ci_id: Uuid(),
    related_ci_name: Type.String(),
    related_ci_type: Type.String(),
    related_ci_status: Type.Union(CI_STATUSES.map((s) => Type.Literal(s))),
    created_at: Timestamp('When the relationship was first collected.'),
    last_seen: Timestamp('When a collector last reported the relationship.'),
  },
  { title: 'Relationship' },
);

export const RelationshipList = Type.Object(
  {
    items: Type.Array(RelationshipItem),
    total: Type.Integer({ description: 'Relationship rows in the result set, including those whose neighbour no longer exists.' }),
    offset: Type.Integer({ description: 'The requested offset, echoed unchanged during a cursor walk.' }),
    limit: Type.Integer(),
    has_more: Type.Boolean(),
    next_cursor: Nullable(Type.String({ description: 'Pass as `cursor` with the same parameters for the next page; null at the end.' })),
    as_of: Type.Optional(Type.String({ format: 'date-time', description: 'The moment shown, when `as_of` was given.' })),
  },
  { title: 'RelationshipList' },
);
