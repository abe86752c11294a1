import type { Context } from 'koa';
import type { Principal } from '../../platform/auth/principal.js';
import { notAcceptable } from '../../platform/errors.js';
import { defineRoute, type AnyRoute } from '../../context.js';
import { asLongPoll } from '../../platform/http/load.js';
import { ErrorEnvelope } from '../../platform/http/schemas.js';
import { presentChange, presentLine, presentOwned } from './presenter.js';
import {
  ChangeList,
  ChangeListQuery,
  CiChangePage,
  CiChangesParams,
  CiChangesQuery,
  FeedPage,
  FeedQuery,
} from './schema.js';
import { feedCursor, readFeed } from './feed.js';
import { ciHistory as ciHistoryPage, exportChanges, listChangePage, rolledUpChangePage } from './service.js';

const tags = ['Change history'];
const access = { resource: 'changes', action: 'read' } as const;

const ciHistory = defineRoute({
  method: 'GET',
  path: '/api/v1/ci-changes/{ci_id}',
  operationId: 'listCiChanges',
  analystRead: true,
  summary: 'Change history of one configuration item',
  description:
    'Newest first (by `changed_at`, then change id). The first page may skip `offset` records; `next_cursor` continues by ' +
    'keyset, and `offset` is then ignored but echoed unchanged. `total` counts every change record of the CI the key may ' +
    'see; records without field changes are counted but not listed, so a page can hold fewer than `limit` items (even ' +
    'none) while `has_more` is true. Stop when `has_more` is false / `next_cursor` is null. History stays readable after ' +
    'the CI was removed permanently; data scopes apply to the source and instance recorded with each change. An id with ' +
    'neither a visible CI nor visible history is 404. A cursor is bound to the tenant and the CI; a tampered or foreign ' +
    'cursor is a 422 (`HTTP_422`).',
  tags,
  access,
  params: CiChangesParams,
  query: CiChangesQuery,
  responses: { 200: { description: "A page of the CI's change records.", schema: CiChangePage } },
  async handler({ app, principal, params, query }) {
    const page = await ciHistoryPage(app, principal, params.ci_id, query);
    return {
      items: page.lines
        ? page.lines.map(presentLine)
        : page.owned
          ? page.owned.map(presentOwned)
          : page.rows.map(presentChange),
      total: page.total,
      offset: query.offset,
      limit: query.limit,
      has_more: page.hasMore,
      next_cursor: page.nextCursor,
    };
  },
});

const CSV = 'text/csv';
const JSON_TYPE = 'application/json';

/** `changes-20260301T101500Z.csv` */
const exportFileName = (now: Date): string =>
  `changes-${now
    .toISOString()
    .replace(/\.\d+Z$/, 'Z')
    .replace(/[-:]/g, '')}.csv`;

function negotiate(ctx: Context): typeof CSV | typeof JSON_TYPE {
  ctx.vary('Accept');
  const type = ctx.accepts(JSON_TYPE, CSV);
  if (type === JSON_TYPE || type === CSV) return type;
  throw notAcceptable([JSON_TYPE, CSV]);
}

const globalHistory = defineRoute({
  method: 'GET',
  path: '/api/v1/changes',
  operationId: 'listChanges',
  analystRead: true,
  summary: 'Global change history (JSON or CSV)',
  description:
    'Change records of every CI the key may see (data scopes apply to the source and instance recorded with each change, ' +
    'so history of removed CIs stays listed). Records without field changes are left out, so `total` is what offset ' +
    'paging can reach. `Accept: application/json` (also for `*/*` or no Accept) gives `{items, total, limit, offset}`; ' +
    '`Accept: text/csv` streams a download (`Content-Disposition: attachment; filename="changes-<UTC timestamp>.csv"`) ' +
    'with a header row and one row per field change: change_id, changed_at, change_type, ci_id, ci_name, ci_namespace, ' +
    'ci_type, field, old_value, new_value. A value that is text is written as the text, a number or boolean as its ' +
    'literal, null as an empty cell, and only objects and arrays as JSON text (which parses back exactly). A text cell ' +
    "starting with `=`, `+`, `-`, `@`, TAB or CR (a name, a field value) is prefixed with `'` so that spreadsheets do not " +
    'run it as a formula; numbers, negative ones too, stay literals. The CSV applies the same filters, search, dates, sort ' +
    'and scopes; it holds every match unless ' +
    '`limit`/`offset` are given explicitly (they then count change records, not rows). Any other Accept is 406. ' +
    'A malformed or reversed date is a 422 `VALIDATION_ERROR` naming the parameter.',
  tags,
  access,
  query: ChangeListQuery,
  responses: {
    200: {
      description: 'A page of change records, or the CSV download.',
      schema: ChangeList,
      otherContent: {
        [CSV]: {
          description:
            "RFC 4180 CSV, UTF-8, streamed; one row per field change; formula-like text cells prefixed with `'`.",
        },
      },
    },
    404: { description: '`related_to` names no CI the key may see (`HTTP_404`).', schema: ErrorEnvelope },
    406: { description: 'The Accept header names no type this route serves (`HTTP_406`).', schema: ErrorEnvelope },
  },
  async handler({ ctx, app, principal, query }) {
    if (negotiate(ctx) === JSON_TYPE && query.rollup) {
      const page = await rolledUpChangePage(app, principal, query);
      const items = page.lines ? page.lines.map(presentLine) : (page.owned ?? []).map(presentOwned);
      return { items, total: page.total, total_exact: true, limit: query.limit, offset: query.offset };
    }
    if (negotiate(ctx) === JSON_TYPE) {
      const { rows, total, totalExact } = await listChangePage(app, principal, query);
      return {
        items: rows.map(presentChange),
        total,
        total_exact: totalExact,
        limit: query.limit,
        offset: query.offset,
      };
    }
    const explicitLimit = ctx.query.limit !== undefined ? query.limit : undefined;
    const body = await exportChanges(app, principal, query, explicitLimit);
    ctx.attachment(exportFileName(app.now()));
    ctx.type = 'text/csv; charset=utf-8';
    ctx.body = body;
    return undefined;
  },
});

/** Whose long polls count together: a user's tokens and sessions are one person's. */
const longPollHolder = (principal: Principal): string =>
  `${principal.tenantId}:${principal.user ? `user:${principal.user.id}` : `${principal.kind}:${principal.id}`}`;

const RETRY_AFTER = { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } } };

const feed = defineRoute({
  method: 'GET',
  path: '/api/v1/changes/feed',
  operationId: 'readChangeFeed',
  summary: 'The change feed: every change record in commit order, from a cursor',
  description:
    'Every change record the key may see, in the order the transactions that wrote them committed (within one, in write ' +
    'order), after `after`. A consumer that follows `next_cursor` sees each record exactly once: a place is handed out ' +
    'only when a transaction commits, so no record can appear behind a place already read (records with lower ids ' +
    'committing late included). Data scopes and filters apply at each read; the cursor moves past what they leave out, ' +
    'so a page can be empty while `caught_up` is false: read on at once. With `wait`, a read at the end of the feed ' +
    'waits up to that many seconds for the next record. Records without field changes are left out, as on ' +
    '`GET /changes`. Records written before the feed existed (an upgraded installation) are not in it; records dropped ' +
    'by retention leave it with them. A malformed `after` is a 422. A read with `wait` is a long poll: while it waits it ' +
    'does not count against CINV_MAX_IN_FLIGHT, but one principal keeps at most CINV_MAX_LONG_POLLS_PER_PRINCIPAL (4) ' +
    'waiting at once (more are a 429, `details.reason` `long_polls`) and the process at most CINV_MAX_LONG_POLLS (64; more ' +
    'are a 503 `long_polls_busy`).',
  tags,
  access,
  query: FeedQuery,
  responses: {
    200: { description: 'The records after the cursor, and where to continue.', schema: FeedPage },
    429: {
      description:
        'Too many requests from this credential (`HTTP_429`, with `Retry-After`): over its rate limit (`X-RateLimit-*` headers), ' +
        'or a read with `wait` while the principal already keeps CINV_MAX_LONG_POLLS_PER_PRINCIPAL reads waiting ' +
        '(`details.reason`: `long_polls`, `details.limit`).',
      schema: ErrorEnvelope,
      headers: RETRY_AFTER,
    },
  },
  async handler({ ctx, app, principal, query }) {
    const gone = new AbortController();
    const abort = () => gone.abort();
    ctx.res.once('close', abort);
    try {
      const read =
        query.wait > 0
          ? await asLongPoll(ctx, longPollHolder(principal), (aside) =>
              readFeed(app, principal, query, gone.signal, aside),
            )
          : await readFeed(app, principal, query, gone.signal);
      return { items: read.items.map(presentChange), next_cursor: feedCursor(read.next), caught_up: read.caughtUp };
    } finally {
      ctx.res.off('close', abort);
    }
  },
});

export const changeRoutes: AnyRoute[] = [ciHistory, feed, globalHistory];
