import { Type, type Static } from '@sinclair/typebox';
import { ACTIONS, RESOURCES, type DataScope, type Permission } from '../auth/principal.js';
import { validationFailed } from '../http/errors.js';
import { bigintId, Limit, Nullable, Offset, Timestamp, Uuid } from '../http/schemas.js';

export const PERMISSIONS = RESOURCES.flatMap((r) => ACTIONS.map((a) => `${r}:${a}` as Permission));

export const PermissionName = Type.Union(
  PERMISSIONS.map((p) => Type.Literal(p)),
  { description: '`resource:action`.' },
);

export const ScopeBody = Type.Object(
  {
    source_id: Nullable(Type.String({ pattern: '^[0-9]+$', description: 'A source id; null (with a null scope_id) is all data.' })),
    scope_id: Nullable(Type.String({ minLength: 1, maxLength: 255, description: 'One instance of the source; null is every instance.' })),
  },
  { additionalProperties: false },
);
export type ScopeBody = Static<typeof ScopeBody>;

export const ScopeView = Type.Object({ source_id: Nullable(Type.String()), scope_id: Nullable(Type.String()) });

export const Rights = Type.Object({
  permissions: Type.Array(Type.String()),
  scopes: Type.Array(ScopeView),
});

export const PermissionsBody = Type.Object({ permissions: Type.Array(PermissionName, { maxItems: PERMISSIONS.length, uniqueItems: true }) }, { additionalProperties: false });
export const ScopesBody = Type.Object({ scopes: Type.Array(ScopeBody, { maxItems: 1000 }) }, { additionalProperties: false });

export const User = Type.Object({
  id: Uuid(),
  name: Type.String(),
  email: Nullable(Type.String()),
  sso: Type.Boolean({ description: 'Whether the user signs in through single sign-on (else it only holds tokens).' }),
  superadmin: Type.Boolean(),
  active: Type.Boolean(),
  created_at: Timestamp(),
  deactivated_at: Nullable(Timestamp()),
  last_login_at: Nullable(Timestamp()),
});

export const UserDetail = Type.Composite([
  User,
  Type.Object({
    direct: Rights,
    effective: Type.Object({ permissions: Type.Array(Type.String()), scopes: Type.Union([Type.Literal('all'), Type.Array(ScopeView)]) }),
    teams: Type.Array(Type.Object({ id: Uuid(), name: Type.String() })),
  }),
]);

export const UserList = Type.Object({
  items: Type.Array(User),
  total: Type.Integer(),
  offset: Type.Integer(),
  limit: Type.Integer(),
  has_more: Type.Boolean(),
});

export const UserListQuery = Type.Object({
  email: Type.Optional(Type.String({ maxLength: 320 })),
  active: Type.Optional(Type.Boolean()),
  team_id: Type.Optional(Uuid('Only members of this team.')),
  limit: Limit(50, 500),
  offset: Offset,
});

export const NewUser = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    email: Type.Optional(Nullable(Type.String({ format: 'email', maxLength: 320 }))),
  },
  { additionalProperties: false },
);

export const UserParams = Type.Object({ user_id: Uuid('The user identifier') });

export const scopeView = (scope: DataScope) => ({ source_id: scope.sourceId, scope_id: scope.scopeId });

/** Scopes as the API takes them, checked: a scope of one instance names its source. */
export function readScopes(scopes: readonly ScopeBody[]): DataScope[] {
  return scopes.map((scope, index) => {
    if (scope.source_id === null && scope.scope_id !== null) {
      throw validationFailed([{ field: `scopes/${index}/source_id`, location: 'body', message: 'a scope_id needs its source_id' }]);
    }
    const sourceId = scope.source_id === null ? null : bigintId(scope.source_id);
    if (sourceId === undefined) throw validationFailed([{ field: `scopes/${index}/source_id`, location: 'body', message: 'no such source' }]);
    return { sourceId, scopeId: scope.scope_id };
  });
}
