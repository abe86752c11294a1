import type { Principal } from '../../platform/auth/principal.js';
import { checkedAsOf, ciIsVisible, ciIsVisibleAt } from '../configuration-items/service.js';
import type { AppContext } from '../../context.js';
import { notFound, unprocessable } from '../../platform/errors.js';
import { decodeCursor, encodeCursor, type CursorBinding } from '../../platform/http/cursor.js';
import {
  DIRECTIONS,
  RELATIONSHIP_SORT_FIELDS,
  type Direction,
  type RelationshipListQuery,
  type RelationshipSortField,
} from './schema.js';
import { commaList } from './graph.js';
import {
  countRelationships,
  edgesChangedBetween,
  relationshipPage,
  type Keyset,
  type RelationshipCriteria,
  type RelationshipRow,
} from './store.js';

export type { RelationshipRow } from './store.js';

type ResultShape = Pick<RelationshipCriteria, 'direction' | 'types' | 'includeInactive' | 'sort'>;

const isOneOf = <T extends string>(values: readonly T[], value: string): value is T =>
  (values as readonly string[]).includes(value);

function readDirection(raw: string | undefined): Direction | null {
  if (raw === undefined) return null;
  if (!isOneOf(DIRECTIONS, raw)) {
    throw unprocessable(`Invalid direction "${raw}"; use outgoing or incoming, or omit it for both`, {
      parameter: 'direction',
      allowed: DIRECTIONS,
    });
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
    throw unprocessable('sort_by cannot be combined with an offset above 0; walk sorted results with next_cursor', {
      parameter: 'offset',
    });
  }
  return { field: query.sort_by as RelationshipSortField, order: query.sort_order ?? 'asc' };
}

function readShape(query: RelationshipListQuery): ResultShape {
  return {
    direction: readDirection(query.direction),
    types: commaList(query.relationship_types),
    includeInactive: query.include_inactive,
    sort: readSort(query),
  };
}

function bindingOf(principal: Principal, ciId: string, shape: ResultShape, asOf: string | undefined): CursorBinding {
  return {
    tenantId: principal.tenantId,
    reader: principal,
    scope: `relationships:${ciId}`,
    sort: shape.sort ? `${shape.sort.field}:${shape.sort.order}` : null,
    filters: {
      direction: shape.direction,
      relationship_types: shape.types,
      include_inactive: shape.includeInactive,
      ...(asOf ? { as_of: asOf } : {}),
    },
  };
}

const cursorPosition = (keyset: Keyset): unknown[] =>
  keyset.sortValue === undefined
    ? [keyset.directionRank, keyset.id]
    : [keyset.sortValue, keyset.directionRank, keyset.id];

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

export interface RelationshipWalkPage {
  rows: RelationshipRow[];
  total: number;
  hasMore: boolean;
  nextCursor: string | null;
}

/**
 * One page of a CI's relationships under the spec's paging rules: the shape of the result (direction,
 * types, sort) binds the cursor, the walk's total is counted on its first page and travels in the
 * cursor from there, and a CI the principal may not see is a 404.
 */
export async function relationshipsOf(
  app: AppContext,
  principal: Principal,
  ciId: string,
  query: RelationshipListQuery,
): Promise<RelationshipWalkPage> {
  const shape = readShape(query);
  const asOf = query.as_of === undefined ? undefined : await checkedAsOf(app, query.as_of);
  const binding = bindingOf(principal, ciId, shape, asOf);
  const cursor = query.cursor ? decodeCursor(app.config.secret, query.cursor, binding) : undefined;
  const after = cursor ? keysetOf(cursor.key, shape.sort !== null) : null;
  if (asOf !== undefined) {
    if (!(await ciIsVisibleAt(app, principal, ciId, asOf)))
      throw notFound('Configuration item not found at that moment', { ci_id: ciId, as_of: asOf });
  } else if (!(await ciIsVisible(app, principal, ciId))) {
    throw notFound('Configuration item not found', { ci_id: ciId });
  }
  const criteria: RelationshipCriteria = { ...shape, ciId, limit: query.limit, offset: query.offset, after, asOf };
  const [total, page] = await Promise.all([
    cursor?.total ?? countRelationships(app.sql, principal, criteria),
    relationshipPage(app.sql, principal, criteria),
  ]);
  return {
    rows: page.rows,
    total,
    hasMore: page.hasMore,
    nextCursor: page.last ? encodeCursor(app.config.secret, binding, cursorPosition(page.last), total) : null,
  };
}

/** The relationships of a CI added and removed between two moments (valid moments, see checkedAsOf). */
export function relationshipChanges(app: AppContext, principal: Principal, ciId: string, from: string, to: string) {
  return edgesChangedBetween(app.sql, principal, ciId, from, to);
}
