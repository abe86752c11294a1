import { Type } from '@sinclair/typebox';
import { Limit, Nullable, NumericId, Offset, Timestamp } from '../../platform/http/schemas.js';

export const Capabilities = Type.Object({
  supports_universal_format: Type.Boolean(),
  supports_multi_source: Type.Boolean(),
});

export const CollectorView = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  collector_type: Type.String(),
  status: Type.String(),
  capabilities: Capabilities,
  sources_total: Type.Integer(),
  last_collection: Nullable(Timestamp('The latest collection of any of its sources.')),
});

export const CollectorParams = Type.Object({ collector_id: NumericId('The collector identifier') });

export const CollectorQuery = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Exact name.' })),
  collector_type: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  type: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Alias of `collector_type`.' })),
  status: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
  limit: Limit(50, 500),
  offset: Offset,
});
export type CollectorQuery = typeof CollectorQuery.static;

export const CollectorPage = Type.Object({
  items: Type.Array(CollectorView),
  total: Type.Integer(),
  offset: Type.Integer(),
  limit: Type.Integer(),
});

const HealthStatus = Type.Union([Type.Literal('healthy'), Type.Literal('degraded')]);

const Subsystem = Type.Object({
  status: Type.String(),
  last_collection: Type.Optional(Timestamp()),
  last_error: Type.Optional(Type.String()),
});

export const CollectorHealth = Type.Object({
  status: HealthStatus,
  message: Type.String(),
  timestamp: Timestamp(),
  capabilities: Capabilities,
  subsystems: Type.Record(Type.String(), Subsystem, { description: 'One entry per source, keyed by its name.' }),
});

export const CollectorHealthEntry = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  status: HealthStatus,
  sources_total: Type.Integer(),
  sources_healthy: Type.Integer({
    description: 'Enabled sources nothing has shown unhealthy, those awaiting their first data included.',
  }),
  sources_awaiting_data: Type.Integer({
    description:
      'Of the healthy, the enabled sources not yet collected, pushed to or reporting (beyond the spec): counted healthy, not yet shown to be.',
  }),
  error: Type.Optional(Type.String()),
});
export type CollectorHealthEntry = typeof CollectorHealthEntry.static;

export const AllCollectorsHealth = Type.Object({
  timestamp: Timestamp(),
  collectors: Type.Array(CollectorHealthEntry),
});

export const RunView = Type.Object({
  id: Type.String({ format: 'uuid' }),
  collector_id: Type.Integer(),
  source_id: Type.Integer(),
  source_name: Type.String(),
  status: Type.Union(
    ['queued', 'running', 'succeeded', 'partial', 'failed', 'cancelled'].map((s) => Type.Literal(s)),
    {
      description:
        "`partial`: some components (a kind of object, a database) failed and the rest was collected; see the source's `health_status.components`.",
    },
  ),
  trigger: Type.Union([Type.Literal('schedule'), Type.Literal('manual')]),
  queued_at: Timestamp(),
  started_at: Nullable(Timestamp()),
  finished_at: Nullable(Timestamp()),
  attempts: Type.Integer({
    description: 'Claims of the run; more than one when a worker died and another took it over.',
  }),
  counts: Nullable(
    Type.Record(Type.String(), Type.Unknown(), { description: 'What the reconcile did with the collected batches.' }),
  ),
  error: Nullable(Type.String()),
  watching_since: Nullable(
    Timestamp('A hybrid run that finished its list and is watching for changes: since when (null otherwise).'),
  ),
});

export const RunParams = Type.Object({ run_id: Type.String({ format: 'uuid', description: 'The run identifier' }) });

export const TriggerQuery = Type.Object({
  source_id: Type.Optional(Type.String({ pattern: '^[0-9]{1,19}$', description: 'Only this source (an integer).' })),
});

export const Triggered = Type.Object({
  run_id: Nullable(Type.String({ format: 'uuid' })),
  status: Type.Literal('queued'),
  sources: Type.Array(
    Type.Object({ source_id: Type.Integer(), name: Type.String(), run_id: Type.String({ format: 'uuid' }) }),
  ),
});
export type Triggered = typeof Triggered.static;
