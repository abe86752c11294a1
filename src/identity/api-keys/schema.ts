import { Type } from '@sinclair/typebox';
import { PermissionName, ScopeBody, ScopeView } from '../grants/schema.js';
import { HumanName, Nullable, Timestamp, Uuid } from '../../platform/http/schemas.js';

export const MAX_LIFETIME_MS = 10 * 366 * 24 * 3600 * 1000;

export const ApiKey = Type.Object({
  id: Uuid(),
  name: Type.String(),
  tier: Type.Union([Type.Literal('adm'), Type.Literal('svc'), Type.Literal('ro')]),
  hint: Type.String({ description: 'The last characters of the key.' }),
  permissions: Type.Array(Type.String(), {
    description: 'svc keys: what they may do; adm and ro keys have fixed access.',
  }),
  scopes: Type.Union([Type.Literal('all'), Type.Array(ScopeView)], {
    description: 'svc and scoped ro keys: the data they may see; `all` for adm keys and unscoped ro keys.',
  }),
  created_at: Timestamp(),
  expires_at: Nullable(Timestamp()),
  revoked_at: Nullable(Timestamp()),
  last_used_at: Nullable(Timestamp()),
});
export const KeyParams = Type.Object({ key_id: Uuid('The API key identifier') });

export const NewApiKey = Type.Object(
  {
    name: HumanName(),
    tier: Type.Union([Type.Literal('adm'), Type.Literal('svc'), Type.Literal('ro')]),
    permissions: Type.Optional(Type.Array(PermissionName, { uniqueItems: true })),
    scopes: Type.Optional(Type.Array(ScopeBody, { maxItems: 1000 })),
    expires_at: Type.Optional(Nullable(Timestamp())),
  },
  { additionalProperties: false },
);
