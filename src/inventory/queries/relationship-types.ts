import type { AppContext } from '../../context.js';
import type { Query } from '../../platform/query-language/ast.js';
import { DEPENDENT_END } from '../relationships/schema.js';
import { relationshipTypesPresent } from './types-store.js';

/**
 * Not a stored relationship: a hop of this type goes from a CI to the other observations of the
 * host identity it observes (docs/identities.md), both ways, and only when named.
 */
export const SAME_IDENTITY = 'same_identity';

/**
 * The relationship types a query may name: those the collector types write, and any other the
 * query names that the tenant's inventory holds (a pushed source may write its own). A type in
 * neither is an error that names the nearest known ones.
 */
export async function knownRelationshipTypes(app: AppContext, query: Query, tenantId: string): Promise<string[]> {
  const known = [...Object.keys(DEPENDENT_END), SAME_IDENTITY];
  const named = query.path.flatMap((step) => (step.kind === 'hop' ? (step.types ?? []).map((t) => t.name) : []));
  const others = [...new Set(named.filter((name) => !known.includes(name)))];
  if (others.length === 0) return known;
  return [...known, ...(await relationshipTypesPresent(app.sql, tenantId, others))];
}
