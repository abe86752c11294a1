import { Readable } from 'node:stream';
import type { Context } from 'koa';
import { csvRows } from '../../platform/csv.js';
import { notAcceptable } from '../../platform/errors.js';
import { defineRoute, type AnyRoute } from '../../context.js';
import { ErrorEnvelope } from '../../platform/http/schemas.js';
import { AUDIT_CSV_COLUMNS, auditCsvRow, presentAuditEvent } from './presenter.js';
import { AuditPage, AuditQuery } from './schema.js';
import { auditEventBatches, auditEventPage, type StoredAuditEvent } from './service.js';

const CSV = 'text/csv';
const JSON_TYPE = 'application/json';

/** The header, then each batch's rows as one string. */
async function* csvExport(batches: AsyncIterable<StoredAuditEvent[]>): AsyncGenerator<string> {
  yield csvRows([AUDIT_CSV_COLUMNS]);
  for await (const rows of batches) yield csvRows(rows.map(auditCsvRow));
}

function negotiate(ctx: Context): typeof CSV | typeof JSON_TYPE {
  ctx.vary('Accept');
  const type = ctx.accepts(JSON_TYPE, CSV);
  if (type === JSON_TYPE || type === CSV) return type;
  throw notAcceptable([JSON_TYPE, CSV]);
}

const listAudit = defineRoute({
  method: 'GET',
  path: '/api/v1/audit-events',
  operationId: 'listAuditEvents',
  summary: 'The security audit log (JSON or CSV)',
  description:
    'Security-relevant events of the tenant, newest first: successful authentications (one per credential and client ' +
    'address per 5 minutes), failed ones (with the reason and a key hint, never the secret), API key and token creation ' +
    'and revocation, permission denials (with the `error.id` answered), credential reveals, user creation, deactivation, ' +
    'reactivation and promotion, grant and membership changes. Changes of rights and credentials are written with the ' +
    'change itself; authentications and denials within about a second. Events about a source are listed only to readers ' +
    'whose data scopes include it. ' +
    'Cursor-paged: follow `next_cursor` while `has_more` is true; a cursor is bound to the filters it was issued for. ' +
    '`Accept: text/csv` streams every match (or at most an explicit `limit`) with the same filters; `details` is JSON ' +
    "text, and a text cell starting with `=`, `+`, `-`, `@`, TAB or CR (a user agent, a name) is prefixed with `'` so " +
    'that spreadsheets do not run it as a formula. Kept for CINV_AUDIT_RETENTION (default 365 days).',
  tags: ['Audit'],
  access: { resource: 'audit', action: 'read' },
  query: AuditQuery,
  responses: {
    200: {
      description: 'A page of audit events, or the CSV download.',
      schema: AuditPage,
      otherContent: {
        [CSV]: {
          description: "RFC 4180 CSV, UTF-8, streamed; one row per event; formula-like text cells prefixed with `'`.",
        },
      },
    },
    406: { description: 'The Accept header names no type this route serves (`HTTP_406`).', schema: ErrorEnvelope },
  },
  async handler({ ctx, app, principal, query }) {
    if (negotiate(ctx) === CSV) {
      const explicitLimit = ctx.query.limit !== undefined ? query.limit : undefined;
      ctx.attachment(
        `audit-${app
          .now()
          .toISOString()
          .replace(/\.\d+Z$/, 'Z')
          .replace(/[-:]/g, '')}.csv`,
      );
      ctx.type = 'text/csv; charset=utf-8';
      ctx.body = Readable.from(csvExport(auditEventBatches(app, principal, query, explicitLimit)));
      return undefined;
    }
    const page = await auditEventPage(app, principal, query);
    return {
      items: page.rows.map(presentAuditEvent),
      limit: query.limit,
      has_more: page.hasMore,
      next_cursor: page.nextCursor,
    };
  },
});

export const auditRoutes: AnyRoute[] = [listAudit];
