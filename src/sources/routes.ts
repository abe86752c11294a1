import { Type } from '@sinclair/typebox';
import { coversScope, coversSource } from '../auth/principal.js';
import { forbidden, notFound } from '../http/errors.js';
import { defineRoute } from '../http/route.js';
import { bigintId, NumericId } from '../http/schemas.js';
import { assertStorable, reconcile } from '../inventory/reconcile.js';
import { Snapshot } from '../inventory/records.js';
import { findSourceById } from './store.js';

const SourceParams = Type.Object({ source_id: NumericId('The source identifier') });

const Counts = Type.Object({
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

const ingest = defineRoute({
  method: 'POST',
  path: '/api/v1/sources/{source_id}/ingest',
  operationId: 'ingestSnapshot',
  summary: 'Push universal-format records into the inventory',
  description:
    'For external agents and the `universal` collector type. `mode: snapshot` (default): the items are ' +
    "everything the source's instance (`scope_id`) has now; objects left out age into `inactive`. " +
    '`mode: delta`: upserts plus `deletions` (external ids), which are archived at once. ' +
    'Unchanged objects only have `last_seen` moved; every change is recorded with its field diffs. ' +
    'A key with data scopes may write only into instances it covers.',
  tags: ['Sources'],
  access: { resource: 'configuration_items', action: 'write' },
  params: SourceParams,
  body: Snapshot,
  responses: { 200: { description: 'What the reconcile did.', schema: Counts } },
  async handler({ app, principal, params, body }) {
    // the route has validated the schema already
    assertStorable(body);
    const sourceId = bigintId(params.source_id);
    const source = sourceId === undefined ? undefined : await findSourceById(app.sql, principal.tenantId, sourceId);
    const scopeId = body.scope_id ?? null;
    // a source outside every scope of the key is reported as absent, not as forbidden
    if (!source || !coversSource(principal, source.id)) throw notFound('Source not found', { source_id: params.source_id });
    if (!coversScope(principal, source.id, scopeId)) {
      throw forbidden('This key may not write into that instance of the source', { scope_id: scopeId });
    }
    return reconcile(
      app.sql,
      {
        tenantId: principal.tenantId,
        sourceId: source.id,
        scopeId,
        mode: body.mode ?? 'snapshot',
        records: body.items,
        deletions: body.deletions,
      },
      { now: app.now(), batchSize: app.config.reconcileBatchSize, statementTimeoutMs: app.config.bulkStatementTimeoutMs },
    );
  },
});

export const sourceRoutes = [ingest];
