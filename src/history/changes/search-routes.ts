import { defineRoute, type AnyRoute } from '../../context.js';
import { ErrorEnvelope } from '../../platform/http/schemas.js';
import { presentChange, presentStats } from './presenter.js';
import { RefreshResponse, SEARCH_SYNTAX, SearchQuery, SearchResponse, Stats, StatsQuery } from './search-schema.js';
import { changeStatistics, refreshChangeStatistics, searchChanges } from './service.js';

const tags = ['Change history'];

const search = defineRoute({
  method: 'GET',
  path: '/api/v1/changes/search',
  operationId: 'searchChanges',
  analystRead: true,
  summary: 'Full-text search of the change history',
  description:
    `${SEARCH_SYNTAX} Filters, dates and data scopes apply as on \`GET /changes\`; records without field changes are ` +
    'not searched. Results are ranked by relevance, newest first among equals; each carries `score` and `matched` ' +
    '(where it matched, with an excerpt). On PostgreSQL, a query with more than 10 000 matches ranks the 10 000 most ' +
    'recent and `total` may be an estimate (`total_exact: false`); narrow it with words, filters or dates.',
  tags,
  access: { resource: 'changes', action: 'read' },
  query: SearchQuery,
  responses: { 200: { description: 'A page of matching change records.', schema: SearchResponse } },
  async handler({ app, principal, query }) {
    const result = await searchChanges(app, principal, query);
    return {
      items: result.items.map((hit) => ({ ...presentChange(hit), score: hit.score, matched: hit.matched })),
      total: result.total,
      total_exact: result.totalExact,
      offset: query.offset,
      limit: query.limit,
      took_ms: result.tookMs,
      query: query.query,
    };
  },
});

const stats = defineRoute({
  method: 'GET',
  path: '/api/v1/changes/stats',
  operationId: 'changeStatistics',
  analystRead: true,
  summary: 'Statistics of the change history',
  description:
    'Without `start_date` (and `end_date`): the last 90 days, from a pre-aggregate. Change records written since its ' +
    'last refresh are folded in before the answer (up to 20 000 of them; a larger backlog, such as a first load, is ' +
    'folded behind the answer and by the refresh every few minutes, CINV_STATS_REFRESH_SCHEDULE, or ' +
    '`POST /changes/refresh-stats`); `time_range.end` is the moment up to which the figures count. With ' +
    '`start_date` or `end_date`: computed from the full history of that window (a missing `start_date` means 90 ' +
    'days before now, a missing `end_date` now). A window that cannot be computed within CINV_STATS_TIMEOUT answers ' +
    '422 (`HTTP_422`): narrow it with `end_date`. Data scopes apply: a scoped key sees the figures of what it may ' +
    'list. `DELETED` changes count under `archived`; records without field changes are not counted.',
  tags,
  access: { resource: 'changes', action: 'read' },
  query: StatsQuery,
  responses: {
    200: { description: 'The statistics of the window.', schema: Stats },
    404: { description: '`related_to` names no CI the key may see (`HTTP_404`).', schema: ErrorEnvelope },
  },
  async handler({ app, principal, query }) {
    return presentStats(await changeStatistics(app, principal, query));
  },
});

const refresh = defineRoute({
  method: 'POST',
  path: '/api/v1/changes/refresh-stats',
  operationId: 'refreshChangeStatistics',
  summary: 'Refresh the statistics pre-aggregate now',
  description:
    'Folds the change records written since the last refresh into the pre-aggregate (only those: the cost follows ' +
    'what changed, not the history). Runs on a schedule anyway; replicas refreshing at once take turns.',
  tags,
  access: { resource: 'changes', action: 'write' },
  responses: { 200: { description: 'What the refresh did.', schema: RefreshResponse } },
  async handler({ app }) {
    return refreshChangeStatistics(app);
  },
});

export const searchRoutes: AnyRoute[] = [search, stats, refresh];
