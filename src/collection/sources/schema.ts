import { Type } from '@sinclair/typebox';
import {
  HumanName,
  JsonObject,
  Limit,
  Nullable,
  NumericId,
  Offset,
  ScopeId,
  Timestamp,
} from '../../platform/http/schemas.js';

export const SourceParams = Type.Object({ source_id: NumericId('The source identifier') });

export const Counts = Type.Object({
  received: Type.Integer(),
  created: Type.Integer(),
  updated: Type.Integer(),
  unchanged: Type.Integer(),
  reactivated: Type.Integer(),
  archived: Type.Integer(),
  changes: Type.Integer({ description: 'Change records written.' }),
  relationships: Type.Object({
    written: Type.Integer(),
    removed: Type.Integer(),
    unresolved: Type.Integer({ description: 'Targets whose external id is not (yet) known in this source.' }),
  }),
});

export const NDJSON = 'application/x-ndjson';

export const IngestQuery = Type.Object({
  mode: Type.Optional(
    Type.Union([Type.Literal('snapshot'), Type.Literal('delta')], {
      description: 'NDJSON pushes only (JSON bodies carry it).',
    }),
  ),
  scope_id: Type.Optional(ScopeId(256, 'NDJSON pushes only (JSON bodies carry it).')),
});

const ScheduleConfig = Type.Object(
  {
    enabled: Type.Optional(
      Type.Boolean({ description: 'Whether the worker collects the source on its own (default false).' }),
    ),
    interval_minutes: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 525_600, description: 'Minutes between collections (default 60).' }),
    ),
  },
  { additionalProperties: false },
);

export const SourceView = Type.Object({
  id: Type.Integer(),
  collector_id: Type.Integer(),
  name: Type.String(),
  endpoint: Nullable(Type.String()),
  status: Type.Union([Type.Literal('enabled'), Type.Literal('disabled')]),
  config: JsonObject(
    "The source's settings: the common keys (verify_ssl, timeout, collection_mode, enabled_collectors) and its type's.",
  ),
  schedule_config: Type.Object({ enabled: Type.Boolean(), interval_minutes: Type.Integer() }),
  health_status: Nullable(JsonObject('`status`, `last_check` and `details` (or `components`).')),
  last_collection: Nullable(Timestamp()),
  created_at: Timestamp(),
  updated_at: Timestamp(),
});

export const SourceDetail = Type.Composite([
  SourceView,
  Type.Object({
    collector: Type.Object({ id: Type.Integer(), name: Type.String(), collector_type: Type.String() }),
    last_error: Nullable(Type.String()),
    credentials: Nullable(
      Type.Object(
        { type: Type.String(), updated_at: Timestamp() },
        { description: 'Which kind of credentials are set and when; never their content.' },
      ),
    ),
  }),
]);

export const SourceList = Type.Object({
  items: Type.Array(SourceView),
  total: Type.Integer(),
  offset: Type.Integer(),
  limit: Type.Integer(),
});

const NAME = HumanName({ spaces: 'trimmed', description: "Unique among the tenant's sources." });
const ENDPOINT = Nullable(
  Type.String({
    minLength: 1,
    maxLength: 2048,
    description: "Where the collector connects: an http(s) URL (or the type's own scheme).",
  }),
);

const SourceFields = {
  name: NAME,
  endpoint: Type.Optional(ENDPOINT),
  status: Type.Optional(Type.Union([Type.Literal('enabled'), Type.Literal('disabled')])),
  config: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  schedule_config: Type.Optional(ScheduleConfig),
};

/** A source added to a collector the path names. */
export const NewCollectorSource = Type.Object(SourceFields, { additionalProperties: false });
export type NewCollectorSource = typeof NewCollectorSource.static;

/** A source with the type and name of the collector it is provisioned with. */
export const NewSource = Type.Object(
  {
    ...SourceFields,
    collector_type: Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'The type of the collector; it is provisioned with its first source.',
    }),
    collector_name: Type.Optional(
      HumanName({ description: 'Default: the type. Collectors may share a name when their types differ.' }),
    ),
  },
  { additionalProperties: false },
);
export type NewSource = typeof NewSource.static;

export const SourceUpdate = Type.Object(
  {
    name: Type.Optional(NAME),
    endpoint: Type.Optional(ENDPOINT),
    status: Type.Optional(Type.Union([Type.Literal('enabled'), Type.Literal('disabled')])),
    config: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'Merged key by key; a null value removes the key.' }),
    ),
    schedule_config: Type.Optional(ScheduleConfig),
  },
  { additionalProperties: false },
);
export type SourceUpdate = typeof SourceUpdate.static;

export const SourceQuery = Type.Object({
  collector_id: Type.Optional(
    Type.String({ pattern: '^[0-9]{1,19}$', description: 'Only sources of this collector (an integer).' }),
  ),
  status: Type.Optional(Type.Union([Type.Literal('enabled'), Type.Literal('disabled')])),
  enabled: Type.Optional(
    Type.Boolean({ description: 'Shorthand: true is `status=enabled`, false `status=disabled`.' }),
  ),
  limit: Limit(50, 500),
  offset: Offset,
});
export type SourceQuery = typeof SourceQuery.static;

export const HealthBody = Type.Object(
  {
    status: Type.String({ minLength: 1, maxLength: 50 }),
    message: Type.String({ maxLength: 2000 }),
    timestamp: Type.Number({ minimum: 0, maximum: 253_402_300_799, description: 'Epoch seconds (fractions allowed).' }),
    duration: Type.Optional(Type.Number({ minimum: 0 })),
    consecutive_errors: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
);
export type HealthBody = typeof HealthBody.static;

export const CredentialsBody = Type.Union(
  [
    Type.Object(
      { type: Type.Literal('token'), token: Type.String({ minLength: 1, maxLength: 16_384 }) },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        type: Type.Literal('basic'),
        username: Type.String({ minLength: 1, maxLength: 1024 }),
        password: Type.String({ maxLength: 16_384 }),
      },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        type: Type.Literal('tls'),
        client_certificate: Type.String({ minLength: 1, maxLength: 65_536, description: 'PEM.' }),
        client_key: Type.String({ minLength: 1, maxLength: 65_536, description: 'PEM.' }),
        ca_certificate: Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 65_536,
            description: "PEM; the endpoint's CA when it is not a public one.",
          }),
        ),
      },
      { additionalProperties: false },
    ),
  ],
  { description: 'A bearer token, a username and password, or a client certificate and key.' },
);
