import { expect } from 'chai';
import type { Principal } from '../../../src/platform/auth/principal.js';
import { decodeCursor, encodeCursor, type CursorBinding } from '../../../src/platform/http/cursor.js';

const SECRET = 'unit-secret-unit-secret-unit-secret-0000';
const reader: Principal = {
  tenantId: 't1',
  kind: 'api_key',
  id: 'key-1',
  name: 'scoped',
  tier: 'svc',
  superadmin: false,
  permissions: new Set(['relationships:read']),
  scopes: [
    { sourceId: '5', scopeId: 'pa' },
    { sourceId: '6', scopeId: null },
  ],
};
const binding: CursorBinding = {
  tenantId: 't1',
  reader,
  scope: 'relationships:abc',
  sort: 'related_ci_name:asc',
  filters: { direction: null, types: ['runs_on'] },
};

function reason(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    const e = error as { status: number; code: string; message: string };
    expect(e.status).to.equal(422);
    expect(e.code).to.equal('HTTP_422');
    return e.message;
  }
  throw new Error('expected a 422');
}

describe('cursor', () => {
  it('round-trips the keyset position for the same binding', () => {
    const cursor = encodeCursor(SECRET, binding, ['node-7', 42]);
    expect(cursor).to.match(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(
      decodeCursor(SECRET, cursor, { ...binding, filters: { types: ['runs_on'], direction: null } }),
    ).to.deep.equal({ key: ['node-7', 42], total: undefined });
    expect(decodeCursor(SECRET, encodeCursor(SECRET, binding, ['node-7', 42], 1234), binding)).to.deep.equal({
      key: ['node-7', 42],
      total: 1234,
    });
  });

  it('refuses tampered, truncated, foreign and malformed cursors', () => {
    const cursor = encodeCursor(SECRET, binding, ['x', 1]);
    const [body, sig] = cursor.split('.');
    const forged = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(body!, 'base64url').toString()), k: ['y', 2] }),
    ).toString('base64url');
    expect(reason(() => decodeCursor(SECRET, `${forged}.${sig}`, binding))).to.match(/altered/);
    expect(reason(() => decodeCursor(SECRET, cursor.slice(0, -3), binding))).to.match(/altered|Malformed/);
    expect(reason(() => decodeCursor('another-secret-another-secret-another-1', cursor, binding))).to.match(
      /not issued/,
    );
    expect(reason(() => decodeCursor(SECRET, 'not-a-cursor', binding))).to.match(/Malformed/);
    expect(reason(() => decodeCursor(SECRET, `${cursor}.x`, binding))).to.match(/Malformed/);
  });

  it('refuses a cursor replayed with another tenant, resource, sort or filter set', () => {
    const cursor = encodeCursor(SECRET, binding, ['x', 1]);
    expect(reason(() => decodeCursor(SECRET, cursor, { ...binding, tenantId: 't2' }))).to.match(/different resource/);
    expect(reason(() => decodeCursor(SECRET, cursor, { ...binding, scope: 'relationships:def' }))).to.match(
      /different resource/,
    );
    expect(reason(() => decodeCursor(SECRET, cursor, { ...binding, sort: 'related_ci_name:desc' }))).to.match(
      /same sorting/,
    );
    expect(reason(() => decodeCursor(SECRET, cursor, { ...binding, sort: null }))).to.match(/same sorting/);
    const unsorted = encodeCursor(SECRET, { ...binding, sort: null }, ['x']);
    expect(reason(() => decodeCursor(SECRET, unsorted, binding))).to.match(/no sort_by/);
    expect(
      reason(() =>
        decodeCursor(SECRET, cursor, { ...binding, filters: { direction: 'outgoing', types: ['runs_on'] } }),
      ),
    ).to.match(/filter/);
  });

  it('is bound to its reader: another principal, or the same one with other data scopes, gets a 422', () => {
    const cursor = encodeCursor(SECRET, binding, ['x', 1], 14);
    const foreign = (other: Partial<Principal>) =>
      reason(() => decodeCursor(SECRET, cursor, { ...binding, reader: { ...reader, ...other } }));
    expect(foreign({ id: 'key-2' })).to.match(/^Invalid cursor: it was issued to another principal/);
    expect(foreign({ kind: 'user' })).to.match(/another principal/);
    expect(foreign({ scopes: [{ sourceId: '5', scopeId: 'pa' }] })).to.match(/another principal/);
    expect(foreign({ scopes: 'all' })).to.match(/another principal/);
    expect(foreign({ superadmin: true })).to.match(/another principal/);
    // the same rights, told in another order or with a row the others contain, are the same reader
    const same = {
      ...binding,
      reader: {
        ...reader,
        permissions: new Set<never>(),
        scopes: [
          { sourceId: '6', scopeId: null },
          { sourceId: '6', scopeId: 'x' },
          { sourceId: '5', scopeId: 'pa' },
        ],
      },
    };
    expect(decodeCursor(SECRET, cursor, same)).to.deep.equal({ key: ['x', 1], total: 14 });
  });
});
