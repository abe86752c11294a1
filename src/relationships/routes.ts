import { isCiVisible } from '../configuration-items/store.js';
import { decodeCursor, encodeCursor, type CursorBinding } from '../http/cursor.js';
import { notFound, unprocessable } from '../errors.js';
import { defineRoute, type AnyRoute } from '../context.js';
import { presentRelationship } from './presenter.js';
import {
  DIRECTIONS,
  RELATIONSHIP_SORT_FIELDS,
  RelationshipList,
  RelationshipListQuery,
  RelationshipParams,
  type Direction,
  type RelationshipSortField,
} from './schema.js';
import { countRelationships, relationshipPage, type Keyset, type RelationshipCriteria } from './store.js';

type ResultShape = Pick<RelationshipCriteria, 'direction' | 'types' | 'includeInactive' | 'sort'>;

const isOneOf = <T extends string>(values: readonly T[], value: string): value is T => (values as readonly string[]).includes(value);

/** Splits the comma list; sorted and de-duplicated so that equal filters bind cursors equally. */
function relationshipTypes(raw: string | undefined): string[] | null {
  const types = [...new Set((raw ?? '').split(',').map((t) => t.trim()).filter(Boolean))].sort();
  return types.length > 0 ? types : null;
}

function readDirection(raw: string | undefined): Direction | null {
  if (raw === undefined) return null;
  if (!isOneOf(DIRECTIONS, raw)) {
    throw unprocessable(`Invalid direction "${raw}"; use outgoing or incoming, or omit it for both`, { parameter: 'direction', allowed: DIRECTIONS });
  }
  return raw;
}

/** The sorting rules of the spec (§4.2 rule 4 and the `sort_by`/`sort_order` rows), as route 422s. */
function readSort(query: RelationshipListQuery): ResultShape['sort'] {
  if (query.sort_by === undefined) {
    if (query.sort_order !== undefined) throw unprocessable('sort_order requires sort_by', { parameter: 'sort_order' });
    return null;
  }
  if (!isOneOf(RELATIONSHIP_SORT_FIELDS, query.sort_by)) {
    throw unprocessable(`Invalid sort_by "${query.sort_by}"; use one of ${RELATIONSHIP_SORT_FIELDS.join(', ')}`, {
      parameter: 'sort_by',
      allowed: RELATIONSHIP_SORT_FIELDS,
    });
  }
  if (query.offset > 0) {
    throw unprocessable('sort_by cannot be combined with an offset above 0; walk sorted results with next_cursor', { parameter: 'offset' });
  }
  return { field: query.sort_by as RelationshipSortField, order: query.sort_order ?? 'asc' };
}

function readShape(query: RelationshipListQuery): ResultShape {
  return {
    direction: readDirection(query.direction),
    types: relationshipTypes(query.relationship_types),
    includeInactive: query.include_inactive,
    sort: readSort(query),
  };
}

function bindingOf(tenantId: string, ciId: string, shape: ResultShape): CursorBinding {
  return {
    tenantId,
    scope: `relationships:${ciId}`,
    sort: shape.sort ? `${shape.sort.field}:${shape.sort.order}` : null,
    filters: { direction: shape.direction, relationship_types: shape.types, include_inactive: shape.includeInactive },
  };
}

const cursorPosition = (keyset: Keyset): unknown[] =>
  keyset.sortValue === undefined ? [keyset.directionRank, keyset.id] : [keyset.sortValue, keyset.directionRank, keyset.id];

/** The keyset a decoded cursor holds; the signature vouches for it, the shape is checked anyway. */
function keysetOf(position: unknown[], sorted: boolean): Keyset {
  const [sortValue, directionRank, id] = sorted ? position : [undefined, ...position];
  const valid =
    position.length === (sorted ? 3 : 2) &&
    (!sorted || typeof sortValue === 'string') &&
    (directionRank === 0 || directionRank === 1) &&
    typeof id === 'string' &&
    /^\d{1,19}$/.test(id);
  if (!valid) throw unprocessable('Malformed cursor');
  return { directionRank, id, ...(sorted ? { sortValue: sortValue as string } : {}) };
}

const list = defineRoute({
  method: 'GET',
  path: '/api/v1/configuration-items/{ci_id}/relationships',
  operationId: 'listRelationships',
  summary: 'List the relationships of a configuration item',
  description:
    'Relationships of one CI in both directions (or one, with `direction`), each seen from this CI: `outgoing` when ' +
    'this CI points at the related CI, `incoming` when the related CI points at this one. A relationship of a CI to ' +
    'itself is listed once, as outgoing.\n\n' +
    '**Result set and `total`.** A relationship belongs to the result set when its neighbour lies inside the key\'s ' +
    'data scopes and is `active` (any status with `include_inactive=true`), or when its neighbour no longer exists ' +
    'at all (removed for good after the archive retention). `total` counts that set. Relationships whose neighbour ' +
    'vanished are counted but never listed, so a drained walk can hold fewer items than `total` and a page can be ' +
    'empty while `has_more` is true. Neighbours outside the key\'s data scopes, and with `include_inactive=false` ' +
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
    'key\'s data scopes, is a 404.',
  tags: ['Relationships'],
  access: { resource: 'relationships', action: 'read' },
  params: RelationshipParams,
  query: RelationshipListQuery,
  responses: { 200: { description: 'A page of relationships.', schema: RelationshipList } },
  async handler({ app, principal, params, query }) {
    const shape = readShape(query);
    const binding = bindingOf(principal.tenantId, params.ci_id, shape);
    const cursor = query.cursor ? decodeCursor(app.config.secret, query.cursor, binding) : undefined;
    const after = cursor ? keysetOf(cursor.key, shape.sort !== null) : null;
    if (!(await isCiVisible(app.sql, principal, params.ci_id))) {
      throw notFound('Configuration item not found', { ci_id: params.ci_id });
    }
    const criteria: RelationshipCriteria = { ...shape, ciId: params.ci_id, limit: query.limit, offset: query.offset, after };
    // the walk's total is counted on its first page and travels in the cursor from there
    const [total, page] = await Promise.all([
      cursor?.total ?? countRelationships(app.sql, principal, criteria),
      relationshipPage(app.sql, principal, criteria),
    ]);
    return {
      items: page.rows.map(presentRelationship),
      total,
      offset: query.offset,
      limit: query.limit,
      has_more: page.hasMore,
      next_cursor: page.last ? encodeCursor(app.config.secret, binding, cursorPosition(page.last), total) : null,
    };
  },
});

export const relationshipRoutes: AnyRoute[] = [list];
