import { Type, type Static } from '@sinclair/typebox';
import { ScopeId } from '../../platform/http/schemas.js';

/**
 * Identities and names are index keys, and a B-tree key holds at most 2704 bytes: 512 characters
 * fit even when every one takes four bytes in UTF-8.
 */
export const MAX_KEY_LENGTH = 512;

export const CI_TYPE_PATTERN = '^[a-z0-9][a-z0-9_-]*\\.[a-z0-9][a-z0-9_-]*$';

export const RelationshipRef = Type.Object(
  {
    type: Type.String({
      minLength: 1,
      maxLength: 128,
      pattern: '^[A-Za-z0-9_.:-]+$',
      description: 'e.g. runs_on, manages',
    }),
    target_external_id: Type.String({ minLength: 1, maxLength: MAX_KEY_LENGTH }),
  },
  {
    additionalProperties: false,
    description: 'An outgoing relationship to another CI of the same source, by its external id.',
  },
);

/** The universal format every collector produces: one object as the source sees it. */
export const UniversalRecord = Type.Object(
  {
    external_id: Type.String({
      minLength: 1,
      maxLength: MAX_KEY_LENGTH,
      description: "The object's identity inside its source.",
    }),
    ci_type: Type.String({
      pattern: CI_TYPE_PATTERN,
      maxLength: 128,
      description: '`<family>.<kind>`, e.g. `k8s.pod`.',
    }),
    name: Type.String({ minLength: 1, maxLength: MAX_KEY_LENGTH }),
    namespace: Type.Optional(Type.Union([Type.String({ maxLength: MAX_KEY_LENGTH }), Type.Null()])),
    raw_data: Type.Record(Type.String(), Type.Unknown(), {
      description: 'The collected payload as the source returned it.',
    }),
    type_data: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'Type-specific attributes; may hold `metrics`.' }),
    ),
    relationships: Type.Optional(
      Type.Array(RelationshipRef, { description: "Replaces the object's outgoing relationships when present." }),
    ),
  },
  { additionalProperties: false },
);
export type UniversalRecord = Static<typeof UniversalRecord>;

export const Snapshot = Type.Object(
  {
    mode: Type.Optional(Type.Union([Type.Literal('snapshot'), Type.Literal('delta')], { default: 'snapshot' })),
    scope_id: Type.Optional(Type.Union([ScopeId(256), Type.Null()])),
    items: Type.Array(UniversalRecord),
    deletions: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: MAX_KEY_LENGTH }), {
        description: 'External ids to archive at once (delta mode). An id may not also be in `items` (422).',
      }),
    ),
  },
  { additionalProperties: false },
);
export type Snapshot = Static<typeof Snapshot>;
