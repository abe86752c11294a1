import { Type } from '@sinclair/typebox';
import { defineRoute, type AnyRoute } from '../../context.js';
import { conflictResponse } from '../../platform/http/schemas.js';
import { presentBaseline } from './presenter.js';
import { Baseline, BaselineParams, MAX_BASELINES_PER_TENANT, NewBaseline } from './schema.js';
import { baselinesOf, createBaseline, removeBaseline } from './service.js';

const tags = ['The inventory as it was'];

const list = defineRoute({
  method: 'GET',
  path: '/api/v1/baselines',
  operationId: 'listBaselines',
  summary: 'List baselines',
  description:
    "The tenant's named moments, newest first. A baseline holds no data: a diff against it reads the inventory as it was " +
    "at its moment, under the reader's own data scopes.",
  tags,
  access: { resource: 'configuration_items', action: 'read' },
  responses: { 200: { description: 'The baselines.', schema: Type.Object({ items: Type.Array(Baseline) }) } },
  async handler({ app, principal }) {
    return { items: (await baselinesOf(app, principal)).map(presentBaseline) };
  },
});

const create = defineRoute({
  method: 'POST',
  path: '/api/v1/baselines',
  operationId: 'createBaseline',
  summary: 'Name a moment',
  description:
    `Names \`at\` (default now) for the tenant; \`from\` and \`to\` of the diffs accept the name. A name is used once per ` +
    `tenant (409); at most ${MAX_BASELINES_PER_TENANT} baselines (409). \`at\` must lie within the history (422) and not ` +
    `in the future (422).`,
  tags,
  access: { resource: 'configuration_items', action: 'write' },
  body: NewBaseline,
  responses: {
    201: { description: 'The baseline.', schema: Baseline },
    ...conflictResponse(`The tenant has a baseline of this name, or ${MAX_BASELINES_PER_TENANT} baselines already`),
  },
  async handler({ ctx, app, principal, body }) {
    const row = await createBaseline(app, principal, body);
    ctx.status = 201;
    return presentBaseline(row);
  },
});

const remove = defineRoute({
  method: 'DELETE',
  path: '/api/v1/baselines/{baseline_id}',
  operationId: 'deleteBaseline',
  summary: 'Delete a baseline',
  description:
    'The moment stays readable by its timestamp; only its name goes. Only by its owner (the principal that named it) or ' +
    "a principal whose rights cover the owner's; a baseline named before owners were recorded, only by a principal with " +
    'all data. Others get 403 (`details.reason: "not_owner"`).',
  tags,
  access: { resource: 'configuration_items', action: 'write' },
  params: BaselineParams,
  responses: { 204: { description: 'Deleted.' } },
  async handler({ ctx, app, principal, params }) {
    await removeBaseline(app, principal, params.baseline_id);
    ctx.status = 204;
    return undefined;
  },
});

export const baselineRoutes: AnyRoute[] = [list, create, remove];
