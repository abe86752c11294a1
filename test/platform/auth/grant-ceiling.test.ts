import { expect } from 'chai';
import fc from 'fast-check';
import { assertWithinCeiling, beyond, type Rights } from '../../../src/platform/auth/grant-ceiling.js';
import {
  everyPermission,
  type DataScope,
  type Permission,
  type Principal,
} from '../../../src/platform/auth/principal.js';
import { AppError } from '../../../src/platform/errors.js';
import { contains, type Rights as ModelRights } from '../../support/rights-oracle.js';

const PERMISSIONS = [...everyPermission()];
const SOURCES = ['1', '2', '3'];

const scope: fc.Arbitrary<DataScope> = fc.oneof(
  { arbitrary: fc.constant({ sourceId: null, scopeId: null }), weight: 1 },
  { arbitrary: fc.record({ sourceId: fc.constantFrom(...SOURCES), scopeId: fc.constant(null) }), weight: 3 },
  {
    arbitrary: fc.record({ sourceId: fc.constantFrom(...SOURCES), scopeId: fc.constantFrom('a', 'b', 'c') }),
    weight: 6,
  },
);
const scopes = fc.oneof(
  { arbitrary: fc.constant('all' as const), weight: 1 },
  { arbitrary: fc.array(scope, { maxLength: 4 }), weight: 5 },
);
const rights: fc.Arbitrary<Rights & { permissions: Permission[] }> = fc.record({
  superadmin: fc.oneof({ arbitrary: fc.constant(false), weight: 9 }, { arbitrary: fc.constant(true), weight: 1 }),
  permissions: fc.subarray(PERMISSIONS),
  scopes,
});

const principal = (r: Rights & { permissions: Permission[] }): Principal => ({
  tenantId: 't',
  kind: 'api_key',
  id: 'k',
  name: 'caller',
  tier: 'svc',
  superadmin: r.superadmin === true,
  permissions: new Set(r.permissions),
  scopes: r.scopes === 'all' ? 'all' : r.scopes,
});
const model = (r: Rights & { permissions: Permission[] }): ModelRights => ({
  superadmin: r.superadmin,
  permissions: r.permissions,
  scopes: r.scopes === 'all' ? 'all' : r.scopes.map((s) => ({ source_id: s.sourceId, scope_id: s.scopeId })),
});

function refusal(caller: Principal, wanted: Rights): AppError | undefined {
  try {
    assertWithinCeiling(caller, [{ subject: 'the new key', after: wanted }]);
    return undefined;
  } catch (error) {
    if (error instanceof AppError) return error;
    throw error;
  }
}

describe('grant ceiling (property tests against an independent model of data scopes)', () => {
  it('allows a grant exactly when the caller holds all of it, and a refusal names only what exceeds', () => {
    fc.assert(
      fc.property(rights, rights, (caller, wanted) => {
        const refused = refusal(principal(caller), wanted);
        const within = contains(model(caller), model(wanted), SOURCES);
        expect(refused === undefined, JSON.stringify({ caller, wanted })).to.equal(within);
        if (!refused) return;
        expect(refused.status).to.equal(403);
        const exceeding = refused.details.exceeding as {
          permissions: Permission[];
          scopes: { source_id: string | null; scope_id: string | null }[];
          superadmin: boolean;
        };
        // each named excess really exceeds: the caller with it added would hold it
        for (const p of exceeding.permissions) expect(caller.permissions).to.not.include(p);
        for (const s of exceeding.scopes)
          expect(contains(model(caller), { permissions: [], scopes: [s] }, SOURCES)).to.equal(false);
      }),
      { numRuns: 2000 },
    );
  });

  it('never lets a change grow a principal beyond the caller, whatever it held before', () => {
    fc.assert(
      fc.property(rights, rights, rights, (caller, before, after) => {
        let refused = false;
        try {
          assertWithinCeiling(principal(caller), [{ subject: 'user x', before, after }]);
        } catch {
          refused = true;
        }
        const grew = beyond(before, after) !== undefined;
        if (!refused && grew)
          expect(contains(model(caller), model(after), SOURCES), JSON.stringify({ caller, before, after })).to.equal(
            true,
          );
        // taking rights away is never refused
        if (!grew) expect(refused).to.equal(false);
      }),
      { numRuns: 2000 },
    );
  });
});
