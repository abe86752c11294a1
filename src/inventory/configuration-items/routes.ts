import { Type } from '@sinclair/typebox';
import { defineRoute, readsThePast } from '../../context.js';
import { JsonText, jsonWith } from '../../platform/http/route.js';
import { attributePaths, pickAttributes, presentCiAsOf, presentListedCi, presentTypeData } from './presenter.js';
import {
  CiArchived,
  CiDetail,
  CiDetailAsOf,
  CiDetailQuery,
  CiList,
  CiListQuery,
  CiParams,
  TypeDataList,
} from './schema.js';
import { archiveConfigurationItem, ciDetailAsOf, ciDetailOr404, listConfigurationItems } from './service.js';

const tags = ['Configuration items'];

const list = defineRoute({
  method: 'GET',
  path: '/api/v1/configuration-items',
  operationId: 'listConfigurationItems',
  analystRead: readsThePast,
  summary: 'List configuration items',
  description:
    'Filtered, sorted list of the CIs the key may see, paged by `offset` or walked by `cursor` (`next_cursor`). ' +
    '`status` defaults to `active`. ' +
    'With `include_type_data` and a `ci_type` filter the items take the type-data shape and the envelope ' +
    'is `{items, total, has_more}`.',
  tags,
  access: { resource: 'configuration_items', action: 'read' },
  query: CiListQuery,
  responses: {
    200: { description: 'A page of CIs (or of type-data items).', schema: Type.Union([CiList, TypeDataList]) },
  },
  async handler({ app, principal, query }) {
    const paths = attributePaths(query.include_attributes);
    const { page, typeData, nextCursor, asOf } = await listConfigurationItems(app, principal, query, {
      itemsAsJson: paths.length === 0,
    });
    const totals = { total: page.total, total_exact: page.totalExact, ...(asOf === undefined ? {} : { as_of: asOf }) };
    const walk = { has_more: page.hasMore, next_cursor: nextCursor };
    if (typeData) return { items: page.rows.map(presentTypeData), ...totals, ...walk };
    if (page.itemsJson !== undefined)
      return jsonWith({ items: page.itemsJson }, { ...totals, offset: query.offset, limit: query.limit, ...walk });
    const items = page.rows.map((row) =>
      paths.length > 0
        ? { ...presentListedCi(row), attributes: pickAttributes(row.raw_data, paths) }
        : presentListedCi(row),
    );
    return { items, ...totals, offset: query.offset, limit: query.limit, ...walk };
  },
});

const detail = defineRoute({
  method: 'GET',
  path: '/api/v1/configuration-items/{ci_id}',
  operationId: 'getConfigurationItem',
  analystRead: readsThePast,
  summary: 'Get one configuration item',
  tags,
  access: { resource: 'configuration_items', action: 'read' },
  params: CiParams,
  query: CiDetailQuery,
  description:
    "The spec's fields, plus (beyond the spec) `type_data` with its metrics, the `source` that collected the CI and its " +
    'instance (`scope_id`). With `as_of`, the CI as it was stored at that moment (a CI removed since included), ' +
    'echoing `as_of`; `last_seen` and metrics are not history and are left out.',
  responses: { 200: { description: 'The CI with its nested raw_data.', schema: Type.Union([CiDetail, CiDetailAsOf]) } },
  async handler({ app, principal, params, query }) {
    if (query.as_of !== undefined) return presentCiAsOf(await ciDetailAsOf(app, principal, params.ci_id, query.as_of));
    return new JsonText(await ciDetailOr404(app, principal, params.ci_id));
  },
});

const remove = defineRoute({
  method: 'DELETE',
  path: '/api/v1/configuration-items/{ci_id}',
  operationId: 'archiveConfigurationItem',
  summary: 'Archive (soft-delete) a configuration item',
  description:
    'Sets the status to `archived` and `status_updated_at` to now, and records a `DELETED` change. ' +
    'The CI is removed for good once the archive retention has passed. Archiving an archived CI changes nothing.',
  tags,
  access: { resource: 'configuration_items', action: 'delete' },
  params: CiParams,
  responses: { 200: { description: 'The CI is archived.', schema: CiArchived } },
  async handler({ app, principal, params }) {
    const outcome = await archiveConfigurationItem(app, principal, params.ci_id);
    return {
      message: outcome.archived ? 'Configuration item archived' : 'Configuration item was already archived',
      ci_id: outcome.ci_id,
      status: 'archived' as const,
      status_updated_at: outcome.status_updated_at,
    };
  },
});

export const configurationItemRoutes = [list, detail, remove];
