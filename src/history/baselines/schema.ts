import { Type, type Static } from '@sinclair/typebox';
import { HumanName, Timestamp, Uuid } from '../../platform/http/schemas.js';

export const MAX_BASELINES_PER_TENANT = 1000;

/** A name cannot be read as a moment: `from`/`to` take either, and a timestamp-like name would be ambiguous. */
export const BaselineName = HumanName({
  spaces: 'trimmed',
  description: 'Unique in the tenant; not starting like a date (YYYY-MM-DD), nor with spaces around it.',
});

export const NewBaseline = Type.Object(
  {
    name: BaselineName,
    at: Type.Optional(
      Timestamp('The moment it names (ISO 8601); default now. Not before the earliest moment the history covers.'),
    ),
  },
  { additionalProperties: false },
);
export type NewBaseline = Static<typeof NewBaseline>;

export const Baseline = Type.Object(
  {
    id: Uuid(),
    name: Type.String(),
    at: Timestamp('The moment it names.'),
    created_at: Timestamp(),
    created_by: Type.String({ description: 'The key or person that named it.' }),
  },
  { title: 'Baseline' },
);

export const BaselineParams = Type.Object({ baseline_id: Uuid("The baseline's identifier.") });
