import type { Sql } from 'postgres';
import { tenantReader } from '../../platform/auth/principal.js';
import type { Fragment } from '../../platform/auth/scope.js';
import type { Expr } from '../../platform/query-language/ast.js';
import { predicate } from './predicates.js';

/** Why a match cannot stand as a check kept per CI, and where; undefined when it can. */
export function unsteady(e: Expr): { at: Expr['at']; message: string } | undefined {
  switch (e.kind) {
    case 'and':
    case 'or':
      return e.items.map(unsteady).find((found) => found !== undefined);
    case 'not':
      return unsteady(e.expr);
    case 'changed':
    case 'created':
    case 'archived':
      return { at: e.at, message: 'a check kept per CI cannot read history' };
    case 'any':
      return undefined;
    default: {
      if (e.field.name === 'last_seen') return { at: e.at, message: 'a check kept per CI cannot read last_seen' };
      const values = e.kind === 'compare' ? [e.value] : e.kind === 'in' ? e.values : [];
      if (values.some((v) => v.type === 'time' && v.text.toLowerCase().startsWith('now')))
        return { at: e.at, message: 'a check kept per CI cannot compare with now' };
      return undefined;
    }
  }
}

/**
 * The SQL condition of a standing match (see standingMatch) on the CI row `row` of a tenant, for
 * checks that run for the whole tenant: no principal's scopes narrow it.
 */
export function standingCondition(sql: Sql, tenantId: string, e: Expr, row: string, now: Date): Fragment {
  return predicate({ sql, principal: tenantReader(tenantId), moment: now, asOf: undefined }, row, e);
}
