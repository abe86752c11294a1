import { Type } from '@sinclair/typebox';
import { PermissionName, ScopeBody, ScopeView } from '../grants/schema.js';
import { HumanName, Nullable, Timestamp, Uuid } from '../../platform/http/schemas.js';
import { UserParams } from '../users/schema.js';

export const MAX_LIVE_TOKENS = 10;
export const MAX_LIFETIME_MS = 366 * 24 * 3600 * 1000;

export const Token = Type.Object({
  id: Uuid(),
  name: Type.String(),
  hint: Type.String({ description: 'The last characters of the token, to tell tokens apart.' }),
  created_at: Timestamp(),
  expires_at: Timestamp(),
  last_used_at: Nullable(Timestamp('Updated at most once a minute.')),
  expired: Type.Boolean(),
  permissions: Nullable(
    Type.Array(Type.String(), {
      description: "The subset of its user's permissions a narrowed token holds; null holds them all.",
    }),
  ),
  scopes: Nullable(
    Type.Array(ScopeView, {
      description: "The subset of its user's data scopes a narrowed token holds; null holds them all.",
    }),
  ),
});
export const CreatedToken = Type.Composite([
  Token,
  Type.Object({ token: Type.String({ description: 'The secret, shown this once. Send it as `X-API-Key`.' }) }),
]);
export const NewToken = Type.Object(
  {
    name: HumanName(),
    expires_at: Timestamp('Required; in the future and at most one year ahead.'),
    permissions: Type.Optional(
      Type.Array(PermissionName, { uniqueItems: true, description: 'Narrow the token to these of your permissions.' }),
    ),
    scopes: Type.Optional(
      Type.Array(ScopeBody, { maxItems: 1000, description: 'Narrow the token to these of your data scopes.' }),
    ),
  },
  { additionalProperties: false },
);
export const TokenParams = Type.Object({ token_id: Uuid('The token identifier') });
export const UserTokenParams = Type.Composite([UserParams, TokenParams]);
