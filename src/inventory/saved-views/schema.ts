import { Type, type Static } from '@sinclair/typebox';
import { HumanName, Timestamp, Uuid } from '../../platform/http/schemas.js';

export const VIEWS = ['inventory', 'changes', 'stats', 'query'] as const;
export const MAX_VIEWS_PER_OWNER = 200;

const ViewName = Type.Union(
  VIEWS.map((view) => Type.Literal(view)),
  { description: 'The view of the web interface: `/ui/<view>`.' },
);

export const NewSavedView = Type.Object(
  {
    name: HumanName({ spaces: 'not_blank' }),
    view: ViewName,
    query: Type.String({
      maxLength: 4000,
      pattern: '^[^\\s#?][^\\s#]*$|^$',
      description: "The view's URL query string without the `?` (`status=all&filter=ci_type:eq:k8s.pod`).",
    }),
    shared: Type.Boolean({
      default: false,
      description: 'Listed to everyone of the tenant; otherwise to its owner only.',
    }),
  },
  { additionalProperties: false },
);
export type NewSavedView = Static<typeof NewSavedView>;

export const SavedView = Type.Object({
  id: Uuid(),
  name: Type.String(),
  view: ViewName,
  query: Type.String(),
  shared: Type.Boolean(),
  owner: Type.Object({
    kind: Type.Union([Type.Literal('user'), Type.Literal('api_key')]),
    id: Type.String(),
    name: Type.String(),
  }),
  mine: Type.Boolean({ description: 'Whether the caller owns it (and so may delete it).' }),
  created_at: Timestamp(),
});

export const SavedViewQuery = Type.Object({ view: Type.Optional(ViewName) });
export const SavedViewParams = Type.Object({ view_id: Uuid("The saved view's identifier.") });
