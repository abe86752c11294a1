import { Type, type TSchema } from '@sinclair/typebox';

export const Uuid = (description?: string) => Type.String({ format: 'uuid', description });
export const Timestamp = (description?: string) => Type.String({ format: 'date-time', description });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
export const JsonObject = (description?: string) => Type.Record(Type.String(), Type.Unknown(), { description });

export const ErrorEnvelope = Type.Object(
  {
    error: Type.Object({
      id: Type.String({ description: 'Unique per occurrence; also in the server log line.' }),
      code: Type.String({ description: 'HTTP_<status>, VALIDATION_ERROR, INVALID_FILTER or INTERNAL_SERVER_ERROR.' }),
      message: Type.String(),
      details: Type.Record(Type.String(), Type.Unknown(), {
        description: 'VALIDATION_ERROR: `errors` [{field, location, message}]; INVALID_FILTER: `filter`, `reason`.',
      }),
      path: Type.String(),
      method: Type.String(),
    }),
  },
  { $id: 'ErrorEnvelope', title: 'ErrorEnvelope' },
);

export const Offset = Type.Integer({ minimum: 0, default: 0, description: 'Rows to skip.' });
export const Limit = (fallback: number, maximum: number) =>
  Type.Integer({ minimum: 1, maximum, default: fallback, description: `Page size, at most ${maximum}.` });
export const SortOrder = (fallback: 'asc' | 'desc') =>
  Type.Union([Type.Literal('asc'), Type.Literal('desc')], { default: fallback });
export const Filters = (fields: string) =>
  Type.Array(Type.String(), {
    description:
      `Repeatable \`field:operator:value\` (split on the first two colons). Fields: ${fields}. ` +
      'Operators: eq, ne, gt, gte, lt, lte, like, ilike, startswith, in, nin (comma list), null, notnull (no value).',
  });
