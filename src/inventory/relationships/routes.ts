import { defineRoute, type AnyRoute, readsThePast } from '../../context.js';
import { presentRelationship } from './presenter.js';
import { dependencyGraph } from './graph.js';
import { Graph, GraphQuery, RelationshipList, RelationshipListQuery, RelationshipParams } from './schema.js';
import { relationshipsOf } from './service.js';

const list = defineRoute({
  method: 'GET',
  path: '/api/v1/configuration-items/{ci_id}/relationships',
  operationId: 'listRelationships',
  analystRead: readsThePast,
  summary: 'List the relationships of a configuration item',
  description:
    'Relationships of one CI in both directions (or one, with `direction`), each seen from this CI: `outgoing` when ' +
    'this CI points at the related CI, `incoming` when the related CI points at this one. A relationship of a CI to ' +
    'itself is listed once, as outgoing.\n\n' +
    "**Result set and `total`.** A relationship belongs to the result set when its neighbour lies inside the key's " +
    'data scopes and is `active` (any status with `include_inactive=true`), or when its neighbour no longer exists ' +
    'at all (removed for good after the archive retention). `total` counts that set. Relationships whose neighbour ' +
    'vanished are counted but never listed, so a drained walk can hold fewer items than `total` and a page can be ' +
    "empty while `has_more` is true. Neighbours outside the key's data scopes, and with `include_inactive=false` " +
    'inactive or archived ones, are neither listed nor counted.\n\n' +
    '**Paging.** Every page takes `limit` rows of the result set. The end of a walk is `has_more: false` with ' +
    '`next_cursor: null`; never compare item counts with `total`. A first page may skip `offset` rows (unsorted ' +
    'only); cursor pages continue by keyset from where the previous page ended, do not apply `offset` again and echo ' +
    'the requested `offset` unchanged. Unsorted order: outgoing before incoming, each by relationship id. `sort_by` ' +
    'orders the whole result across both directions, ties broken by direction (outgoing first in `asc`) and id; a ' +
    'vanished neighbour sorts as an empty name or type. A cursor is valid only for the CI, `sort_by`, `sort_order`, ' +
    '`direction`, `relationship_types` and `include_inactive` that produced it.\n\n' +
    '**422 `HTTP_422`:** unknown `direction` or `sort_by`; `sort_order` without `sort_by`; `sort_by` with `offset` ' +
    'above 0; a cursor that was altered, truncated, issued for another CI, or replayed with different parameters. ' +
    'An over-limit `limit` or a malformed `offset` is a 422 `VALIDATION_ERROR`. An unknown CI, or one outside the ' +
    "key's data scopes, is a 404.",
  tags: ['Relationships'],
  access: { resource: 'relationships', action: 'read' },
  params: RelationshipParams,
  query: RelationshipListQuery,
  responses: { 200: { description: 'A page of relationships.', schema: RelationshipList } },
  async handler({ app, principal, params, query }) {
    const page = await relationshipsOf(app, principal, params.ci_id, query);
    return {
      items: page.rows.map(presentRelationship),
      total: page.total,
      offset: query.offset,
      limit: query.limit,
      has_more: page.hasMore,
      next_cursor: page.nextCursor,
      ...(query.as_of === undefined ? {} : { as_of: query.as_of }),
    };
  },
});

const graph = defineRoute({
  method: 'GET',
  path: '/api/v1/configuration-items/{ci_id}/graph',
  operationId: 'dependencyGraph',
  analystRead: readsThePast,
  summary: 'The CIs around a configuration item, to a depth',
  description:
    'The blast radius of a CI: the CIs that depend on it (`downstream`), those it depends on (`upstream`), or both, up to ' +
    '`depth` relationships away, breadth first. A CI met twice keeps its nearest depth and is walked on once, so cycles ' +
    'end; `paths_count` counts the shortest walks that reach it. `max_nodes` cuts the walk at the nearest CIs and says so ' +
    "with `truncated`. CIs outside the key's data scopes are neither returned nor walked through; `hidden` counts the " +
    'relationships that led to them. Inactive and archived CIs are left out (and not walked through) unless ' +
    '`include_inactive=true`; the CI itself is returned at depth 0 whatever its type or status. With `as_of`, the ' +
    "relationships that existed then are walked, each CI as it was then. An unknown CI, or one outside the key's data " +
    'scopes, is a 404.',
  tags: ['Relationships'],
  access: { resource: 'relationships', action: 'read' },
  params: RelationshipParams,
  query: GraphQuery,
  responses: { 200: { description: 'The graph around the CI.', schema: Graph } },
  handler: ({ app, principal, params, query }) => dependencyGraph(app, principal, params.ci_id, query),
});

export const relationshipRoutes: AnyRoute[] = [list, graph];
