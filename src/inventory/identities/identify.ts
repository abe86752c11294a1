import type { AppContext } from '../../context.js';
import type { Principal } from '../../platform/auth/principal.js';
import { facetsOf } from './facets.js';
import { partition, ruleValues } from './partition.js';
import { observationsMatching } from './read-store.js';
import { assignIds } from './resolve.js';
import { liveDecisions, tenantRules } from './resolve-store.js';
import { rulesInForce } from './rules.js';
import type { IdentifyBody } from './schema.js';

/** The candidate's id in the partition: no CI has it. */
const CANDIDATE = '00000000-0000-0000-0000-000000000000';

/**
 * A dry run of identification: what an observation with this type and data would be linked to,
 * by which rules and values, and which conflicts it would raise; nothing is written. Only the
 * observations the principal may see take part, so the answer tells it nothing of the others.
 */
export async function identify(app: AppContext, principal: Principal, body: IdentifyBody) {
  const facets = facetsOf({
    ci_id: CANDIDATE,
    tenant_id: principal.tenantId,
    source_id: '0',
    scope_id: null,
    ci_type: body.ci_type,
    name: body.name,
    status: 'active',
    updated_at: app.now(),
    raw_data: body.raw_data,
    type_data: body.type_data,
  });
  // facetsOf lists the host first
  const facet = body.kind ? facets.find((f) => f.kind === body.kind) : facets[0];
  if (!facet)
    return {
      kind: null,
      keys: {},
      identity_id: null,
      matches: [],
      conflicts: [],
      explanation: `A ${body.ci_type} with this data carries no identifying value${body.kind ? ` of a ${body.kind}` : ''} (machine id, product UUID, host name, address): it would link no identity.`,
    };
  const rules = rulesInForce(await tenantRules(app.sql, principal.tenantId))[facet.kind]!;
  const keys = facet.keys as Record<string, string[]>;
  const others = await observationsMatching(app.sql, principal, facet.kind, keys);
  const decisions = (
    await liveDecisions(
      app.sql,
      principal.tenantId,
      facet.kind,
      others.map((o) => o.ci_id),
    )
  )
    .filter((d) => d.action !== 'pin')
    .map((d) => ({ action: d.action as 'merge' | 'keep_apart', ciIds: d.ci_ids }));
  const { groups, conflicts } = partition(
    [{ ciId: CANDIDATE, keys: facet.keys }, ...others.map((o) => ({ ciId: o.ci_id, keys: o.keys }))],
    rules.identification,
    decisions,
  );
  const own = groups.find((g) => g.includes(CANDIDATE))!;
  const links = others.map((o) => ({ ci_id: o.ci_id, identity_id: o.identity_id, created_at: new Date(o.created_at) }));
  const assigned = assignIds(groups, links);
  const joined = own.length > 1 ? assigned[groups.indexOf(own)]! : null;
  const matches = others
    .filter((o) => own.includes(o.ci_id))
    .flatMap((o) => {
      const rule = rules.identification.find((r) => {
        const mine = new Set(ruleValues(r, facet.keys));
        return ruleValues(r, o.keys).some((v) => mine.has(v));
      });
      if (!rule) return [];
      const mine = new Set(ruleValues(rule, facet.keys));
      return [{ ci_id: o.ci_id, rule: rule.name, values: ruleValues(rule, o.keys).filter((v) => mine.has(v)) }];
    });
  const raised = conflicts
    .filter((c) => c.groups.some((g) => g.includes(CANDIDATE)))
    .map((c) => ({ rule: c.rule, values: c.values }));
  const explanation = joined
    ? `It would link identity ${joined}: ${matches.map((m) => `${m.rule} (${m.values.join(', ')})`).join('; ')}.`
    : raised.length > 0
      ? `It would become an identity of its own and raise ${raised.length} conflict(s) for review: a rule matches identities that stronger evidence keeps apart.`
      : 'It would become an identity of its own: no observation you may see shares an identifying value with it.';
  return { kind: facet.kind, keys, identity_id: joined, matches, conflicts: raised, explanation };
}
