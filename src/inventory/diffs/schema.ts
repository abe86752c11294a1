import { Type, type Static } from '@sinclair/typebox';
import { CI_STATUSES } from '../configuration-items/schema.js';
import { Filters, Limit, Nullable, Timestamp, Uuid } from '../../platform/http/schemas.js';

const Moment = (description: string) =>
  Type.String({
    minLength: 1,
    maxLength: 200,
    description: `${description} An ISO 8601 timestamp or the name of a baseline.`,
  });

export const Between = {
  from: Moment('The earlier moment.'),
  to: Type.Optional(Moment('The later moment; default now. Not before `from` (422).')),
};

export const CiDiffParams = Type.Object({ ci_id: Uuid('The CI identifier; the CI may have been removed since.') });
export const CiDiffQuery = Type.Object(Between);
export type CiDiffQuery = Static<typeof CiDiffQuery>;

const FieldChange = Type.Object({
  field: Type.String({
    description: 'Dotted path: a top-level field, or a key into `raw_data` or `type_data`. Arrays are compared whole.',
  }),
  old_value: Type.Unknown({ description: 'The value at `from` (null where absent).' }),
  new_value: Type.Unknown({ description: 'The value at `to` (null where absent).' }),
});

const EdgeChange = Type.Object({
  id: Type.String({ description: "The relationship's id." }),
  relationship_type: Type.String(),
  direction: Type.Union([Type.Literal('outgoing'), Type.Literal('incoming')]),
  related_ci_id: Uuid(),
});

export const CiDiff = Type.Object(
  {
    ci_id: Uuid(),
    from: Timestamp("The earlier moment, resolved (a baseline's name becomes its moment)."),
    to: Timestamp('The later moment, resolved.'),
    existed: Type.Object(
      { from: Type.Boolean(), to: Type.Boolean() },
      { description: 'Whether the CI existed (and was visible) at each moment.' },
    ),
    fields: Type.Array(FieldChange, {
      description:
        'The net differences between the two states: a value changed and changed back is none. `updated_at`, `last_seen` ' +
        'and metrics are not compared. Where the CI did not exist at one moment, every field of the other appears.',
    }),
    relationships: Type.Object({
      added: Type.Array(EdgeChange, { description: 'Existing at `to`, not at `from`.' }),
      removed: Type.Array(EdgeChange, { description: 'Existing at `from`, not at `to`.' }),
    }),
    changes: Type.Object(
      {
        total: Type.Integer({
          description: 'Change records of the CI after `from`, up to `to` (those with field changes).',
        }),
        href: Type.String({
          description: 'The global history list of exactly these records, oldest first, walked by its cursor.',
        }),
      },
      { description: 'The change records in between.' },
    ),
  },
  { title: 'ConfigurationItemDiff' },
);

export const InventoryDiffQuery = Type.Object({
  ...Between,
  status: Type.Optional(
    Type.Union(
      [...CI_STATUSES, 'all'].map((s) => Type.Literal(s)),
      {
        description:
          "Default `all`: archiving shows as a change of `status`. Applied to each moment's state, like every filter.",
      },
    ),
  ),
  filter: Type.Optional(
    Filters(
      "As on the list (name, namespace, scope_id, status, ci_type, created_at, updated_at, raw_data.<path>, type_data.<path>), applied to each moment's state; not last_seen (not history).",
    ),
  ),
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Free text, as on the list.' })),
  source_id: Type.Optional(
    Type.String({ pattern: '^[1-9][0-9]{0,18}$', description: 'Only CIs collected by this source.' }),
  ),
  limit: Limit(100, 1000),
  cursor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 2048,
      description: 'Opaque `next_cursor` of the previous page, with the same parameters.',
    }),
  ),
});
export type InventoryDiffQuery = Static<typeof InventoryDiffQuery>;

const Counts = Type.Object({
  appeared: Type.Integer(),
  disappeared: Type.Integer(),
  changed: Type.Integer(),
});

export const InventoryDiff = Type.Object(
  {
    from: Timestamp('The earlier moment, resolved.'),
    to: Timestamp('The later moment, resolved.'),
    counts: Nullable(
      Type.Object(
        { ...Counts.properties, by_type: Type.Array(Type.Object({ ci_type: Type.String(), ...Counts.properties })) },
        {
          description:
            'The whole difference counted, by CI type (the type at `to`, else at `from`). On the first page only; null on the pages a cursor continues.',
        },
      ),
    ),
    items: Type.Array(
      Type.Object({
        ci_id: Uuid(),
        kind: Type.Union([Type.Literal('appeared'), Type.Literal('disappeared'), Type.Literal('changed')]),
        ci_type: Type.String(),
        name: Type.String(),
        namespace: Nullable(Type.String()),
        changed_fields: Type.Array(Type.String(), {
          description: 'For `changed`: the dotted paths that differ (see the CI diff); empty otherwise.',
        }),
      }),
      { description: 'In CI id order.' },
    ),
    has_more: Type.Boolean(),
    next_cursor: Nullable(Type.String()),
  },
  { title: 'InventoryDiff' },
);
