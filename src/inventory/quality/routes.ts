import { Type } from '@sinclair/typebox';
import { defineRoute, type AnyRoute } from '../../context.js';
import { conflictResponse } from '../../platform/http/schemas.js';
import { changeRule, createRule, listRules, previewRule, removeRule, ruleOf } from './rules-service.js';
import {
  CiParams,
  CiQuality,
  ItemsPage,
  ItemsParams,
  ItemsQuery,
  Preview,
  PreviewBody,
  QualityOverview,
  QualityQuery,
  Rule,
  RuleBody,
  RuleParams,
  SettingsBody,
  SettingsView,
} from './schema.js';
import { failingItems, qualityOfCi, qualityOverview, qualitySettings, replaceSettings } from './service.js';
import type { QualitySettings } from './settings.js';

const tags = ['Data quality'];
const read = { resource: 'configuration_items', action: 'read' } as const;
const write = { resource: 'configuration_items', action: 'write' } as const;
const SCOPED = 'Only a caller that sees all the tenant’s data may (403 `scoped`): it shapes everyone’s scores.';

const overview = defineRoute({
  method: 'GET',
  path: '/api/v1/quality',
  operationId: 'getQuality',
  summary: 'Data-quality scores',
  description:
    'How far the inventory can be trusted: per measure (`freshness`, `staleness`, `orphans`, `duplicates`, `completeness`, ' +
    '`rules`; docs/quality.md defines each) the CIs judged, failing and the score (0-100), an overall weighted score, the ' +
    'same rolled up by type, source, instance and owner (worst first), each rule’s pass rate, the sources’ schedules and the daily ' +
    'trend of 90 days. Counts only what the caller may see. Read from counters the write path and the sweeps keep, so it ' +
    'costs the same whatever the inventory’s size; `pending` above 0 says the checks are catching up.',
  tags,
  access: read,
  query: QualityQuery,
  responses: { 200: { description: 'The scores.', schema: QualityOverview } },
  async handler({ app, principal, query }) {
    return qualityOverview(app, principal, query);
  },
});

const items = defineRoute({
  method: 'GET',
  path: '/api/v1/quality/{measure}/items',
  operationId: 'listQualityFailures',
  summary: 'CIs failing a measure',
  description:
    'The active CIs the caller may see that fail the measure, each with the reason, by `ci_id`, walked by `cursor`; ' +
    '`query` is the query-language query finding them where the language can say it. For `rules`, one entry per failed ' +
    'rule and CI (`rule_id` narrows to one rule).',
  tags,
  access: read,
  params: ItemsParams,
  query: ItemsQuery,
  responses: { 200: { description: 'A page of failing CIs.', schema: ItemsPage } },
  async handler({ app, principal, params, query }) {
    return failingItems(app, principal, params.measure, query);
  },
});

// `/quality/rules/items` would be read as the rule `items` (literal segments match first): the
// rules measure's failures get a route of their own, the same answer
const ruleItems = defineRoute({
  method: 'GET',
  path: '/api/v1/quality/rules/items',
  operationId: 'listQualityRuleFailures',
  summary: 'CIs failing rules',
  description: 'The `rules` measure of `GET /api/v1/quality/{measure}/items`: one entry per failed rule and CI.',
  tags,
  access: read,
  query: ItemsQuery,
  responses: { 200: { description: 'A page of failing CIs.', schema: ItemsPage } },
  async handler({ app, principal, query }) {
    return failingItems(app, principal, 'rules', query);
  },
});

const ofCi = defineRoute({
  method: 'GET',
  path: '/api/v1/quality/configuration-items/{ci_id}',
  operationId: 'getCiQuality',
  summary: 'What is wrong with one CI',
  description:
    'The quality verdicts of one active CI: missing paths, completeness, why it is an orphan or a duplicate, since when ' +
    'it is stale, whether its source’s last list saw it, and each rule that applies to it; `checked: false` for a CI ' +
    'that is not active or not checked yet. 404 when the caller cannot see it.',
  tags,
  access: read,
  params: CiParams,
  responses: { 200: { description: 'The verdicts.', schema: CiQuality } },
  async handler({ app, principal, params }) {
    return qualityOfCi(app, principal, params.ci_id);
  },
});

const getSettings = defineRoute({
  method: 'GET',
  path: '/api/v1/quality/settings',
  operationId: 'getQualitySettings',
  summary: 'Data-quality settings',
  description: 'The tenant’s settings in effect: its own over the shipped defaults.',
  tags,
  access: read,
  responses: { 200: { description: 'The settings.', schema: SettingsView } },
  async handler({ app, principal }) {
    return qualitySettings(app, principal);
  },
});

const putSettings = defineRoute({
  method: 'PUT',
  path: '/api/v1/quality/settings',
  operationId: 'replaceQualitySettings',
  summary: 'Set the data-quality settings',
  description:
    'Each top-level key given replaces the shipped default’s; keys left out keep it. Paths and conditions are checked ' +
    'as the query language’s (422 `INVALID_QUERY` with `details.setting`); every CI is checked again under the new ' +
    `settings in the background (\`pending\`). ${SCOPED} Audited (\`quality.settings_changed\`).`,
  tags,
  access: write,
  body: SettingsBody,
  responses: { 200: { description: 'The settings now in effect.', schema: SettingsView } },
  async handler({ ctx, app, principal, body }) {
    return replaceSettings(app, ctx, principal, body as Partial<QualitySettings>);
  },
});

const rules = defineRoute({
  method: 'GET',
  path: '/api/v1/quality/rules',
  operationId: 'listQualityRules',
  summary: 'List data-quality rules',
  description: 'The tenant’s rules, oldest first, each with its pass rate among the CIs the caller may see.',
  tags,
  access: read,
  responses: { 200: { description: 'The rules.', schema: Type.Object({ items: Type.Array(Rule) }) } },
  async handler({ app, principal }) {
    return listRules(app, principal);
  },
});

const ruleRead = defineRoute({
  method: 'GET',
  path: '/api/v1/quality/rules/{rule_id}',
  operationId: 'getQualityRule',
  summary: 'One data-quality rule',
  tags,
  access: read,
  params: RuleParams,
  responses: { 200: { description: 'The rule.', schema: Rule } },
  async handler({ app, principal, params }) {
    return ruleOf(app, principal, params.rule_id);
  },
});

const RULE_TEXT =
  '`applies_to` and `requires` are matches of the query language (no hops, pipes, history, `last_seen` or times relative ' +
  'to now: a verdict is kept per CI and moves when the CI is written); 422 `INVALID_QUERY` names the position.';

const ruleCreate = defineRoute({
  method: 'POST',
  path: '/api/v1/quality/rules',
  operationId: 'createQualityRule',
  summary: 'Add a data-quality rule',
  description: `${RULE_TEXT} Checked against the stored CIs in the background (\`checking\`). ${SCOPED} Audited.`,
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

const ruleUpdate = defineRoute({
  method: 'PUT',
  path: '/api/v1/quality/rules/{rule_id}',
  operationId: 'replaceQualityRule',
  summary: 'Rewrite a data-quality rule',
  description: `${RULE_TEXT} Its verdicts are checked again from the start. ${SCOPED} Audited.`,
  tags,
  access: write,
  params: RuleParams,
  body: RuleBody,
  responses: { 200: { description: 'The rule.', schema: Rule }, ...conflictResponse('Another rule has this name') },
  async handler({ ctx, app, principal, params, body }) {
    return changeRule(app, ctx, principal, params.rule_id, body);
  },
});

const ruleDelete = defineRoute({
  method: 'DELETE',
  path: '/api/v1/quality/rules/{rule_id}',
  operationId: 'deleteQualityRule',
  summary: 'Delete a data-quality rule',
  description: `Its verdicts and counts go with it. ${SCOPED} Audited.`,
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

const rulePreview = defineRoute({
  method: 'POST',
  path: '/api/v1/quality/rules/preview',
  operationId: 'previewQualityRule',
  summary: 'Try a data-quality rule',
  description:
    `What a rule would say now among the active CIs the caller may see, without saving it: how many it applies to, ` +
    `how many pass, and some that fail. ${RULE_TEXT}`,
  tags,
  access: read,
  body: PreviewBody,
  responses: { 200: { description: 'The rule’s verdict now.', schema: Preview } },
  async handler({ app, principal, body }) {
    return previewRule(app, principal, body);
  },
});

export const qualityRoutes: AnyRoute[] = [
  overview,
  getSettings,
  putSettings,
  rules,
  rulePreview,
  ruleItems,
  ruleRead,
  ruleCreate,
  ruleUpdate,
  ruleDelete,
  ofCi,
  items,
];
