import { Type } from '@sinclair/typebox';

export const VocabularyParams = Type.Object({
  ci_type: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 200,
      description: 'Sample the JSON paths (and relationship types) of CIs of this type; any type when left out.',
    }),
  ),
  prefix: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 500,
      description:
        'Only the paths that begin with this text (`raw_data.spec`, `raw_data.metadata.labels."app.`): the paths listed go four levels below its last whole segment.',
    }),
  ),
});

export const VocabularyResponse = Type.Object({
  ci_types: Type.Array(Type.String(), { description: 'The CI types the caller may see (of any status).' }),
  relationship_types: Type.Array(Type.String(), {
    description:
      "The relationship types the collector types write, and those of the sampled CIs' relationships (for a caller holding `relationships:read`).",
  }),
  fields: Type.Array(Type.String(), {
    description: 'The fields a query may name; `raw_data` and `type_data` take a path.',
  }),
  paths: Type.Array(Type.String(), {
    description:
      'JSON paths present in the most recently created active CIs (200, of `ci_type` if given), as a query writes them, shallowest first (500 at most).',
  }),
});
