import { presentChange } from '../../history/changes/presenter.js';
import { defineRoute, type AnyRoute, readsThePast } from '../../context.js';
import { Impact, ImpactParams, ImpactQuery } from './schema.js';
import { impactOf } from './service.js';

const impact = defineRoute({
  method: 'GET',
  path: '/api/v1/configuration-items/{ci_id}/impact',
  operationId: 'impactOfConfigurationItem',
  analystRead: readsThePast,
  summary: 'What depends on a CI, and what changed in what it depends on',
  description:
    'The on-call summary of a CI: the CIs that depend on it (`downstream`, see the dependency graph) counted at each depth ' +
    'by type and status, and the latest changes of the CI and of the CIs it depends on (`upstream`), newest first, each ' +
    "with the depth of its CI. Inactive and archived CIs are counted and walked through; CIs outside the key's data scopes " +
    'are neither (`hidden` counts the relationships to them). Needs `relationships:read` and `changes:read`; an unknown ' +
    "CI, or one outside the key's data scopes, is a 404.",
  tags: ['Relationships'],
  access: { resource: 'relationships', action: 'read' },
  params: ImpactParams,
  query: ImpactQuery,
  responses: { 200: { description: 'The summary.', schema: Impact } },
  async handler({ app, principal, params, query }) {
    const { upstream, ...rest } = await impactOf(app, principal, params.ci_id, query);
    const { latest, ...walk } = upstream;
    return {
      ...rest,
      upstream: { ...walk, latest_changes: latest.map(({ row, depth }) => ({ ...presentChange(row), depth })) },
    };
  },
});

export const impactRoutes: AnyRoute[] = [impact];
