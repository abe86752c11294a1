import { Type } from '@sinclair/typebox';
import { defineRoute, type AnyRoute } from '../../context.js';
import { conflictResponse } from '../../platform/http/schemas.js';
import { presentSavedView } from './presenter.js';
import { MAX_VIEWS_PER_OWNER, NewSavedView, SavedView, SavedViewParams, SavedViewQuery } from './schema.js';
import { removeView, saveView, savedViewsOf } from './service.js';

const tags = ['Saved views'];

const list = defineRoute({
  method: 'GET',
  path: '/api/v1/saved-views',
  operationId: 'listSavedViews',
  summary: 'List saved views',
  description:
    "The caller's own saved views and those shared with the tenant, by view and name. A saved view is a view of the web " +
    'interface and its URL state; it holds no data. Opening it runs its query under the rights of whoever opens it, so a ' +
    'shared view shows each person only what their permissions and data scopes let them see.',
  tags,
  access: 'authenticated',
  query: SavedViewQuery,
  responses: { 200: { description: 'The saved views.', schema: Type.Object({ items: Type.Array(SavedView) }) } },
  async handler({ app, principal, query }) {
    return { items: (await savedViewsOf(app, principal, query.view)).map((row) => presentSavedView(row, principal)) };
  },
});

const create = defineRoute({
  method: 'POST',
  path: '/api/v1/saved-views',
  operationId: 'createSavedView',
  summary: 'Save a view',
  description:
    `Saved under the caller (the person behind a user token or session, else the API key). A name is used once per view ` +
    `and owner (409); at most ${MAX_VIEWS_PER_OWNER} views each (409). \`shared\` lists it to everyone of the tenant.`,
  tags,
  access: 'authenticated',
  body: NewSavedView,
  responses: {
    201: { description: 'The saved view.', schema: SavedView },
    ...conflictResponse(`The caller has a view of this kind and name, or ${MAX_VIEWS_PER_OWNER} views already`),
  },
  async handler({ ctx, app, principal, body }) {
    const row = await saveView(app, principal, body);
    ctx.status = 201;
    return presentSavedView(row, principal);
  },
});

const remove = defineRoute({
  method: 'DELETE',
  path: '/api/v1/saved-views/{view_id}',
  operationId: 'deleteSavedView',
  summary: 'Delete a saved view',
  description:
    'A private view only by its owner (404 for anyone else: they cannot see it); a shared one by its owner or by a principal ' +
    'whose rights cover the owner\'s (403 for others, `details.reason: "not_owner"`).',
  tags,
  access: 'authenticated',
  params: SavedViewParams,
  responses: { 204: { description: 'Deleted.' } },
  async handler({ ctx, app, principal, params }) {
    await removeView(app, principal, params.view_id);
    ctx.status = 204;
    return undefined;
  },
});

export const savedViewRoutes: AnyRoute[] = [list, create, remove];
