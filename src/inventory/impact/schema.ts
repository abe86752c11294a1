import { Type, type Static } from '@sinclair/typebox';
import { ChangeRecord } from '../../history/changes/schema.js';
import { Uuid } from '../../platform/http/schemas.js';

export const ImpactParams = Type.Object({ ci_id: Uuid('The CI the summary is about.') });

export const ImpactQuery = Type.Object({
  depth: Type.Integer({
    minimum: 1,
    maximum: 6,
    default: 3,
    description: 'How far to walk each way (see the dependency graph).',
  }),
  changes: Type.Integer({
    minimum: 1,
    maximum: 100,
    default: 20,
    description: 'How many of the latest changes upstream to list.',
  }),
  as_of: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'Summarise the CI as it was at this moment: the relationships then, changes up to then.',
    }),
  ),
});
export type ImpactQuery = Static<typeof ImpactQuery>;

const StatusCounts = {
  active: Type.Integer(),
  inactive: Type.Integer(),
  archived: Type.Integer(),
  total: Type.Integer(),
};

const Walk = {
  total: Type.Integer({ description: 'CIs reached, the CI itself not counted.' }),
  truncated: Type.Boolean({ description: 'True when the walk met more than 5 000 CIs and stopped at the nearest.' }),
  hidden: Type.Integer({ description: "Relationships that led outside the caller's data scopes." }),
};

export const Impact = Type.Object(
  {
    ci_id: Uuid(),
    depth: Type.Integer(),
    downstream: Type.Object(
      {
        ...Walk,
        by_depth: Type.Array(
          Type.Object({
            depth: Type.Integer(),
            ...StatusCounts,
            by_type: Type.Array(Type.Object({ ci_type: Type.String(), ...StatusCounts }), {
              description: 'Most CIs first, then by type.',
            }),
          }),
          { description: 'What depends on the CI, one entry per depth, nearest first.' },
        ),
      },
      {
        description:
          'What breaks when this CI breaks: counted by depth, type and status (inactive and archived included).',
      },
    ),
    upstream: Type.Object(
      {
        ...Walk,
        latest_changes: Type.Array(
          Type.Composite([
            ChangeRecord,
            Type.Object({ depth: Type.Integer({ description: 'Of the changed CI: 0 for the CI itself.' }) }),
          ]),
          {
            description: 'The latest changes of the CI and of what it depends on, newest first.',
          },
        ),
      },
      { description: 'What this CI depends on, and what changed there last.' },
    ),
    as_of: Type.Optional(Type.String({ format: 'date-time' })),
  },
  { title: 'Impact' },
);
