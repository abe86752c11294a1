import { Type, type Static } from '@sinclair/typebox';
import { ACTIONS, RESOURCES, type DataScope, type Permission } from '../../platform/auth/principal.js';
import { validationFailed } from '../../platform/errors.js';
import { bigintId, Nullable, ScopeId } from '../../platform/http/schemas.js';

export const PERMISSIONS = RESOURCES.flatMap((r) => ACTIONS.map((a) => `${r}:${a}` as Permission));

export const PermissionName = Type.Union(
  PERMISSIONS.map((p) => Type.Literal(p)),
  { description: '`resource:action`.' },
);

export const ScopeBody = Type.Object(
  {
    source_id: Nullable(
      Type.String({ pattern: '^[0-9]+$', description: 'A source id; null (with a null scope_id) is all data.' }),
    ),
    scope_id: Nullable(ScopeId(255, 'One instance of the source; null is every instance.')),
  },
  { additionalProperties: false },
);
export type ScopeBody = Static<typeof ScopeBody>;

export const ScopeView = Type.Object({ source_id: Nullable(Type.String()), scope_id: Nullable(Type.String()) });

export const Rights = Type.Object({
  permissions: Type.Array(Type.String()),
  scopes: Type.Array(ScopeView),
});

export const PermissionsBody = Type.Object(
  { permissions: Type.Array(PermissionName, { maxItems: PERMISSIONS.length, uniqueItems: true }) },
  { additionalProperties: false },
);
export const ScopesBody = Type.Object(
  { scopes: Type.Array(ScopeBody, { maxItems: 1000 }) },
  { additionalProperties: false },
);

export const scopeView = (scope: DataScope) => ({ source_id: scope.sourceId, scope_id: scope.scopeId });

/**
 * Scopes as the API takes them, checked: a scope of one instance names its source. A scope given
 * twice (`"7"` and `"07"` are one source) is taken once, as a set of rights is.
 */
export function readScopes(scopes: readonly ScopeBody[]): DataScope[] {
  const read = new Map<string, DataScope>();
  scopes.forEach((scope, index) => {
    if (scope.source_id === null && scope.scope_id !== null) {
      throw validationFailed([
        { field: `scopes/${index}/source_id`, location: 'body', message: 'a scope_id needs its source_id' },
      ]);
    }
    const sourceId = scope.source_id === null ? null : bigintId(scope.source_id);
    if (sourceId === undefined)
      throw validationFailed([{ field: `scopes/${index}/source_id`, location: 'body', message: 'no such source' }]);
    const key = JSON.stringify([sourceId, scope.scope_id]);
    if (!read.has(key)) read.set(key, { sourceId, scopeId: scope.scope_id });
  });
  return [...read.values()];
}
