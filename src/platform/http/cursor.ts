import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { stringify } from 'safe-stable-stringify';
import { normalizeScopes, type Principal } from '../auth/principal.js';
import { derivedKey } from '../config/derived-key.js';
import { unprocessable } from '../errors.js';

/**
 * What a cursor is bound to. A cursor replayed against anything else (another tenant, principal,
 * route, resource, sort or filter set) is refused with a route 422.
 */
export interface CursorBinding {
  tenantId: string;
  /**
   * Who walks: a page, and a total carried from the first one, are what this principal may see, so
   * a cursor issued to another principal (or to this one before its data scopes changed) is refused.
   */
  reader: Principal;
  /** The route and the resource it walks, e.g. `relationships:<ci_id>`. */
  scope: string;
  /** `<field>:<asc|desc>` for a sorted walk, null for the natural order. */
  sort: string | null;
  /** Every parameter that shapes the result set (filters, direction, ...), hashed. */
  filters: Record<string, unknown>;
}

interface CursorBody {
  v: 1;
  t: string;
  s: string;
  o: string | null;
  f: string;
  /** A digest of the reader: the principal and the data scopes it reads with. */
  p: string;
  /** The keyset position: the sort values of the last row handed out. */
  k: unknown[];
  /** The walk's total, counted on its first page and carried along, so no page counts again. */
  n?: number;
}

/** What a cursor carries: where the walk stands, and its total when the walk has one. */
export interface CursorState {
  key: unknown[];
  total: number | undefined;
}

const VERSION = 1;

const signingKey = (secret: string): Buffer => derivedKey(secret, 'cinv cursor signing v1');

const filterHash = (filters: Record<string, unknown>): string =>
  createHash('sha256')
    .update(stringify(filters) ?? '')
    .digest('base64url')
    .slice(0, 22);

/** The principal a walk reads as, and what bounds what it sees: its identity, superadmin flag and data scopes. */
function readerHash(principal: Principal): string {
  const scopes = principal.superadmin || principal.scopes === 'all' ? 'all' : normalizeScopes(principal.scopes);
  const sorted = scopes === 'all' ? 'all' : scopes.map((s) => `${s.sourceId}\u0000${s.scopeId ?? ''}`).sort();
  return createHash('sha256')
    .update(stringify([principal.tenantId, principal.kind, principal.id, principal.superadmin, sorted]) ?? '')
    .digest('base64url')
    .slice(0, 22);
}

/** An opaque cursor: base64url(JSON body) "." base64url(HMAC-SHA256 of the body). */
export function encodeCursor(secret: string, binding: CursorBinding, position: unknown[], total?: number): string {
  const body: CursorBody = {
    v: VERSION,
    t: binding.tenantId,
    s: binding.scope,
    o: binding.sort,
    f: filterHash(binding.filters),
    p: readerHash(binding.reader),
    k: position,
  };
  if (total !== undefined) body.n = total;
  const encoded = Buffer.from(JSON.stringify(body)).toString('base64url');
  const signature = createHmac('sha256', signingKey(secret)).update(encoded).digest('base64url');
  return `${encoded}.${signature}`;
}

const sortText = (sort: string | null): string =>
  sort ? `sort_by=${sort.replace(':', ' sort_order=')}` : 'no sort_by';

/** The state of a cursor issued for exactly this binding; otherwise a route 422. */
export function decodeCursor(secret: string, cursor: string, binding: CursorBinding): CursorState {
  const [encoded, signature, extra] = cursor.split('.');
  if (!encoded || !signature || extra !== undefined) throw unprocessable('Malformed cursor');
  const expected = createHmac('sha256', signingKey(secret)).update(encoded).digest();
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw unprocessable('Invalid cursor: it was altered, truncated or not issued by this service');
  }
  let body: CursorBody;
  try {
    body = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8')) as CursorBody;
  } catch {
    throw unprocessable('Malformed cursor');
  }
  if (
    body.v !== VERSION ||
    !Array.isArray(body.k) ||
    (body.n !== undefined && !(Number.isSafeInteger(body.n) && body.n >= 0))
  ) {
    throw unprocessable('Malformed cursor');
  }
  if (body.t !== binding.tenantId || body.s !== binding.scope)
    throw unprocessable('Cursor belongs to a different resource');
  // after the resource: a cursor of another tenant says so first, and tells nothing of its issuer
  if (body.p !== readerHash(binding.reader)) {
    throw unprocessable(
      'Invalid cursor: it was issued to another principal, or before your data scopes changed; start the walk again',
      {
        reason: 'foreign_cursor',
      },
    );
  }
  if (body.o !== binding.sort) {
    throw unprocessable(
      `Cursor was issued with ${sortText(body.o)}; replay it with the same sorting (got ${sortText(binding.sort)})`,
    );
  }
  if (body.f !== filterHash(binding.filters)) throw unprocessable('Cursor was issued for a different filter set');
  return { key: body.k, total: body.n };
}
