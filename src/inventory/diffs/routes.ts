import { defineRoute, type AnyRoute } from '../../context.js';
import { CiDiff, CiDiffParams, CiDiffQuery, InventoryDiff, InventoryDiffQuery } from './schema.js';
import { ciDiff, inventoryDiff } from './service.js';

const tags = ['The inventory as it was'];

const ci = defineRoute({
  method: 'GET',
  path: '/api/v1/configuration-items/{ci_id}/diff',
  operationId: 'diffConfigurationItem',
  analystRead: true,
  summary: 'How one CI differs between two moments',
  description:
    'The net field differences between the CI as stored at `from` and at `to` (a value changed and back is none), the ' +
    'relationships added and removed, and the change records in between (counted, with the list that walks them). ' +
    "`from` and `to` take a timestamp or a baseline's name. 404 when the CI existed at neither moment (or lies outside " +
    "the caller's data scopes); 422 before the earliest moment the history covers.",
  tags,
  access: { resource: 'configuration_items', action: 'read' },
  params: CiDiffParams,
  query: CiDiffQuery,
  responses: { 200: { description: 'The difference.', schema: CiDiff } },
  handler: ({ app, principal, params, query }) => ciDiff(app, principal, params.ci_id, query),
});

const inventory = defineRoute({
  method: 'GET',
  path: '/api/v1/inventory/diff',
  operationId: 'diffInventory',
  analystRead: true,
  summary: 'How the inventory differs between two moments',
  description:
    "What appeared, disappeared and changed between `from` and `to` among the CIs the caller may see, with the list's " +
    "filters applied to each moment's state: counted by CI type on the first page, then walked in CI id order by " +
    '`next_cursor`. Each changed CI names its changed field paths; its own diff gives the values. Cost follows the changes ' +
    'between the two moments, not the size of the inventory. A page examines at most `CINV_DIFF_PAGE_EXAMINE` ' +
    "candidates (100 000): when most of an interval's writes made no difference, it may hold fewer items than `limit` " +
    '(even none) with `has_more` true; follow `next_cursor` until it is null.',
  tags,
  access: { resource: 'configuration_items', action: 'read' },
  query: InventoryDiffQuery,
  responses: { 200: { description: 'A page of the difference.', schema: InventoryDiff } },
  handler: ({ app, principal, query }) => inventoryDiff(app, principal, query),
});

export const diffRoutes: AnyRoute[] = [ci, inventory];
