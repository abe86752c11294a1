import { Type } from '@sinclair/typebox';
import { Rights, ScopeView } from '../grants/schema.js';
import { HumanName, Limit, Nullable, Offset, Timestamp, Uuid } from '../../platform/http/schemas.js';

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
    effective: Type.Object({
      permissions: Type.Array(Type.String()),
      scopes: Type.Union([Type.Literal('all'), Type.Array(ScopeView)]),
    }),
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
    name: HumanName(),
    email: Type.Optional(Nullable(Type.String({ format: 'email', maxLength: 320 }))),
  },
  { additionalProperties: false },
);

export const UserParams = Type.Object({ user_id: Uuid('The user identifier') });
