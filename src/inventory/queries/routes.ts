import { Readable } from 'node:stream';
import type { Context } from 'koa';
import { csvRows } from '../../platform/csv.js';
import { notAcceptable } from '../../platform/errors.js';
import { defineRoute, type AnyRoute } from '../../context.js';
import type { Principal } from '../../platform/auth/principal.js';
import type { AppContext } from '../../context.js';
import { ErrorEnvelope } from '../../platform/http/schemas.js';
import { csvOf, presentAnswer } from './presenter.js';
import { QUERY_LANGUAGE, QueryParams, QueryRequest, QueryResponse } from './schema.js';
import { CSV_ROW_CAP, queryPages, runQuery, type QueryInput } from './service.js';
import { VocabularyParams, VocabularyResponse } from './vocabulary-schema.js';
import { queryVocabulary } from './vocabulary-service.js';

const CSV = 'text/csv';
const JSON_TYPE = 'application/json';
const tags = ['Query language'];

function negotiate(ctx: Context): typeof CSV | typeof JSON_TYPE {
  ctx.vary('Accept');
  const type = ctx.accepts(JSON_TYPE, CSV);
  if (type === JSON_TYPE || type === CSV) return type;
  throw notAcceptable([JSON_TYPE, CSV]);
}

/** The header, then each page's rows as one string. */
async function* csvExport(pages: ReturnType<typeof queryPages>): AsyncGenerator<string> {
  let first = true;
  for await (const page of pages) {
    yield csvRows(csvOf(page, first));
    first = false;
  }
}

async function answer(ctx: Context, app: AppContext, principal: Principal, input: QueryInput) {
  if (negotiate(ctx) === CSV && !input.explain) {
    const pages = queryPages(app, principal, input);
    // the first page runs before the response starts, so a query error is still an error response
    const first = await pages.next();
    ctx.attachment(
      `query-${app
        .now()
        .toISOString()
        .replace(/\.\d+Z$/, 'Z')
        .replace(/[-:]/g, '')}.csv`,
    );
    ctx.type = 'text/csv; charset=utf-8';
    ctx.body = Readable.from(
      csvExport(
        (async function* () {
          if (!first.done) yield first.value;
          yield* pages;
        })() as ReturnType<typeof queryPages>,
      ),
    );
    return undefined;
  }
  return presentAnswer(await runQuery(app, principal, input));
}

/** `name=value` pairs of a link; a value written as a number is one. */
function paramsFromLink(pairs: readonly string[]): Record<string, string | number> {
  return Object.fromEntries(
    pairs.map((pair) => {
      const [name, value] = [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)];
      return [name, /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value];
    }),
  );
}

const RESPONSES = {
  200: {
    description: 'The answer.',
    schema: QueryResponse,
    otherContent: {
      [CSV]: {
        description: `RFC 4180 CSV, streamed: \`ci_id\` and the chosen columns (at most ${CSV_ROW_CAP} rows), or the groups with \`count\`.`,
      },
    },
  },
  403: {
    description: 'Hops need `relationships:read`, history predicates `changes:read` (`HTTP_403`).',
    schema: ErrorEnvelope,
  },
  404: {
    description: '`saved_view_id` names no saved view the caller may open (`HTTP_404`).',
    schema: ErrorEnvelope,
  },
  406: { description: 'The Accept header names no type this route serves (`HTTP_406`).', schema: ErrorEnvelope },
  422: {
    description:
      'The query does not parse or names what does not exist (`INVALID_QUERY`, with `line`, `column`, `expected`, ' +
      '`excerpt` and `suggestions` in `details`), would read a large table whole (`reason: scan`), or took longer ' +
      'than CINV_QUERY_TIMEOUT (`reason: timeout`).',
    schema: ErrorEnvelope,
  },
};

const postQuery = defineRoute({
  method: 'POST',
  path: '/api/v1/query',
  operationId: 'runQuery',
  analystRead: true,
  summary: 'Run a query-language query',
  description: `${QUERY_LANGUAGE} The answer lies inside the caller's data scopes: nothing outside them is matched, counted, walked through or aggregated. The endpoint has its own rate limit (CINV_QUERY_RATE_LIMIT).`,
  tags,
  access: { resource: 'configuration_items', action: 'read' },
  body: QueryRequest,
  responses: RESPONSES,
  handler: ({ ctx, app, principal, body }) => answer(ctx, app, principal, body),
});

const getQuery = defineRoute({
  method: 'GET',
  path: '/api/v1/query',
  operationId: 'runQueryFromLink',
  analystRead: true,
  summary: 'Run a query-language query given in the URL',
  description: 'The same as `POST /api/v1/query`, with the query in `q`: for links and bookmarks.',
  tags,
  access: { resource: 'configuration_items', action: 'read' },
  query: QueryParams,
  responses: RESPONSES,
  handler: ({ ctx, app, principal, query }) => {
    const { q, param, ...rest } = query;
    return answer(ctx, app, principal, { query: q, params: paramsFromLink(param ?? []), ...rest });
  },
});

const getVocabulary = defineRoute({
  method: 'GET',
  path: '/api/v1/query/vocabulary',
  operationId: 'queryVocabulary',
  analystRead: true,
  summary: 'The names a query may use, for completion',
  description:
    "The CI types the caller may see, the relationship types, the fields, and the JSON paths present in a sample of recent CIs (of `ci_type` if given, below `prefix` if given), all inside the caller's data scopes: what a query editor offers as it completes.",
  tags,
  access: { resource: 'configuration_items', action: 'read' },
  query: VocabularyParams,
  responses: { 200: { description: 'The vocabulary.', schema: VocabularyResponse } },
  handler: ({ app, principal, query }) => queryVocabulary(app, principal, query),
});

export const queryRoutes: readonly AnyRoute[] = [postQuery, getQuery, getVocabulary];
