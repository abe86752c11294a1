import { defineRoute, type AnyRoute } from '../../context.js';
import { conflictResponse } from '../../platform/http/schemas.js';
import { ApplyBody, Rule, RuleBody, RuleList, RuleParams, Run, RunParams, Settings } from './schema.js';
import {
  applyRules,
  changeRule,
  changeSettings,
  createRule,
  listRules,
  removeRule,
  replaceChangeSettings,
  ruleOf,
  runOf,
} from './service.js';

const tags = ['Change rules'];
const read = { resource: 'changes', action: 'read' } as const;
const write = { resource: 'changes', action: 'write' } as const;
const SCOPED = 'Only a caller that sees all the tenant’s data may (403 `scoped`): it shapes everyone’s history.';
const APPLIES =
  'Rules apply in `position` order when a record is written: the first matching ignore hides it, the last matching ' +
  'classification of kind and of severity wins, any matching roll-up rolls it up; matches see the shipped verdict ' +
  '(docs/readable-changes.md). A rule changes what is written from then on; `POST /change-rules/apply` takes the rules ' +
  'back over a window of history.';

const list = defineRoute({
  method: 'GET',
  path: '/api/v1/change-rules',
  operationId: 'listChangeRules',
  summary: 'Change rules',
  description: `The tenant’s change rules, in the order they apply. ${APPLIES}`,
  tags,
  access: read,
  responses: { 200: { description: 'The rules.', schema: RuleList } },
  async handler({ app, principal }) {
    return listRules(app, principal);
  },
});

const one = defineRoute({
  method: 'GET',
  path: '/api/v1/change-rules/{rule_id}',
  operationId: 'getChangeRule',
  summary: 'A change rule',
  tags,
  access: read,
  params: RuleParams,
  responses: { 200: { description: 'The rule.', schema: Rule } },
  async handler({ app, principal, params }) {
    return ruleOf(app, principal, params.rule_id);
  },
});

const create = defineRoute({
  method: 'POST',
  path: '/api/v1/change-rules',
  operationId: 'createChangeRule',
  summary: 'Add a change rule',
  description: `${APPLIES} 422 \`INVALID_QUERY\` names the position of a bad match. ${SCOPED} Audited.`,
  tags,
  access: write,
  body: RuleBody,
  responses: { 201: { description: 'The rule.', schema: Rule }, ...conflictResponse('A rule of this name exists') },
  async handler({ ctx, app, principal, body }) {
    const rule = await createRule(app, ctx, principal, body);
    ctx.status = 201;
    return rule;
  },
});

const update = defineRoute({
  method: 'PUT',
  path: '/api/v1/change-rules/{rule_id}',
  operationId: 'replaceChangeRule',
  summary: 'Rewrite a change rule',
  description: `${APPLIES} ${SCOPED} Audited.`,
  tags,
  access: write,
  params: RuleParams,
  body: RuleBody,
  responses: { 200: { description: 'The rule.', schema: Rule }, ...conflictResponse('Another rule has this name') },
  async handler({ ctx, app, principal, params, body }) {
    return changeRule(app, ctx, principal, params.rule_id, body);
  },
});

const remove = defineRoute({
  method: 'DELETE',
  path: '/api/v1/change-rules/{rule_id}',
  operationId: 'deleteChangeRule',
  summary: 'Delete a change rule',
  description: `Records it shaped keep their values until the rules are applied again to their window. ${SCOPED} Audited.`,
  tags,
  access: write,
  params: RuleParams,
  responses: { 204: { description: 'Deleted.' } },
  async handler({ ctx, app, principal, params }) {
    await removeRule(app, ctx, principal, params.rule_id);
    ctx.status = 204;
    return undefined;
  },
});

const apply = defineRoute({
  method: 'POST',
  path: '/api/v1/change-rules/apply',
  operationId: 'applyChangeRules',
  summary: 'Apply the rules to a window of history',
  description:
    'Classifies the records of the window again, by the shipped rules and the tenant’s rules as they are now, in ' +
    'batches of 2 000 records each in a transaction of its own, so writers never wait for it; records whose values move ' +
    'are indexed again. Answers at once with the application to follow. ' +
    `${SCOPED} Audited.`,
  tags,
  access: write,
  body: ApplyBody,
  responses: { 202: { description: 'The application, under way.', schema: Run } },
  async handler({ ctx, app, principal, body }) {
    const run = await applyRules(app, ctx, principal, body);
    ctx.status = 202;
    return run;
  },
});

const application = defineRoute({
  method: 'GET',
  path: '/api/v1/change-rules/applications/{run_id}',
  operationId: 'getChangeRuleApplication',
  summary: 'An application of the rules',
  tags,
  access: read,
  params: RunParams,
  responses: { 200: { description: 'How far it got.', schema: Run } },
  async handler({ app, principal, params }) {
    return runOf(app, principal, params.run_id);
  },
});

const getSettings = defineRoute({
  method: 'GET',
  path: '/api/v1/change-settings',
  operationId: 'getChangeSettings',
  summary: 'How the history folds',
  tags,
  access: read,
  responses: { 200: { description: 'The settings.', schema: Settings } },
  async handler({ app, principal }) {
    return changeSettings(app, principal);
  },
});

const putSettings = defineRoute({
  method: 'PUT',
  path: '/api/v1/change-settings',
  operationId: 'replaceChangeSettings',
  summary: 'Set the fold window',
  description: `Folds opened from then on use it; folds already made stay as they are. ${SCOPED} Audited.`,
  tags,
  access: write,
  body: Settings,
  responses: { 200: { description: 'The settings.', schema: Settings } },
  async handler({ ctx, app, principal, body }) {
    return replaceChangeSettings(app, ctx, principal, body);
  },
});

export const changeRuleRoutes: AnyRoute[] = [
  list,
  create,
  apply,
  application,
  one,
  update,
  remove,
  getSettings,
  putSettings,
];
