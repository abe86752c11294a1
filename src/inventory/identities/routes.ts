import { defineRoute, readsThePast, type AnyRoute } from '../../context.js';
import { ErrorEnvelope } from '../../platform/http/schemas.js';
import { identify } from './identify.js';
import { decide, identityRules, listConflicts, listDecisions, replaceRules, undo } from './review-service.js';
import {
  ConflictList,
  ConflictListQuery,
  Decision,
  DecisionList,
  DecisionListQuery,
  DecisionParams,
  IdentifyBody,
  Identification,
  IdentityDetail,
  IdentityDetailQuery,
  IdentityGraph,
  IdentityList,
  IdentityListQuery,
  IdentityParams,
  IdentityRulesBody,
  IdentityRulesView,
  NewDecision,
} from './schema.js';
import { identityDetail, identityGraph, listIdentities } from './service.js';

const tags = ['Identities'];
const read = { resource: 'configuration_items', action: 'read' } as const;
const write = { resource: 'configuration_items', action: 'write' } as const;

const list = defineRoute({
  method: 'GET',
  path: '/api/v1/identities',
  operationId: 'listIdentities',
  summary: 'List identities',
  description:
    'The real things (hosts) that one or more observations (CIs of any source) describe, linked by the identification ' +
    'rules. An identity is listed when the caller may see one of its observations, with the count of those it may see. ' +
    'Walked by `cursor`; no total is counted.',
  tags,
  access: read,
  query: IdentityListQuery,
  responses: { 200: { description: 'A page of identities.', schema: IdentityList } },
  handler: ({ app, principal, query }) => listIdentities(app, principal, query),
});

const conflicts = defineRoute({
  method: 'GET',
  path: '/api/v1/identities/conflicts',
  operationId: 'listIdentityConflicts',
  summary: 'The review queue: conflicts and suspected duplicates',
  description:
    'Each item is a rule that matched identities which stronger evidence keeps apart (different machine ids, a person’s ' +
    'decision), so nothing was merged: explained, with the groups it would have joined. Settled by a decision ' +
    '(`POST /api/v1/identities/decisions` with `conflict_id`); `gone` when the data changed so that it no longer arises. ' +
    'Listed only to a caller that may see every observation it concerns; oldest first.',
  tags,
  access: read,
  query: ConflictListQuery,
  responses: { 200: { description: 'A page of conflicts.', schema: ConflictList } },
  handler: ({ app, principal, query }) => listConflicts(app, principal, query),
});

const decisions = defineRoute({
  method: 'GET',
  path: '/api/v1/identities/decisions',
  operationId: 'listIdentityDecisions',
  summary: 'List people’s identity decisions',
  description:
    'Newest first; undone ones with `include_undone`. Listed to a caller that sees every CI a decision names.',
  tags,
  access: read,
  query: DecisionListQuery,
  responses: { 200: { description: 'A page of decisions.', schema: DecisionList } },
  handler: ({ app, principal, query }) => listDecisions(app, principal, query),
});

const decideRoute = defineRoute({
  method: 'POST',
  path: '/api/v1/identities/decisions',
  operationId: 'decideIdentity',
  summary: 'Merge, keep apart, or pin a field’s source',
  description:
    '`merge` joins the observations into one identity whatever the rules say; `keep_apart` keeps them in different ' +
    'identities; `pin` makes an identity’s `field` show `source_id`’s value while that source reports one. Every CI ' +
    'named must be visible to the caller (404) and inside its data scopes for writing. With `conflict_id` the conflict ' +
    'is settled. The identities concerned are resolved again before the answer; audited (`identity.decided`) and ' +
    'reversible (`DELETE /api/v1/identities/decisions/{decision_id}`).',
  tags,
  access: write,
  body: NewDecision,
  responses: {
    201: { description: 'The decision.', schema: Decision },
    404: { description: 'A CI or the conflict named is not one the caller may see.', schema: ErrorEnvelope },
  },
  async handler({ ctx, app, principal, body }) {
    const made = await decide(app, ctx, principal, body);
    ctx.status = 201;
    return made;
  },
});

const undoRoute = defineRoute({
  method: 'DELETE',
  path: '/api/v1/identities/decisions/{decision_id}',
  operationId: 'undoIdentityDecision',
  summary: 'Undo a decision',
  description:
    'The identities are resolved again as if it had never been made (a conflict it settled is raised again when it ' +
    'still arises). Kept as undone; audited (`identity.decision_undone`). Undoing an undone decision changes nothing.',
  tags,
  access: write,
  params: DecisionParams,
  responses: { 200: { description: 'The decision, undone.', schema: Decision } },
  handler: ({ ctx, app, principal, params }) => undo(app, ctx, principal, params.decision_id),
});

const identifyRoute = defineRoute({
  method: 'POST',
  path: '/api/v1/identities/identify',
  operationId: 'identifyObservation',
  summary: 'Dry run: what would an observation be linked to, and why',
  description:
    'Given a `ci_type` and the data a CI of it would carry, the identity it would link (or none), the rule and values ' +
    'of each match and the conflicts it would raise. Nothing is written; only observations the caller may see take part.',
  tags,
  access: read,
  body: IdentifyBody,
  responses: { 200: { description: 'The identification.', schema: Identification } },
  handler: ({ app, principal, body }) => identify(app, principal, body),
});

const rules = defineRoute({
  method: 'GET',
  path: '/api/v1/identities/rules',
  operationId: 'getIdentityRules',
  summary: 'The identification and precedence rules in force',
  description: 'The tenant’s own, or the shipped ones (`shipped: true`); docs/identities.md explains each.',
  tags,
  access: read,
  responses: { 200: { description: 'The rules.', schema: IdentityRulesView } },
  handler: ({ app, principal }) => identityRules(app, principal),
});

const replace = defineRoute({
  method: 'PUT',
  path: '/api/v1/identities/rules',
  operationId: 'putIdentityRules',
  summary: 'Replace the identification and precedence rules',
  description:
    'Per kind: identification rules strongest first (each a set of keys; `exclusive` when one real thing has one value), ' +
    'precedence per field (selectors: a CI type, or `source:<id>`), the default precedence, and the staleness margin. ' +
    'The tenant’s host observations are resolved again under them before the answer. Only a caller that sees all the ' +
    'tenant’s data may (403 `scoped`); audited (`identity.rules_changed`).',
  tags,
  access: write,
  body: IdentityRulesBody,
  responses: { 200: { description: 'The rules now in force.', schema: IdentityRulesView } },
  handler: ({ ctx, app, principal, body }) => replaceRules(app, ctx, principal, body),
});

const detail = defineRoute({
  method: 'GET',
  path: '/api/v1/identities/{identity_id}',
  operationId: 'getIdentity',
  analystRead: readsThePast,
  summary: 'One identity: its reconciled record with provenance, observations, relationships and changes',
  description:
    'Each field from the observation the precedence rules prefer, with its source, CI, since when and the competing ' +
    'values of the others. Everything comes from the observations the caller may see, and nothing from the others. With ' +
    '`as_of`, the observations it linked then, as they were stored then.',
  tags,
  access: read,
  params: IdentityParams,
  query: IdentityDetailQuery,
  responses: { 200: { description: 'The identity.', schema: IdentityDetail } },
  handler: ({ app, principal, params, query }) => identityDetail(app, principal, params.identity_id, query.as_of),
});

const graph = defineRoute({
  method: 'GET',
  path: '/api/v1/identities/{identity_id}/graph',
  operationId: 'getIdentityGraph',
  summary: 'The identity, its observations and what they relate to',
  description:
    'Nodes: the identity and the visible CIs; edges: each observation to the identity, and their relationships.',
  tags,
  access: { resource: 'relationships', action: 'read' },
  params: IdentityParams,
  responses: { 200: { description: 'The graph.', schema: IdentityGraph } },
  handler: ({ app, principal, params }) => identityGraph(app, principal, params.identity_id),
});

export const identityRoutes: AnyRoute[] = [
  list,
  conflicts,
  decisions,
  decideRoute,
  undoRoute,
  identifyRoute,
  rules,
  replace,
  detail,
  graph,
];
