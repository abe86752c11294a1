import type { Expr, Field } from '../../platform/query-language/ast.js';
import type { RequiredRelationship, QualitySettings } from './settings.js';

/** A path a type's CIs should hold, as written and as the match `PATH exists`. */
export interface PlannedPath {
  path: string;
  exists: Expr;
}

export interface PlannedRelationship {
  rule: RequiredRelationship;
  when: Expr | undefined;
}

export interface PlannedRule {
  id: string;
  appliesTo: Expr;
  requires: Expr;
}

/**
 * What the checks of one tenant look for, parsed: its settings' paths and conditions as matches
 * of the query language, and its rules. Built by the service, turned into SQL by the check store.
 */
export interface CheckPlan {
  tenantId: string;
  settings: QualitySettings;
  owner: Field;
  completeness: Map<string, { required: PlannedPath[]; recommended: PlannedPath[] }>;
  relationships: Map<string, PlannedRelationship[]>;
  rules: PlannedRule[];
}

/** The field of a match `FIELD exists`. */
export function fieldOf(e: Expr): Field {
  if (e.kind !== 'exists') throw new Error('not a path');
  return e.field;
}
