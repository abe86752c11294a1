import type { Principal } from '../../platform/auth/principal.js';
import { resolveMoment } from '../../history/baselines/service.js';
import { ciChangesBetween } from '../../history/changes/service.js';
import { CI_FILTERS } from '../configuration-items/schema.js';
import { ciAt, searchedText } from '../configuration-items/service.js';
import type { AppContext } from '../../context.js';
import { notFound, unprocessable, validationFailed } from '../../platform/errors.js';
import { decodeCursor, encodeCursor, type CursorBinding } from '../../platform/http/cursor.js';
import { diffStates, type FieldChange } from '../../history/records/diff.js';
import type { CiState } from '../../history/records/as-of.js';
import { isUuid, parseFilters } from '../../platform/query/filters.js';
import { relationshipChanges } from '../relationships/service.js';
import type { CiDiffQuery, InventoryDiffQuery } from './schema.js';
import { diffCounts, diffPage, type DiffCriteria } from './store.js';

/** The two moments of a diff, resolved (baseline names become their moments) and in order. */
async function momentsOf(
  app: AppContext,
  principal: Principal,
  query: { from: string; to?: string },
): Promise<{ from: string; to: string }> {
  const from = await resolveMoment(app, principal, 'from', query.from);
  const to = query.to === undefined ? app.now().toISOString() : await resolveMoment(app, principal, 'to', query.to);
  if (Date.parse(from) > Date.parse(to)) {
    throw validationFailed([{ field: 'to', location: 'query', message: `must not lie before from (${from})` }]);
  }
  return { from, to };
}

/** What a diff compares of a CI: what it is, not when it was written (updated_at) or seen (last_seen). */
function compared(state: CiState | undefined): Record<string, unknown> {
  if (!state) return {};
  const { name, namespace, ci_type, status, status_updated_at, scope_id, raw_data, type_data } = state;
  return JSON.parse(
    JSON.stringify({ name, namespace, ci_type, status, status_updated_at, scope_id, raw_data, type_data }),
  );
}

export interface CiDiff {
  ci_id: string;
  from: string;
  to: string;
  existed: { from: boolean; to: boolean };
  fields: FieldChange[];
  relationships: Awaited<ReturnType<typeof relationshipChanges>>;
  changes: { total: number; href: string };
}

/** One CI between two moments: its net field differences, relationships added and removed, and the records in between. */
export async function ciDiff(app: AppContext, principal: Principal, ciId: string, query: CiDiffQuery): Promise<CiDiff> {
  const { from, to } = await momentsOf(app, principal, query);
  const [before, after] = await Promise.all([ciAt(app, principal, ciId, from), ciAt(app, principal, ciId, to)]);
  if (!before && !after) throw notFound('Configuration item not found at either moment', { ci_id: ciId, from, to });
  const fields = diffStates('', compared(before), compared(after));
  const [relationships, total] = await Promise.all([
    relationshipChanges(app, principal, ciId, from, to),
    ciChangesBetween(app, principal, ciId, from, to),
  ]);
  const href =
    `/api/v1/changes?filter=${encodeURIComponent(`ci_id:eq:${ciId}`)}&filter=${encodeURIComponent(`changed_at:gt:${from}`)}` +
    `&filter=${encodeURIComponent(`changed_at:lte:${to}`)}&sort_by=changed_at&sort_order=asc`;
  return {
    ci_id: ciId,
    from,
    to,
    existed: { from: before !== undefined, to: after !== undefined },
    fields,
    relationships,
    changes: { total, href },
  };
}

interface DifferencesQuery {
  from: string;
  to: string;
  filter?: string[];
  status?: string;
  q?: string;
  source_id?: string;
  limit: number;
  /** Continue after this CI id. */
  after?: string;
  /** Count by type too (the first page of a walk). */
  counts: boolean;
}

/**
 * How the inventory differs between two valid moments (see checkedAsOf), with the list's filters
 * applied to each moment's state: a CI appears when it matches at `to` only, disappears when it
 * matches at `from` only, and changed when it matches at both and differs. `status` defaults to
 * every status, so that archiving shows as a change of status.
 */
async function inventoryDifferences(app: AppContext, principal: Principal, query: DifferencesQuery) {
  const filters = parseFilters(query.filter, CI_FILTERS);
  if (filters.some((f) => f.field === 'last_seen')) {
    throw validationFailed([
      { field: 'filter', location: 'query', message: 'last_seen is not history: a diff cannot be filtered by it' },
    ]);
  }
  const status = query.status ?? 'all';
  const criteria: DiffCriteria = {
    statuses: status === 'all' ? 'any' : [status],
    filters,
    text: await searchedText(app, principal, query.q),
    sourceId: query.source_id,
    from: query.from,
    to: query.to,
    limit: query.limit,
    after: query.after,
    examine: app.config.diffPageExamine,
  };
  const [page, counts] = await Promise.all([
    diffPage(app.sql, principal, criteria),
    query.counts ? diffCounts(app.sql, principal, criteria) : undefined,
  ]);
  const full = page.rows.length > query.limit;
  const rows = full ? page.rows.slice(0, query.limit) : page.rows;
  // a page that stopped short goes on after the last candidate it examined
  const resumeAfter = full ? rows[rows.length - 1]!.ci_id : page.resumeAfter;
  return { rows, hasMore: resumeAfter !== undefined, resumeAfter, counts };
}

/** The inventory between two moments, a page at a time; counted by type on the first page. */
export async function inventoryDiff(app: AppContext, principal: Principal, query: InventoryDiffQuery) {
  const { from, to } = await momentsOf(app, principal, query);
  const binding: CursorBinding = {
    tenantId: principal.tenantId,
    reader: principal,
    scope: 'inventory-diff',
    sort: 'ci_id:asc',
    filters: {
      from,
      to,
      status: query.status ?? 'all',
      filter: query.filter ?? [],
      q: query.q?.trim() ?? '',
      source_id: query.source_id ?? '',
    },
  };
  const cursor = query.cursor ? decodeCursor(app.config.secret, query.cursor, binding) : undefined;
  const after = cursor?.key[0];
  if (cursor && (cursor.key.length !== 1 || typeof after !== 'string' || !isUuid(after)))
    throw unprocessable('Malformed cursor');
  const page = await inventoryDifferences(app, principal, {
    ...query,
    from,
    to,
    after: after as string | undefined,
    counts: cursor === undefined,
  });
  const counts = page.counts && {
    appeared: page.counts.reduce((n, c) => n + c.appeared, 0),
    disappeared: page.counts.reduce((n, c) => n + c.disappeared, 0),
    changed: page.counts.reduce((n, c) => n + c.changed, 0),
    by_type: page.counts,
  };
  return {
    from,
    to,
    counts: counts ?? null,
    items: page.rows,
    has_more: page.hasMore,
    next_cursor: page.resumeAfter !== undefined ? encodeCursor(app.config.secret, binding, [page.resumeAfter]) : null,
  };
}
