import type { Principal } from '../auth/principal.js';
import type { AppContext } from '../context.js';
import { notFound } from '../errors.js';
import { archiveWithHistory } from '../inventory/archive.js';
import { parseFilters } from '../query/filters.js';
import { CI_FILTERS, type CiListQuery } from './schema.js';
import { findCiDetail, findVisibleCi, isCiVisible, listCis, type CiDetailRow, type CiPage } from './store.js';

export type { CiDetailRow, CiPage, CiRow } from './store.js';

export interface CiListing {
  page: CiPage;
  /** Whether the rows carry type data instead of raw_data (`include_type_data` with a `ci_type` filter). */
  typeData: boolean;
}

/**
 * The list rules: `status` defaults to `active` unless a `status` filter is given, and type data
 * replaces raw_data only when the list is narrowed to CI types.
 */
export async function listConfigurationItems(app: AppContext, principal: Principal, query: CiListQuery): Promise<CiListing> {
  const filters = parseFilters(query.filter, CI_FILTERS);
  const statusFiltered = filters.some((f) => f.field === 'status');
  const status = query.status ?? (statusFiltered ? 'all' : 'active');
  const typeData = query.include_type_data && filters.some((f) => f.field === 'ci_type');
  const page = await listCis(
    app.sql,
    principal,
    {
      statuses: status === 'all' ? 'any' : [status],
      filters,
      sortBy: query.sort_by,
      sortOrder: query.sort_order,
      limit: query.limit,
      offset: query.offset,
      withTypeData: typeData,
      text: query.q?.trim() || undefined,
      sourceId: query.source_id,
    },
    { countTimeoutMs: app.config.countTimeoutMs, embedded: app.database === 'embedded' },
  );
  return { page, typeData };
}

/** One CI as its detail shows it; 404 when it does not exist or lies outside the principal's data scopes. */
export async function ciDetailOr404(app: AppContext, principal: Principal, ciId: string): Promise<CiDetailRow> {
  const row = await findCiDetail(app.sql, principal, ciId);
  if (!row) throw notFound('Configuration item not found', { ci_id: ciId });
  return row;
}

/** Whether the CI exists and the principal may see it: the question other features ask before reading around a CI. */
export function ciIsVisible(app: AppContext, principal: Principal, ciId: string): Promise<boolean> {
  return isCiVisible(app.sql, principal, ciId);
}

export interface ArchiveOutcome {
  ci_id: string;
  status_updated_at: Date;
  /** False when the CI was archived already (nothing changed). */
  archived: boolean;
}

/**
 * Archives a CI with its `DELETED` change record in one transaction; the row is locked so that a
 * concurrent reconcile cannot revive it in between. Archiving an archived CI changes nothing.
 */
export function archiveConfigurationItem(app: AppContext, principal: Principal, ciId: string): Promise<ArchiveOutcome> {
  return app.sql.begin(async (tx) => {
    const row = await findVisibleCi(tx, principal, ciId, true);
    if (!row) throw notFound('Configuration item not found', { ci_id: ciId });
    if (row.status === 'archived') return { ci_id: row.ci_id, status_updated_at: row.status_updated_at!, archived: false };
    const [archived] = await archiveWithHistory(tx, principal.tenantId, [row.ci_id], app.now());
    return { ci_id: row.ci_id, status_updated_at: archived!.status_updated_at, archived: true };
  });
}
