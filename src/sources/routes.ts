import { Type, type Static } from '@sinclair/typebox';
import { coversScope, coversSource, type Principal } from '../auth/principal.js';
import type { CredentialDocument } from '../collector-types/plugin.js';
import { collectorType, knownCollectorTypes } from '../collector-types/registry.js';
import type { AppContext } from '../context.js';
import { conflict, forbidden, notFound } from '../http/errors.js';
import { defineRoute, type AnyRoute } from '../http/route.js';
import { bigintId, ErrorEnvelope, JsonObject, Limit, Nullable, NumericId, Offset, Timestamp } from '../http/schemas.js';
import { addReconcileResult, assertStorable, emptyReconcileResult, reconcile } from '../inventory/reconcile.js';
import { Snapshot } from '../inventory/records.js';
import { auditChange } from '../audit/log.js';
import { cancelRunsOf } from '../collectors/runs.js';
import { collectorOr404 } from '../collectors/service.js';
import { AllowedHosts } from '../net/endpoint.js';
import { decodedBody, ndjsonBatches } from './ndjson.js';
import {
  CredentialsUnavailable,
  destroyCredentials,
  loadCredentials,
  MasterKeys,
  storeCredentials,
} from './credentials.js';
import { assertSourceSettings, collectorTypesDoc, requireCollectorType } from './service.js';
import {
  deleteSource,
  findSourceById,
  getSource,
  insertSource,
  listSources,
  provisionCollector,
  setSourceHealth,
  updateSource,
  type SourceRow,
} from './store.js';

const conflictResponse = (description: string) => ({ 409: { description: `${description} (\`HTTP_409\`).`, schema: ErrorEnvelope } });

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

const NDJSON = 'application/x-ndjson';

const IngestQuery = Type.Object({
  mode: Type.Optional(Type.Union([Type.Literal('snapshot'), Type.Literal('delta')], { description: 'NDJSON pushes only (JSON bodies carry it).' })),
  scope_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'NDJSON pushes only (JSON bodies carry it).' })),
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
    'A key with data scopes may write only into instances it covers. A JSON body is validated whole before anything is ' +
    'written. **Large pushes**: `Content-Type: application/x-ndjson` with one universal record per line (in delta mode ' +
    'also `{"delete": "<external_id>"}` lines), `mode` and `scope_id` as query parameters, optionally ' +
    '`Content-Encoding: gzip`; the body is streamed and reconciled batch by batch (never held whole), so memory stays ' +
    'flat whatever its size. A line that is not a valid record stops the push with a 422 naming it (`items.<line>`, from ' +
    '0) and its field; the batches before it are kept (pushing again is idempotent). A line may be at most ' +
    'CINV_BODY_LIMIT_BYTES long (413). A disabled source answers 409.',
  tags: ['Sources'],
  access: { resource: 'configuration_items', action: 'write' },
  params: SourceParams,
  query: IngestQuery,
  body: Snapshot,
  streamTypes: [NDJSON],
  responses: { 200: { description: 'What the reconcile did.', schema: Counts }, ...conflictResponse('The source is disabled') },
  async handler({ ctx, app, principal, params, query, body }) {
    const sourceId = bigintId(params.source_id);
    const source = sourceId === undefined ? undefined : await findSourceById(app.sql, principal.tenantId, sourceId);
    const streamed = body === undefined;
    const scopeId = (streamed ? query.scope_id : body.scope_id) ?? null;
    // a source outside every scope of the key is reported as absent, not as forbidden
    if (!source || !coversSource(principal, source.id)) throw notFound('Source not found', { source_id: params.source_id });
    if (source.status === 'disabled') throw conflict('This source is disabled: enable it (PUT /api/v1/sources/{id} with status enabled) to push into it', { source_id: source.id });
    if (!coversScope(principal, source.id, scopeId)) {
      throw forbidden('This key may not write into that instance of the source', { scope_id: scopeId });
    }
    const options = { now: app.now(), batchSize: app.config.reconcileBatchSize, statementTimeoutMs: app.config.bulkStatementTimeoutMs };
    if (!streamed) {
      // the route has validated the schema already
      assertStorable(body);
      return reconcile(
        app.sql,
        { tenantId: principal.tenantId, sourceId: source.id, scopeId, mode: body.mode ?? 'snapshot', records: body.items, deletions: body.deletions },
        options,
      );
    }
    const mode = query.mode ?? 'snapshot';
    const total = emptyReconcileResult();
    const stream = decodedBody(ctx.req, ctx.get('content-encoding') || undefined);
    for await (const batch of ndjsonBatches(stream, { mode, batchSize: app.config.reconcileBatchSize, maxLineBytes: app.config.bodyLimitBytes })) {
      addReconcileResult(
        total,
        await reconcile(app.sql, { tenantId: principal.tenantId, sourceId: source.id, scopeId, mode, records: batch.records, deletions: batch.deletions }, options),
      );
    }
    return total;
  },
});

const TAGS = ['Sources'];


const ScheduleConfig = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ description: 'Whether the worker collects the source on its own (default false).' })),
    interval_minutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 525_600, description: 'Minutes between collections (default 60).' })),
  },
  { additionalProperties: false },
);

const SourceView = Type.Object({
  id: Type.Integer(),
  collector_id: Type.Integer(),
  name: Type.String(),
  endpoint: Nullable(Type.String()),
  status: Type.Union([Type.Literal('enabled'), Type.Literal('disabled')]),
  config: JsonObject('The source\'s settings: the common keys (verify_ssl, timeout, collection_mode, enabled_collectors) and its type\'s.'),
  schedule_config: Type.Object({ enabled: Type.Boolean(), interval_minutes: Type.Integer() }),
  health_status: Nullable(JsonObject('`status`, `last_check` and `details` (or `components`).')),
  last_collection: Nullable(Timestamp()),
  created_at: Timestamp(),
  updated_at: Timestamp(),
});

const SourceDetail = Type.Composite([
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

const SourceList = Type.Object({ items: Type.Array(SourceView), total: Type.Integer(), offset: Type.Integer(), limit: Type.Integer() });

const NAME = Type.String({ minLength: 1, maxLength: 200, pattern: '^\\S(.*\\S)?$', description: 'Unique among the tenant\'s sources.' });
const ENDPOINT = Nullable(Type.String({ minLength: 1, maxLength: 2048, description: 'Where the collector connects: an http(s) URL (or the type\'s own scheme).' }));

const SourceFields = {
  name: NAME,
  endpoint: Type.Optional(ENDPOINT),
  status: Type.Optional(Type.Union([Type.Literal('enabled'), Type.Literal('disabled')])),
  config: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  schedule_config: Type.Optional(ScheduleConfig),
};

const NewCollectorSource = Type.Object(SourceFields, { additionalProperties: false });
const NewSource = Type.Object(
  {
    ...SourceFields,
    collector_type: Type.String({ minLength: 1, maxLength: 100, description: 'The type of the collector; it is provisioned with its first source.' }),
    collector_name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Default: the type. Collectors may share a name when their types differ.' })),
  },
  { additionalProperties: false },
);

const SourceUpdate = Type.Object(
  {
    name: Type.Optional(NAME),
    endpoint: Type.Optional(ENDPOINT),
    status: Type.Optional(Type.Union([Type.Literal('enabled'), Type.Literal('disabled')])),
    config: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Merged key by key; a null value removes the key.' })),
    schedule_config: Type.Optional(ScheduleConfig),
  },
  { additionalProperties: false },
);

const SourceQuery = Type.Object({
  collector_id: Type.Optional(Type.String({ pattern: '^[0-9]{1,19}$', description: 'Only sources of this collector (an integer).' })),
  status: Type.Optional(Type.Union([Type.Literal('enabled'), Type.Literal('disabled')])),
  enabled: Type.Optional(Type.Boolean({ description: 'Shorthand: true is `status=enabled`, false `status=disabled`.' })),
  limit: Limit(50, 500),
  offset: Offset,
});

const CollectorParams = Type.Object({ collector_id: NumericId('The collector identifier') });

export function presentSource(row: SourceRow) {
  const schedule = row.schedule_config;
  return {
    id: Number(row.id),
    collector_id: Number(row.collector_id),
    name: row.name,
    endpoint: row.endpoint,
    status: row.status as 'enabled' | 'disabled',
    config: row.config,
    schedule_config: { enabled: schedule.enabled === true, interval_minutes: Number(schedule.interval_minutes ?? 60) },
    health_status: row.health_status,
    last_collection: row.last_collection?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

const presentDetail = (row: SourceRow) => ({
  ...presentSource(row),
  collector: { id: Number(row.collector_id), name: row.collector_name, collector_type: row.collector_type },
  last_error: row.last_error,
  credentials: row.credentials ? { type: row.credentials.type, updated_at: new Date(row.credentials.updated_at).toISOString() } : null,
});

/** A live source the principal may see, or a 404 (a source outside its scopes is reported absent). */
export async function sourceOr404(app: AppContext, principal: Principal, rawId: string): Promise<SourceRow> {
  const id = bigintId(rawId);
  const source = id === undefined ? undefined : await getSource(app.sql, principal.tenantId, id);
  if (!source || !coversSource(principal, source.id)) throw notFound('Source not found', { source_id: rawId });
  return source;
}

/** Creating or changing a source needs a principal whose scopes cover it: a scoped key could not see it afterwards. */
function assertUnscoped(principal: Principal): void {
  if (!principal.superadmin && principal.scopes !== 'all') throw forbidden('Only a principal with access to all data may add sources', { reason: 'scoped' });
}

const allowedHosts = (app: AppContext) => new AllowedHosts(app.config.sourceAllowedHosts, { allowPrivate: app.config.sourceAllowPrivate });

async function createSource(app: AppContext, principal: Principal, collectorId: string, typeName: string, body: Static<typeof NewCollectorSource>) {
  const type = collectorType(typeName);
  if (type) await assertSourceSettings(type, { endpoint: body.endpoint, config: body.config ?? {} }, allowedHosts(app));
  const id = await insertSource(app.sql, principal.tenantId, {
    collectorId,
    name: body.name,
    endpoint: body.endpoint ?? null,
    config: body.config ?? {},
    scheduleConfig: body.schedule_config ?? {},
  });
  if (!id) throw conflict('A source with this name exists already', { name: body.name });
  if (body.status === 'disabled') await updateSource(app.sql, principal.tenantId, id, { status: 'disabled' }, app.now());
  return presentDetail((await getSource(app.sql, principal.tenantId, id))!);
}

const list = defineRoute({
  method: 'GET',
  path: '/api/v1/sources',
  operationId: 'listSources',
  summary: 'List sources',
  description: 'The sources the caller may see (its data scopes name them), by id. `enabled` is shorthand for `status`.',
  tags: TAGS,
  access: { resource: 'sources', action: 'read' },
  query: SourceQuery,
  responses: { 200: { description: 'A page of sources.', schema: SourceList } },
  async handler({ app, principal, query }) {
    const status = query.status ?? (query.enabled === undefined ? undefined : query.enabled ? 'enabled' : 'disabled');
    const collectorId = query.collector_id === undefined ? undefined : bigintId(query.collector_id);
    if (query.collector_id !== undefined && collectorId === undefined) return { items: [], total: 0, offset: query.offset, limit: query.limit };
    const { rows, total } = await listSources(app.sql, principal, {
      collectorId,
      status,
      limit: query.limit,
      offset: query.offset,
    });
    return { items: rows.map(presentSource), total, offset: query.offset, limit: query.limit };
  },
});

const create = defineRoute({
  method: 'POST',
  path: '/api/v1/sources',
  operationId: 'createSource',
  summary: 'Add a source (provisioning its collector)',
  description:
    'The collector of `collector_type` and `collector_name` (default: the type) is created with its first source. ' +
    '`config` is checked against the type (unknown keys, `collection_mode`, `enabled_collectors`, `timeout`), `endpoint` ' +
    'must be an http(s) URL without credentials and may not name a link-local or cloud metadata address (nor, with ' +
    'CINV_SOURCE_ALLOW_PRIVATE=false, a loopback or private one; nor, with CINV_SOURCE_ALLOWED_HOSTS, a host outside the ' +
    'list): 422 naming the field. A taken name is a 409. Credentials are ' +
    `set separately.\n\nCollector types:\n${collectorTypesDoc()}`,
  tags: TAGS,
  access: { resource: 'sources', action: 'write' },
  body: NewSource,
  responses: { 201: { description: 'The source.', schema: SourceDetail }, ...conflictResponse('A live source has this name') },
  async handler({ ctx, app, principal, body }) {
    assertUnscoped(principal);
    const type = requireCollectorType(body.collector_type);
    const { collector_type: _type, collector_name: collectorName, ...fields } = body;
    await assertSourceSettings(type, { endpoint: fields.endpoint, config: fields.config ?? {} }, allowedHosts(app));
    const collectorId = await provisionCollector(app.sql, principal.tenantId, type.type, collectorName ?? type.type);
    const created = await createSource(app, principal, collectorId, type.type, fields);
    ctx.status = 201;
    return created;
  },
});

const get = defineRoute({
  method: 'GET',
  path: '/api/v1/sources/{source_id}',
  operationId: 'getSource',
  summary: 'Get a source',
  description: 'With its collector and last error. A deleted source, or one outside the caller\'s scopes, is a 404.',
  tags: TAGS,
  access: { resource: 'sources', action: 'read' },
  params: SourceParams,
  responses: { 200: { description: 'The source.', schema: SourceDetail } },
  async handler({ app, principal, params }) {
    return presentDetail(await sourceOr404(app, principal, params.source_id));
  },
});

const update = defineRoute({
  method: 'PUT',
  path: '/api/v1/sources/{source_id}',
  operationId: 'updateSource',
  summary: 'Change a source (partially)',
  description:
    'Omitted fields keep their values; `config` and `schedule_config` are merged key by key (a null value in `config` ' +
    'removes the key); credentials are untouched. The result is validated as a whole, as on creation. `status: disabled` ' +
    'pauses collections and refuses pushes (409) until it is `enabled` again.',
  tags: TAGS,
  access: { resource: 'sources', action: 'write' },
  params: SourceParams,
  body: SourceUpdate,
  responses: { 200: { description: 'The source as it is now.', schema: SourceDetail }, ...conflictResponse('Another live source has this name') },
  async handler({ app, principal, params, body }) {
    const source = await sourceOr404(app, principal, params.source_id);
    assertUnscoped(principal);
    const type = collectorType(source.collector_type);
    const config = Object.fromEntries(Object.entries({ ...source.config, ...(body.config ?? {}) }).filter(([, v]) => v !== null));
    const endpoint = body.endpoint === undefined ? source.endpoint : body.endpoint;
    if (type) await assertSourceSettings(type, { endpoint: body.endpoint === undefined ? undefined : endpoint, config }, allowedHosts(app));
    const changed = await updateSource(
      app.sql,
      principal.tenantId,
      source.id,
      { name: body.name, endpoint: body.endpoint, status: body.status, config: body.config, scheduleConfig: body.schedule_config },
      app.now(),
    );
    if (!changed) throw conflict('A source with this name exists already', { name: body.name });
    if (body.status === 'disabled') await cancelRunsOf(app.sql, source.id, app.now());
    return presentDetail((await getSource(app.sql, principal.tenantId, source.id))!);
  },
});

const remove = defineRoute({
  method: 'DELETE',
  path: '/api/v1/sources/{source_id}',
  operationId: 'deleteSource',
  summary: 'Delete a source',
  description:
    'Stops further collections and destroys the stored credentials; the CIs and their history stay (they age as the ' +
    'lifecycle says, no longer seen). Every route of a deleted source is a 404 from then on; its name is free again.',
  tags: TAGS,
  access: { resource: 'sources', action: 'delete' },
  params: SourceParams,
  responses: { 200: { description: 'Deleted.', schema: Type.Object({ message: Type.String() }) } },
  async handler({ app, principal, params }) {
    const source = await sourceOr404(app, principal, params.source_id);
    await app.sql.begin(async (tx) => {
      await deleteSource(tx, principal.tenantId, source.id, app.now());
      await destroyCredentials(tx, principal.tenantId, source.id);
      // a running collection stops at its worker's next lease renewal
      await cancelRunsOf(tx, source.id, app.now());
    });
    return { message: `Source ${source.name} deleted; its configuration items and history are kept` };
  },
});

const HealthBody = Type.Object(
  {
    status: Type.String({ minLength: 1, maxLength: 50 }),
    message: Type.String({ maxLength: 2000 }),
    timestamp: Type.Number({ minimum: 0, maximum: 253_402_300_799, description: 'Epoch seconds (fractions allowed).' }),
    duration: Type.Optional(Type.Number({ minimum: 0 })),
    consecutive_errors: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
);

const health = defineRoute({
  method: 'PUT',
  path: '/api/v1/sources/{source_id}/health',
  operationId: 'reportSourceHealth',
  summary: 'Report a source\'s health (called by collectors)',
  description:
    'Sets `health_status` to `{status, last_check, details: {message, duration, consecutive_errors}}` (`last_check` from ' +
    '`timestamp`), which the collector health routes reflect.',
  tags: TAGS,
  access: { resource: 'sources', action: 'write' },
  params: SourceParams,
  body: HealthBody,
  responses: { 200: { description: 'Recorded.', schema: Type.Object({ status: Type.String(), message: Type.String() }) } },
  async handler({ app, principal, params, body }) {
    const source = await sourceOr404(app, principal, params.source_id);
    const details: Record<string, string> = { message: body.message };
    if (body.duration !== undefined) details.duration = String(body.duration);
    if (body.consecutive_errors !== undefined) details.consecutive_errors = String(body.consecutive_errors);
    const lastCheck = new Date(Math.round(body.timestamp * 1000)).toISOString();
    await setSourceHealth(app.sql, principal.tenantId, source.id, { status: body.status, last_check: lastCheck, details }, app.now());
    return { status: 'ok', message: `Health of ${source.name} recorded` };
  },
});

const collectorSources = defineRoute({
  method: 'GET',
  path: '/api/v1/collectors/{collector_id}/sources',
  operationId: 'listCollectorSources',
  summary: "A collector's sources (a bare array)",
  tags: TAGS,
  access: { resource: 'sources', action: 'read' },
  params: CollectorParams,
  responses: { 200: { description: 'The sources, by id.', schema: Type.Array(SourceView) } },
  async handler({ app, principal, params }) {
    const collector = await collectorOr404(app, principal, params.collector_id);
    const { rows } = await listSources(app.sql, principal, { collectorId: collector.id, limit: 10_000, offset: 0 });
    return rows.map(presentSource);
  },
});

const addToCollector = defineRoute({
  method: 'POST',
  path: '/api/v1/collectors/{collector_id}/sources',
  operationId: 'addCollectorSource',
  summary: 'Add a source to a collector',
  description: 'As `POST /api/v1/sources`, with the collector given by the path.',
  tags: TAGS,
  access: { resource: 'sources', action: 'write' },
  params: CollectorParams,
  body: NewCollectorSource,
  responses: {
    201: { description: 'The source.', schema: SourceDetail },
    ...conflictResponse('A live source has this name, or the collector\'s type is not known to this service'),
  },
  async handler({ ctx, app, principal, params, body }) {
    assertUnscoped(principal);
    const collector = await collectorOr404(app, principal, params.collector_id);
    if (!collectorType(collector.collector_type)) {
      throw conflict(`Collector type ${collector.collector_type} is not known to this service; known: ${knownCollectorTypes().join(', ')}`);
    }
    const created = await createSource(app, principal, collector.id, collector.collector_type, body);
    ctx.status = 201;
    return created;
  },
});


const CredentialsBody = Type.Union(
  [
    Type.Object({ type: Type.Literal('token'), token: Type.String({ minLength: 1, maxLength: 16_384 }) }, { additionalProperties: false }),
    Type.Object(
      { type: Type.Literal('basic'), username: Type.String({ minLength: 1, maxLength: 1024 }), password: Type.String({ maxLength: 16_384 }) },
      { additionalProperties: false },
    ),
    Type.Object(
      {
        type: Type.Literal('tls'),
        client_certificate: Type.String({ minLength: 1, maxLength: 65_536, description: 'PEM.' }),
        client_key: Type.String({ minLength: 1, maxLength: 65_536, description: 'PEM.' }),
        ca_certificate: Type.Optional(Type.String({ minLength: 1, maxLength: 65_536, description: 'PEM; the endpoint\'s CA when it is not a public one.' })),
      },
      { additionalProperties: false },
    ),
  ],
  { description: 'A bearer token, a username and password, or a client certificate and key.' },
);

function masterKeys(app: AppContext): MasterKeys {
  if (!app.config.masterKey) {
    throw conflict('Credentials cannot be stored or read: CINV_MASTER_KEY is not set on this server', { reason: 'master_key_missing' });
  }
  return new MasterKeys(app.config.masterKey, app.config.previousMasterKey);
}

const putCredentials = defineRoute({
  method: 'PUT',
  path: '/api/v1/sources/{source_id}/credentials',
  operationId: 'setSourceCredentials',
  summary: 'Set or replace a source\'s credentials',
  description:
    'Stored encrypted (AES-256-GCM under the tenant\'s data key, itself wrapped by CINV_MASTER_KEY) and never returned ' +
    'by any route but the audited reveal. 204. 409 when the server has no master key.',
  tags: TAGS,
  access: { resource: 'credentials', action: 'write' },
  params: SourceParams,
  body: CredentialsBody,
  responses: { 204: { description: 'Stored.' }, ...conflictResponse('The server has no master key (CINV_MASTER_KEY)') },
  async handler({ ctx, app, principal, params, body }) {
    const source = await sourceOr404(app, principal, params.source_id);
    await storeCredentials(app.sql, masterKeys(app), principal.tenantId, source.id, body as CredentialDocument, app.now());
    ctx.status = 204;
    return undefined;
  },
});

const deleteCredentials = defineRoute({
  method: 'DELETE',
  path: '/api/v1/sources/{source_id}/credentials',
  operationId: 'deleteSourceCredentials',
  summary: 'Remove a source\'s credentials',
  description: '204; 404 when the source has none.',
  tags: TAGS,
  access: { resource: 'credentials', action: 'delete' },
  params: SourceParams,
  responses: { 204: { description: 'Removed.' } },
  async handler({ ctx, app, principal, params }) {
    const source = await sourceOr404(app, principal, params.source_id);
    if (!(await destroyCredentials(app.sql, principal.tenantId, source.id))) throw notFound('This source has no credentials', { source_id: params.source_id });
    ctx.status = 204;
    return undefined;
  },
});

const reveal = defineRoute({
  method: 'GET',
  path: '/api/v1/sources/{source_id}/credentials/reveal',
  operationId: 'revealSourceCredentials',
  summary: 'Read back a source\'s credentials (audited)',
  description:
    'Needs `credentials:read` (admin keys and superadmins have it; `ro` keys do not). Every reveal writes a ' +
    '`credentials.revealed` audit event and every refused one `credentials.reveal_denied`. 404 when the source has none.',
  tags: TAGS,
  access: { resource: 'credentials', action: 'read' },
  deniedEvent: 'credentials.reveal_denied',
  params: SourceParams,
  responses: {
    200: { description: 'The credentials as they were set.', schema: CredentialsBody },
    ...conflictResponse('The server has no master key, or the credentials do not decrypt under it'),
  },
  async handler({ ctx, app, principal, params }) {
    const source = await sourceOr404(app, principal, params.source_id);
    const document = await loadCredentials(app.sql, masterKeys(app), principal.tenantId, source.id).catch((error: unknown) => {
      if (error instanceof CredentialsUnavailable) throw conflict(`The credentials cannot be decrypted: ${error.message}`, { reason: 'undecryptable' });
      throw error;
    });
    if (!document) throw notFound('This source has no credentials', { source_id: params.source_id });
    // written before the secret leaves: a reveal that cannot be recorded does not happen
    await auditChange(app.sql, app.audit, ctx, principal, 'credentials.revealed', { type: 'source', id: source.id, name: source.name }, { credential_type: document.type });
    ctx.set('Cache-Control', 'no-store');
    return document;
  },
});

export const sourceRoutes: AnyRoute[] = [
  list,
  create,
  get,
  update,
  remove,
  health,
  ingest,
  putCredentials,
  deleteCredentials,
  reveal,
  collectorSources,
  addToCollector,
];
