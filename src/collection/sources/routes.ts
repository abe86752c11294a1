import { Type } from '@sinclair/typebox';
import type { CredentialDocument } from '../types/plugin.js';
import { defineRoute, type AnyRoute } from '../../context.js';
import { Snapshot } from '../../inventory/write-path/records.js';
import { decodedBody } from './ndjson.js';
import { presentDetail, presentSource } from './presenter.js';
import { conflictResponse } from '../../platform/http/schemas.js';
import {
  Counts,
  CredentialsBody,
  HealthBody,
  IngestQuery,
  NDJSON,
  NewSource,
  SourceDetail,
  SourceList,
  SourceParams,
  SourceQuery,
  SourceUpdate,
} from './schema.js';
import {
  changeSource,
  createSource,
  ingest as ingestPush,
  listSourcesPage,
  removeCredentials,
  removeSource,
  reportHealth,
  refusedSourceTarget,
  revealCredentials,
  setCredentials,
  sourceOr404,
} from './service.js';
import { collectorTypesDoc } from './settings.js';

const TAGS = ['Sources'];

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
  tags: TAGS,
  access: { resource: 'configuration_items', action: 'write' },
  params: SourceParams,
  query: IngestQuery,
  body: Snapshot,
  streamTypes: [NDJSON],
  responses: {
    200: { description: 'What the reconcile did.', schema: Counts },
    ...conflictResponse('The source is disabled'),
  },
  async handler({ ctx, app, principal, params, query, body }) {
    const push =
      body !== undefined
        ? { body }
        : {
            open: () => decodedBody(ctx.req, ctx.get('content-encoding') || undefined),
            mode: query.mode,
            scopeId: query.scope_id,
          };
    return ingestPush(app, principal, params.source_id, push);
  },
});

const list = defineRoute({
  method: 'GET',
  path: '/api/v1/sources',
  operationId: 'listSources',
  summary: 'List sources',
  description:
    'The sources the caller may see (its data scopes name them), by id. `enabled` is shorthand for `status`.',
  tags: TAGS,
  access: { resource: 'sources', action: 'read' },
  query: SourceQuery,
  responses: { 200: { description: 'A page of sources.', schema: SourceList } },
  async handler({ app, principal, query }) {
    const { rows, total } = await listSourcesPage(app, principal, query);
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
  responses: {
    201: { description: 'The source.', schema: SourceDetail },
    ...conflictResponse('A live source has this name'),
  },
  async handler({ ctx, app, principal, body }) {
    const created = await createSource(app, principal, body);
    ctx.status = 201;
    return presentDetail(created);
  },
});

const get = defineRoute({
  method: 'GET',
  path: '/api/v1/sources/{source_id}',
  operationId: 'getSource',
  summary: 'Get a source',
  description: "With its collector and last error. A deleted source, or one outside the caller's scopes, is a 404.",
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
  responses: {
    200: { description: 'The source as it is now.', schema: SourceDetail },
    ...conflictResponse('Another live source has this name'),
  },
  async handler({ app, principal, params, body }) {
    return presentDetail(await changeSource(app, principal, params.source_id, body));
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
    const source = await removeSource(app, principal, params.source_id);
    return { message: `Source ${source.name} deleted; its configuration items and history are kept` };
  },
});

const health = defineRoute({
  method: 'PUT',
  path: '/api/v1/sources/{source_id}/health',
  operationId: 'reportSourceHealth',
  summary: "Report a source's health (called by collectors)",
  description:
    'Sets `health_status` to `{status, last_check, details: {message, duration, consecutive_errors}}` (`last_check` from ' +
    "`timestamp`), which the collector health routes reflect. The health is every instance's, so a caller whose data " +
    'scopes hold only some instances of the source is refused (403, `details.reason` `whole_source_required`).',
  tags: TAGS,
  access: { resource: 'sources', action: 'write' },
  params: SourceParams,
  body: HealthBody,
  responses: {
    200: { description: 'Recorded.', schema: Type.Object({ status: Type.String(), message: Type.String() }) },
  },
  async handler({ app, principal, params, body }) {
    const source = await reportHealth(app, principal, params.source_id, body);
    return { status: 'ok', message: `Health of ${source.name} recorded` };
  },
});

const putCredentials = defineRoute({
  method: 'PUT',
  path: '/api/v1/sources/{source_id}/credentials',
  operationId: 'setSourceCredentials',
  summary: "Set or replace a source's credentials",
  description:
    "Stored encrypted (AES-256-GCM under the tenant's data key, itself wrapped by CINV_MASTER_KEY) and never returned " +
    'by any route but the audited reveal. 204. 409 when the server has no master key.',
  tags: TAGS,
  access: { resource: 'credentials', action: 'write' },
  params: SourceParams,
  body: CredentialsBody,
  responses: { 204: { description: 'Stored.' }, ...conflictResponse('The server has no master key (CINV_MASTER_KEY)') },
  async handler({ ctx, app, principal, params, body }) {
    await setCredentials(app, principal, params.source_id, body as CredentialDocument);
    ctx.status = 204;
    return undefined;
  },
});

const deleteCredentials = defineRoute({
  method: 'DELETE',
  path: '/api/v1/sources/{source_id}/credentials',
  operationId: 'deleteSourceCredentials',
  summary: "Remove a source's credentials",
  description: '204; 404 when the source has none.',
  tags: TAGS,
  access: { resource: 'credentials', action: 'delete' },
  params: SourceParams,
  responses: { 204: { description: 'Removed.' } },
  async handler({ ctx, app, principal, params }) {
    await removeCredentials(app, principal, params.source_id);
    ctx.status = 204;
    return undefined;
  },
});

const reveal = defineRoute({
  method: 'GET',
  path: '/api/v1/sources/{source_id}/credentials/reveal',
  operationId: 'revealSourceCredentials',
  summary: "Read back a source's credentials (audited)",
  description:
    'Needs `credentials:read` (admin keys and superadmins have it; `ro` keys do not). Every reveal writes a ' +
    '`credentials.revealed` audit event and every refused one `credentials.reveal_denied`. 404 when the source has none.',
  tags: TAGS,
  access: { resource: 'credentials', action: 'read' },
  deniedEvent: 'credentials.reveal_denied',
  deniedTarget: ({ ctx, app, principal }) => refusedSourceTarget(app, principal, String(ctx.params.source_id)),
  params: SourceParams,
  responses: {
    200: { description: 'The credentials as they were set.', schema: CredentialsBody },
    ...conflictResponse('The server has no master key, or the credentials do not decrypt under it'),
  },
  async handler({ ctx, app, principal, params }) {
    const document = await revealCredentials(app, ctx, principal, params.source_id);
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
];
